#pragma once
// Helpers for the integration tests that talk to a coordinator.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <optional>

#include "ladder/v1/ladder.grpc.pb.h"
#include "tests/support/process.h"

namespace ladder::testing {

// Follows the Watch stream until the search leaves RUNNING or the deadline passes.
inline std::optional<v1::Search> WaitForSearchEnd(v1::Ladder::Stub& stub, int64_t search_id,
                                                  std::chrono::seconds deadline, const std::string& token = "") {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + deadline);
  if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
  v1::WatchRequest req;
  req.set_search_id(search_id);
  auto reader = stub.Watch(&ctx, req);
  v1::Event ev;
  while (reader->Read(&ev)) {
    if (ev.kind() == v1::Event::SEARCH_UPDATED && ev.search().id() == search_id &&
        ev.search().state() != v1::SEARCH_RUNNING) {
      ctx.TryCancel();
      reader->Finish();
      return ev.search();
    }
  }
  reader->Finish();
  return std::nullopt;
}

}  // namespace ladder::testing
