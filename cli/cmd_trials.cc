// ladder trials SEARCH: the leaderboard of a search.
#include <iostream>

#include "cli/commands.h"
#include "cli/format.h"

namespace ladder::cli {

void SetupTrials(CLI::App& app, GlobalOptions& g, int& exit_code) {
  struct Options {
    int64_t search_id = 0;
    size_t top = 0;
  };
  auto opt = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("trials", "Leaderboard of a search's trials, best first");
  cmd->add_option("SEARCH", opt->search_id, "search id")->required();
  cmd->add_option("--top", opt->top, "show only the best N (0: all)");
  cmd->callback([opt, &g, &exit_code] {
    Client client(g);
    v1::GetSearchRequest sreq;
    sreq.set_search_id(opt->search_id);
    v1::GetSearchResponse sresp;
    auto ctx = client.Context();
    auto st = client.stub().GetSearch(ctx.get(), sreq, &sresp);
    if (!st.ok()) {
      exit_code = ReportRpcError(st, "trials", client.server());
      return;
    }
    v1::ListTrialsRequest req;
    req.set_search_id(opt->search_id);
    v1::ListTrialsResponse resp;
    auto ctx2 = client.Context();
    st = client.stub().ListTrials(ctx2.get(), req, &resp);
    if (!st.ok()) {
      exit_code = ReportRpcError(st, "trials", client.server());
      return;
    }
    auto ranked = RankTrials(sresp.search(), {resp.trials().begin(), resp.trials().end()});
    if (g.json) {
      v1::ListTrialsResponse out;
      for (size_t i = 0; i < ranked.size() && (opt->top == 0 || i < opt->top); ++i) *out.add_trials() = ranked[i];
      std::cout << ToJson(out) << "\n";
    } else {
      PrintSearchSummary(sresp.search(), std::cout);
      std::cout << "\n";
      PrintLeaderboard(sresp.search(), ranked, opt->top, std::cout);
    }
    exit_code = kOk;
  });
}

}  // namespace ladder::cli
