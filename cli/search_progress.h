#pragma once
// Follows a search through the Watch stream until it ends, printing progress (one line per finished trial,
// with counts, best so far and an ETA; a hero run's band warnings as the coordinator journals them). Returns
// the search's final state, or nullopt when the stream broke (the error is printed and *exit_code set).
#include <atomic>
#include <optional>
#include <string>

#include "cli/client.h"

namespace ladder::cli {

// Lets a signal thread cancel the wait.
struct Interrupt {
  std::atomic<bool> fired{false};
  std::mutex mu;
  grpc::ClientContext* ctx = nullptr;
  std::string note;  // printed on an interrupt instead of "the search keeps running ..." (an in-process coordinator)
  void Fire();
};

std::optional<v1::Search> FollowSearch(Client& client, int64_t search_id, bool quiet, Interrupt* interrupt,
                                       int* exit_code);

}  // namespace ladder::cli
