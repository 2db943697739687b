#pragma once
// WatchStream: follows the coordinator's Watch stream for `ladder watch`, and stays on it: when the stream breaks
// (a coordinator restart, a network blip) it says so, reconnects every second and resumes the journal after the
// last entry it delivered, so a watcher loses its place neither in the event log nor in the state (the snapshot
// after a reconnect replaces it).
//
// Threads: Run() blocks the calling thread (the TUI runs it on a thread of its own); Stop() may be called from
// any thread and makes Run() return.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "cli/client.h"

namespace ladder::cli {

class WatchStream {
 public:
  struct Callbacks {
    // Each event, in order; return false to stop following.
    std::function<bool(const v1::Event&)> on_event;
    // The stream broke (connected = false, why) or is back (connected = true).
    std::function<void(bool connected, const std::string& why)> on_status;
  };

  WatchStream(const GlobalOptions& g, int64_t search_id, int journal_tail, Callbacks callbacks);

  // Follows until Stop(), until on_event returns false, or until an error no reconnect fixes (no such search,
  // a refused token, or no coordinator at the first attempt). Returns the CLI exit code (kOk when stopped).
  int Run();
  void Stop();

 private:
  Client client_;
  const int64_t search_id_;
  const int journal_tail_;
  Callbacks cb_;
  std::atomic<bool> stopped_{false};
  std::mutex mu_;
  grpc::ClientContext* ctx_ = nullptr;  // the stream in progress (under mu_), for Stop
};

}  // namespace ladder::cli
