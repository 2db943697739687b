#pragma once
// The thread that runs a daemon's event loop (the coordinator's, a worker's): a handler that throws is logged under
// `component` and the loop runs on, so that one bad message costs that message, not the daemon. The thread ends
// when the loop is stopped or runs out of work. Header-only: the trainer, which links no Boost, never includes it.
#include <boost/asio/io_context.hpp>
#include <exception>
#include <string>
#include <thread>
#include <utility>

#include "common/log.h"

namespace ladder {

inline std::thread StartLoopThread(boost::asio::io_context& loop, std::string component) {
  return std::thread([&loop, component = std::move(component)] {
    for (;;) {
      try {
        loop.run();
        return;
      } catch (const std::exception& e) {
        LogError(component, std::string("event loop handler threw: ") + e.what());
      }
    }
  });
}

}  // namespace ladder
