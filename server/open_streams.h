#pragma once
// OpenStreams: the gRPC streams open now (each worker's stream, each Watch), filed under the SHA-256 of the token
// each was opened with, so that a token's end (revoked, expired: AccessControl's subscribers) ends them too,
// finished with UNAUTHENTICATED and the token's refusal.
//
// Thread: the coordinator's loop only (streams are added and removed from handlers posted there; a token's end is
// posted there too), so nothing here locks. A stream is added after its reactor started and removed before it is
// freed; Close runs each stream's closer once and forgets it.
#include <functional>
#include <map>
#include <string>

#include <grpcpp/support/status.h>

namespace ladder::server {

class OpenStreams {
 public:
  using Closer = std::function<void(const grpc::Status&)>;

  // `key` names the stream (its reactor or link); `token_sha256` empty: not filed (no token is asked for).
  void Add(const void* key, const std::string& token_sha256, Closer close);
  void Remove(const void* key);
  // Ends every stream opened with the token: UNAUTHENTICATED with `why`. Returns how many.
  int CloseAll(const std::string& token_sha256, const std::string& why);
  size_t size() const { return streams_.size(); }

 private:
  struct Stream {
    std::string token_sha256;
    Closer close;
  };
  std::map<const void*, Stream> streams_;
  std::multimap<std::string, const void*> by_token_;
};

}  // namespace ladder::server
