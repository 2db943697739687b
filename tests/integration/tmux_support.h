#pragma once
// tmux on its own socket, for the tests that drive `ladder watch` as a person would (watch_test.cc,
// cli_pareto_test.cc): a real terminal of a known size, typed into and read back.
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/process.h"

namespace ladder {

class Tmux {
 public:
  Tmux(const std::filesystem::path& dir) : socket_((dir / "tmux.sock").string()) {}
  ~Tmux() { Run({"kill-server"}); }
  testing::CommandResult Run(std::vector<std::string> args) {
    std::vector<std::string> all = {"/usr/bin/tmux", "-S", socket_};
    all.insert(all.end(), args.begin(), args.end());
    return testing::RunCommand(all, std::filesystem::path(socket_).parent_path());
  }
  std::string Screen() { return Run({"capture-pane", "-p", "-t", "w"}).out; }
  // With the terminal's attributes (bold, reverse video) as escapes, for a screenshot.
  std::string ScreenWithEscapes() { return Run({"capture-pane", "-p", "-e", "-t", "w"}).out; }
  // Waits (up to 20 s) until the screen satisfies `ok`; returns the last screen.
  std::string WaitFor(const std::function<bool(const std::string&)>& ok) {
    std::string screen;
    for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
         std::chrono::steady_clock::now() < until;) {
      screen = Screen();
      if (ok(screen)) return screen;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return screen;
  }
  bool Alive() { return Run({"has-session", "-t", "w"}).exit_code == 0; }

 private:
  std::string socket_;
};

}  // namespace ladder
