#include "server/open_streams.h"

#include <vector>

namespace ladder::server {

void OpenStreams::Add(const void* key, const std::string& token_sha256, Closer close) {
  if (token_sha256.empty()) return;
  Remove(key);
  streams_[key] = Stream{token_sha256, std::move(close)};
  by_token_.emplace(token_sha256, key);
}

void OpenStreams::Remove(const void* key) {
  auto it = streams_.find(key);
  if (it == streams_.end()) return;
  auto [lo, hi] = by_token_.equal_range(it->second.token_sha256);
  for (auto t = lo; t != hi; ++t) {
    if (t->second == key) {
      by_token_.erase(t);
      break;
    }
  }
  streams_.erase(it);
}

int OpenStreams::CloseAll(const std::string& token_sha256, const std::string& why) {
  // Taken out first: a closer may call back into Remove.
  std::vector<Closer> closers;
  auto [lo, hi] = by_token_.equal_range(token_sha256);
  for (auto t = lo; t != hi; ++t) {
    auto it = streams_.find(t->second);
    if (it == streams_.end()) continue;
    closers.push_back(std::move(it->second.close));
    streams_.erase(it);
  }
  by_token_.erase(lo, hi);
  const grpc::Status status(grpc::StatusCode::UNAUTHENTICATED, why);
  for (auto& close : closers) close(status);
  return static_cast<int>(closers.size());
}

}  // namespace ladder::server
