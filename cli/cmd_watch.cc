// ladder watch [SEARCH_ID]: a live view of a search (or of every search) — full screen in a terminal, one line
// per event with --plain (the default when stdout is not a terminal), one JSON object per event with --json.
#include <unistd.h>

#include <atomic>
#include <iostream>

#include "cli/commands.h"
#include "cli/format.h"
#include "proto/proto_json.h"
#include "cli/read_only_view.h"
#include "cli/watch_model.h"
#include "cli/watch_stream.h"
#include "cli/watch_tui.h"

namespace ladder::cli {

namespace {

struct WatchOptions {
  int64_t search_id = 0;
  bool plain = false;
  int tail = 20;
  bool frozen = false;  // a read-only view of a database (read_only_view.h): nothing follows its snapshot
};

// --plain / --json: prints each event; with a search, stops once it has ended (exit 0). Ctrl-C: exit 130.
int FollowLines(const GlobalOptions& g, const WatchOptions& opt) {
  WatchModel model;
  std::atomic<bool> interrupted{false};
  bool snapshot_done = false;
  WatchStream::Callbacks cb;
  cb.on_event = [&](const v1::Event& ev) {
    if (ev.kind() == v1::Event::SNAPSHOT_DONE) snapshot_done = true;
    if (g.json) {
      std::cout << ProtoJson(ev) << "\n";
    } else if (std::string line = PlainLine(model, ev); !line.empty()) {
      std::cout << line << "\n";
    }
    std::cout.flush();
    model.Apply(ev);
    if (opt.frozen && snapshot_done) return false;
    if (opt.search_id == 0 || !snapshot_done) return true;
    auto s = model.searches.find(opt.search_id);
    return s == model.searches.end() || s->second.state() == v1::SEARCH_RUNNING;  // an ended search: done
  };
  cb.on_status = [&](bool connected, const std::string& why) {
    if (connected) {
      std::cerr << "ladder watch: reconnected to " << g.server << "\n";
    } else {
      std::cerr << "ladder watch: disconnected from " << g.server << " (" << why << "); retrying every second\n";
    }
  };
  WatchStream stream(g, opt.search_id, opt.tail, std::move(cb));
  HandleStopSignals([&](int) {
    interrupted = true;
    stream.Stop();
  });
  const int rc = stream.Run();
  return interrupted ? 130 : rc;
}

}  // namespace

void SetupWatch(CLI::App& app, GlobalOptions& g, int& exit_code) {
  auto opt = std::make_shared<WatchOptions>();
  auto* cmd = app.add_subcommand(
      "watch", "Watch searches live: trials, curves, nodes and events (full screen; --plain or --json for scripts)");
  cmd->add_option("SEARCH_ID", opt->search_id, "the search to watch (default: every search)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--plain", opt->plain, "one line per event instead of the full-screen view (also when not a terminal)");
  cmd->add_option("--tail", opt->tail, "--plain/--json: the journal's latest entries to print first")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  cmd->footer(
      "Full screen: arrows select a trial, s sorts, f filters by state, enter shows a trial, c cancels the search\n"
      "(asks first), ? lists the keys, q quits. It says when the coordinator is unreachable and picks up where it\n"
      "was once it is back. --json prints each event as one JSON object (NDJSON), as the web dashboard's\n"
      "/api/events sends it (protobuf's JSON mapping; fields at their default value are left out). With\n"
      "SEARCH_ID, --plain and --json end when the search has ended.");
  cmd->callback([opt, &g, &exit_code] {
    // No coordinator: the database as it was left, read-only (an ended search's --plain prints it and ends).
    const auto view = ServeDatabaseIfUnserved(g, "watch");
    opt->frozen = view != nullptr;
    if (opt->search_id != 0) {  // a search that does not exist is an error, not an empty view
      Client client(g);
      v1::GetSearchRequest req;
      req.set_search_id(opt->search_id);
      v1::GetSearchResponse resp;
      if (!client.Call(&v1::Ladder::Stub::GetSearch, req, &resp, "watch", &exit_code)) return;
    }
    const bool screen = !opt->plain && !g.json && isatty(STDOUT_FILENO) && isatty(STDIN_FILENO);
    exit_code = screen ? RunWatchTui(g, opt->search_id) : FollowLines(g, *opt);
  });
}

}  // namespace ladder::cli
