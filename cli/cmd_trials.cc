// ladder trials SEARCH: the leaderboard of a search; --pareto: the Pareto front of a search with several objectives.
#include <iostream>

#include "cli/commands.h"
#include "cli/format.h"
#include "cli/pareto_front.h"
#include "proto/proto_json.h"
#include "cli/read_only_view.h"

namespace ladder::cli {

void SetupTrials(CLI::App& app, GlobalOptions& g, int& exit_code) {
  struct Options {
    int64_t search_id = 0;
    size_t top = 0;
    bool pareto = false;
  };
  auto opt = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("trials", "Leaderboard of a search's trials, best first");
  cmd->add_option("SEARCH", opt->search_id, "search id")->required();
  cmd->add_option("--top", opt->top, "show only the best N (0: all)")->check(CLI::Range(0, 1 << 30));
  cmd->add_flag("--pareto", opt->pareto,
                "only the Pareto front of a search with several objectives (objectives:), with each one's value");
  cmd->callback([opt, &g, &exit_code] {
    const auto view = ServeDatabaseIfUnserved(g, "trials");  // no coordinator: its database, read-only
    Client client(g);
    v1::Search search;
    std::vector<v1::Trial> trials;
    if (!FetchSearchAndTrials(client, opt->search_id, "trials", &search, &trials, &exit_code)) return;
    if (opt->pareto) {
      if (search.objectives_size() == 0) {
        std::cerr << "ladder trials: search " << search.id() << " has one objective (" << search.objective_metric()
                  << "): --pareto lists the front of several (objectives: in its spec); its best: ladder trials "
                  << search.id() << " --top 1\n";
        exit_code = kBadInput;
        return;
      }
      const auto front = FrontTrials(search, trials);
      if (g.json) {
        std::cout << ParetoJson(search, front).dump() << "\n";
      } else {
        PrintSearchSummary(search, std::cout);
        std::cout << "\n";
        PrintParetoFront(search, front, std::cout);
      }
      exit_code = kOk;
      return;
    }
    auto ranked = RankTrials(search, std::move(trials));
    if (g.json) {
      v1::ListTrialsResponse out;
      for (size_t i = 0; i < ranked.size() && (opt->top == 0 || i < opt->top); ++i) *out.add_trials() = ranked[i];
      std::cout << ProtoJson(out, /*print_defaults=*/true) << "\n";
    } else {
      PrintSearchSummary(search, std::cout);
      std::cout << "\n";
      PrintLeaderboard(search, ranked, opt->top, std::cout);
    }
    exit_code = kOk;
  });
}

}  // namespace ladder::cli
