#pragma once
// Loading a user's TorchScript file (`ladder-train --model torchscript:FILE`): torch::jit::load with every failure
// — a missing or unreadable file, a file that is not TorchScript, one written by a newer PyTorch than the
// LibTorch ladder-train was built with — turned into one line that names the file and, where they are known, the
// file's format version and the versions this LibTorch reads. Never throws.
//
// TorchScript files are zip archives with a `version` record (`ARCHIVE/version`, or `ARCHIVE/.data/version`
// since format 6) holding the file format version; a newer PyTorch writes a higher one when the program uses an
// operator whose meaning changed (caffe2/serialize/versions.h). The archive's records are stored uncompressed,
// so the version is read here without a zip library, before LibTorch is asked to load the file.
#include <torch/script.h>

#include <cstdint>
#include <string>

namespace ladder::trainer {

// The LibTorch ladder-train was built with ("1.13.0") and the file format versions it reads.
std::string LibTorchVersion();
int64_t MaxReadableTorchScriptVersion();

// The file format version recorded in the TorchScript archive at `path`; -1 when the file is not a zip archive
// with a stored version record (or cannot be read).
int64_t TorchScriptFileVersion(const std::string& path);

// A LibTorch error in one line: its first, or for an error raised inside the TorchScript interpreter (whose first
// line only says so, then the TorchScript traceback) its last, which says what failed.
std::string OneLineError(const std::string& what);

// Loads `path` onto the CPU. false with *error (one line, prefixed with "--model torchscript:PATH: ") otherwise.
bool LoadTorchScript(const std::string& path, torch::jit::Module* out, std::string* error);

}  // namespace ladder::trainer
