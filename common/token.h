#pragma once
// The server's access token: 32 random bytes as hex, kept in a file readable only by its owner
// (<db>.token by default). Files are written atomically (temp file, fsync, rename).
#include <optional>
#include <string>
#include <string_view>

namespace ladder {
std::string GenerateToken();
// Reads the token from `path`; nullopt when the file does not exist. Throws std::runtime_error when it exists
// but cannot be read or is empty.
std::optional<std::string> ReadTokenFile(const std::string& path);
// Returns the token in `path`, creating the file (mode 0600) with a new token when absent.
std::string EnsureTokenFile(const std::string& path);
// SHA-256 of `data` as 64 lowercase hex digits (OpenSSL's libcrypto): how the coordinator stores tokens.
std::string Sha256Hex(std::string_view data);
// Writes `content` to `path` atomically with the given mode.
void WriteFileAtomically(const std::string& path, const std::string& content, unsigned mode);
}  // namespace ladder
