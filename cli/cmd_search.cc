// ladder search start|validate|list|show|cancel (enqueue: cmd_search_enqueue.cc, submit: cmd_search_submit.cc)
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <iostream>
#include <signal.h>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/format.h"
#include "proto/proto_json.h"
#include "cli/hero_status.h"
#include "cli/read_only_view.h"
#include "cli/search_progress.h"
#include "cli/slurm_job.h"
#include "common/executable.h"
#include "common/printable.h"
#include "search/multiobjective/mo_sampler.h"
#include "search/samplers/auto_sampler.h"
#include "search/spec/spec_reader.h"

namespace ladder::cli {

namespace {

struct SearchOptions {
  std::string spec_path;
  int64_t id = 0;
  bool wait = false;
  bool no_command_check = false;
  std::string priority = "search";
};

}  // namespace

void HandleStopSignals(std::function<void(int)> on_signal, const std::vector<int>& more) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  for (int sig : more) sigaddset(&set, sig);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread([set, on_signal] {
    int sig = 0;
    sigwait(&set, &sig);
    on_signal(sig);
  }).detach();
}

namespace {

// What `search validate` and `search start` find in a spec file: its text, its errors (each "file:line:col:
// field: message"), and a one-line summary when it is valid.
struct SpecCheck {
  bool ok = false;
  std::string yaml, headline, summary;
  std::vector<std::string> errors;
};

// "2 nodes x 4 ranks (1 GPU each), launcher srun, pool hero": a trial's node group in words.
std::string GroupWords(const search::GroupRequest& g) {
  std::string out = std::to_string(g.nodes) + (g.nodes == 1 ? " node x " : " nodes x ") +
                    std::to_string(g.ranks_per_node) + (g.ranks_per_node == 1 ? " rank" : " ranks");
  if (g.gpus_per_rank > 0) {
    out += " (" + std::to_string(g.gpus_per_rank) + (g.gpus_per_rank == 1 ? " GPU each)" : " GPUs each)");
  }
  out += std::string(", launcher ") + (g.launcher == search::Launcher::kMpirun ? "mpirun"
                                       : g.launcher == search::Launcher::kSrun ? "srun"
                                                                               : "per_node");
  if (!g.pool.empty()) out += ", pool " + Printable(g.pool);
  return out;
}

SpecCheck CheckSpec(const std::string& path, bool check_command) {
  SpecCheck c;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    c.headline = "cannot read spec '" + Printable(path, 4096) + "': it is a directory";
    return c;
  }
  std::ifstream in(path);
  if (!in) {
    c.headline = "cannot read spec '" + Printable(path, 4096) + "': " + std::strerror(errno);
    return c;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  c.yaml = ss.str();
  auto parsed = search::ParseSpec(c.yaml, path);
  if (!parsed.ok()) {
    c.headline = "invalid spec " + Printable(path, 4096) + " (" + std::to_string(parsed.errors.size()) + " error" +
                 (parsed.errors.size() == 1 ? "" : "s") + "):";
    for (const auto& e : parsed.errors) c.errors.push_back(e.ToString());
    return c;
  }
  if (check_command) {
    // In a container the command is the image's: what must be here is the runtime's program.
    const auto runtime = parsed.spec->container.runtime;
    const bool contained = runtime != search::ContainerRuntime::kNone;
    std::string error;
    if (ResolveExecutable(contained ? search::ContainerRuntimeProgram(runtime) : parsed.spec->command.front(),
                          {OwnBinDir()}, &error).empty()) {
      c.headline = path + (contained ? ": container.runtime: " : ": command[0]: ") + error +
                   "\n  (pass --no-command-check if it exists only on the worker nodes)";
      return c;
    }
  }
  const auto& sp = *parsed.spec;
  // auto says what it resolved to and why: "sampler auto -> gp (0 of 5 parameters categorical, ...)".
  // With several objectives, auto follows the multi-objective rule (search/multiobjective/mo_sampler.h).
  search::SamplerChoice choice = search::ResolveSampler(sp);
  std::string goal = (sp.objective.maximize ? "maximize " : "minimize ") + Printable(sp.objective.metric);
  if (sp.MultiObjective()) {
    search::MultiObjectiveOptions mo;
    for (const auto& o : sp.objectives) mo.maximize.push_back(o.maximize);
    if (sp.sampler == "nsga2") mo.population = sp.sampler_options.population;
    const search::MultiObjectiveChoice m = search::ResolveMultiObjectiveSampler(sp, mo);
    choice = {m.sampler, m.reason};
    goal = "objectives";
    for (const auto& o : sp.objectives) goal += std::string(o.maximize ? " max " : " min ") + Printable(o.metric);
  }
  for (size_t i = 0; i < sp.constraints.size(); ++i) {  // "minimize loss subject to mem <= 0.5, tput >= 10"
    const auto& k = sp.constraints[i];
    goal += std::string(i == 0 ? " subject to " : ", ") + Printable(k.metric) + (k.max ? " <= " : " >= ") +
            FormatNumber(k.bound, 6);
  }
  const std::string sampler =
      choice.sampler == sp.sampler ? sp.sampler : sp.sampler + " -> " + choice.sampler + " (" + choice.reason + ")";
  c.summary = "search '" + sp.name + "', " + std::to_string(sp.space.params.size()) + " parameters, " +
              std::to_string(sp.max_trials) + " trials, " + std::to_string(sp.parallelism) + " at a time, sampler " +
              sampler + ", " + goal + "; each trial on " + GroupWords(sp.group);
  c.ok = true;
  return c;
}

// The hero run's trial with its metrics and the search's band entries of the journal: the Watch stream's snapshot
// (the search's trials, then the journal's tail) read up to SNAPSHOT_DONE, then the trial's metrics. nullopt: an
// RPC failed (said, *exit_code set).
std::optional<HeroStatus> FetchHeroStatus(Client& client, const v1::Search& s, int* exit_code) {
  std::vector<v1::JournalEntry> journal;
  int64_t trial_id = 0;  // a hero search runs one trial
  auto ctx = client.Context();
  v1::WatchRequest wreq;
  wreq.set_search_id(s.id());
  wreq.set_journal_tail(1000);
  auto reader = client.stub().Watch(ctx.get(), wreq);
  v1::Event ev;
  bool done = false;
  while (!done && reader->Read(&ev)) {
    if (ev.kind() == v1::Event::JOURNAL) journal.push_back(ev.journal());
    if (ev.kind() == v1::Event::TRIAL_UPDATED) trial_id = std::max(trial_id, ev.trial().id());
    done = ev.kind() == v1::Event::SNAPSHOT_DONE;
  }
  ctx->TryCancel();
  const grpc::Status st = reader->Finish();
  if (!done) {
    *exit_code = ReportRpcError(client.Explained(st), "search show (the journal)", client.server());
    return std::nullopt;
  }
  std::optional<v1::Trial> trial;
  if (trial_id > 0) {
    v1::GetTrialRequest treq;
    treq.set_trial_id(trial_id);
    treq.set_include_metrics(true);
    v1::GetTrialResponse tresp;
    if (!client.Call(&v1::Ladder::Stub::GetTrial, treq, &tresp, "search show", exit_code)) return std::nullopt;
    trial = tresp.trial();
  }
  return ReadHeroStatus(s.plan_json(), trial, journal);
}

}  // namespace

bool LoadAndValidateSpec(const std::string& path, bool check_command, std::string* yaml, bool quiet) {
  SpecCheck c = CheckSpec(path, check_command);
  *yaml = c.yaml;
  if (!c.ok) {
    if (c.errors.size() == 1) {  // one line: "ladder: invalid spec: FILE:LINE:COL: FIELD: MESSAGE"
      std::cerr << "ladder: invalid spec: " << c.errors.front() << "\n";
      return false;
    }
    std::cerr << "ladder: " << c.headline << "\n";
    for (const auto& e : c.errors) std::cerr << "  " << e << "\n";
    return false;
  }
  if (!quiet) std::cout << Printable(path, 4096) << ": ok — " << c.summary << "\n";
  return true;
}

namespace {

// ladder search validate.
void RunSearchValidate(const SearchOptions& opt, GlobalOptions& g, int& exit_code) {
  if (g.json) {  // {"spec", "valid", "summary" | "error" and "errors"}
    SpecCheck c = CheckSpec(opt.spec_path, !opt.no_command_check);
    nlohmann::json j = {{"spec", opt.spec_path}, {"valid", c.ok}};
    if (c.ok) {
      j["summary"] = c.summary;
    } else {
      j["error"] = c.headline;
      j["errors"] = c.errors;
    }
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    exit_code = c.ok ? kOk : kBadInput;
    return;
  }
  std::string yaml;
  exit_code = LoadAndValidateSpec(opt.spec_path, !opt.no_command_check, &yaml, false) ? kOk : kBadInput;
}

void AddSearchValidate(CLI::App* search, const std::shared_ptr<SearchOptions>& opt, GlobalOptions& g,
                       int& exit_code) {
  auto* validate = search->add_subcommand("validate", "Check a search spec without starting it");
  validate->add_option("SPEC", opt->spec_path, "YAML search spec")->required();
  validate->add_flag("--no-command-check", opt->no_command_check, "don't check that the trial command exists here");
  validate->callback([opt, &g, &exit_code] { RunSearchValidate(*opt, g, exit_code); });
}

// ladder search start.
void RunSearchStart(const SearchOptions& opt, GlobalOptions& g, int& exit_code) {
  std::string yaml;
  if (!LoadAndValidateSpec(opt.spec_path, !opt.no_command_check, &yaml, true)) {
    exit_code = kBadInput;
    return;
  }
  // Signals are blocked and handled by one thread before gRPC starts its own (they inherit the mask): else
  // one of gRPC's threads takes Ctrl-C and the process dies without saying the search goes on.
  auto interrupt = std::make_shared<Interrupt>();
  if (opt.wait) HandleStopSignals([interrupt](int) { interrupt->Fire(); });
  Client client(g);
  v1::CreateSearchRequest req;
  req.set_spec_yaml(yaml);
  req.set_spec_path(opt.spec_path);
  req.set_priority(opt.priority == "hero"       ? v1::PRIORITY_HERO
                   : opt.priority == "promoted" ? v1::PRIORITY_PROMOTED
                                               : v1::PRIORITY_SEARCH);
  v1::CreateSearchResponse resp;
  if (!client.Call(&v1::Ladder::Stub::CreateSearch, req, &resp, "search start", &exit_code)) return;
  if (!opt.wait) {
    if (g.json) {
      std::cout << ProtoJson(resp.search(), /*print_defaults=*/true) << "\n";
    } else {
      std::cout << "started search " << resp.search().id() << " '" << resp.search().name() << "'\n"
                << "  follow it: ladder search show " << resp.search().id() << "   leaderboard: ladder trials "
                << resp.search().id() << "\n";
    }
    exit_code = kOk;
    return;
  }
  if (!g.json) std::cout << "started search " << resp.search().id() << " '" << resp.search().name() << "'\n";
  auto final_search = FollowSearch(client, resp.search().id(), g.json, interrupt.get(), &exit_code);
  if (!final_search) return;
  exit_code = PrintResultTable(client, *final_search, g, 10);
}

void AddSearchStart(CLI::App* search, const std::shared_ptr<SearchOptions>& opt, GlobalOptions& g,
                       int& exit_code) {
  auto* start = search->add_subcommand("start", "Submit a search spec to the coordinator");
  start->add_option("SPEC", opt->spec_path, "YAML search spec")->required();
  start->add_flag("--wait", opt->wait, "follow the search until it ends, then print the leaderboard");
  start->add_flag("--no-command-check", opt->no_command_check, "don't check that the trial command exists here");
  start->add_option("--priority", opt->priority,
                    "scheduling class of its trials: search (default), promoted, hero; a higher class goes first "
                    "and preempts lower ones, which resume later from their checkpoint")
      ->check(CLI::IsMember({"search", "promoted", "hero"}));
  start->callback([opt, &g, &exit_code] { RunSearchStart(*opt, g, exit_code); });
}

// ladder search list.
void RunSearchList(GlobalOptions& g, int& exit_code) {
  // The Slurm jobs of the database (ladder search submit, promote --submit), whether or not a coordinator runs.
  const auto jobs = SlurmJobsJson(g.db.empty() ? "ladder.db" : g.db);
  const std::string unserved = ResolveServer(g);
  const auto view = ServeDatabaseIfUnserved(g, "search list");  // the job ended: its database, read-only
  Client client(g);
  v1::ListSearchesRequest req;
  v1::ListSearchesResponse resp;
  if (!jobs.empty()) {
    auto ctx = client.Context();
    const grpc::Status st = client.Explained(client.stub().ListSearches(ctx.get(), req, &resp));
    const bool down = ExitCodeOf(st) == kUnreachable;
    if (!st.ok() && !down) {
      exit_code = ReportRpcError(st, "search list", client.server());
      return;
    }
    if (g.json) {
      auto j = nlohmann::json::parse(ProtoJson(resp, /*print_defaults=*/true));
      j["slurm_jobs"] = jobs;
      if (down) j["coordinator"] = "unreachable at " + client.server();
      if (view) j["coordinator"] = "none answers at " + unserved + "; read from " + g.db + " read-only";
      std::cout << j.dump() << "\n";
      exit_code = kOk;
      return;
    }
    PrintSlurmJobs(jobs, std::cout);
    if (down) {
      std::cout << "no coordinator answers at " << client.server() << " (a search's job runs it while it runs)\n";
      exit_code = kOk;
      return;
    }
    std::cout << "\n";
  } else if (!client.Call(&v1::Ladder::Stub::ListSearches, req, &resp, "search list", &exit_code)) {
    return;
  }
  if (g.json) {
    std::cout << ProtoJson(resp, /*print_defaults=*/true) << "\n";
  } else if (resp.searches().empty()) {
    std::cout << "no searches yet (start one: ladder search start SPEC)\n";
  } else {
    std::printf("%-4s  %-24s  %-9s  %5s  %5s  %5s  %s\n", "id", "name", "state", "done", "run", "fail", "best");
    for (const auto& s : resp.searches()) {
      std::printf("%-4lld  %-24s  %-9s  %2d/%-2d  %5d  %5d  %s\n", static_cast<long long>(s.id()),
                  s.name().c_str(), StateName(s.state()).c_str(), s.completed(), s.max_trials(), s.running(),
                  s.failed(),
                  s.best_trial_id() ? (s.objective_metric() + "=" + std::to_string(s.best_objective())).c_str()
                                    : "-");
    }
  }
  exit_code = kOk;
}

void AddSearchList(CLI::App* search, GlobalOptions& g, int& exit_code) {
  auto* list = search->add_subcommand(
      "list", "List searches (and the Slurm jobs submitted for the database: ladder --db DB search list)");
  list->callback([&g, &exit_code] { RunSearchList(g, exit_code); });
}

// ladder search show.
void RunSearchShow(const SearchOptions& opt, GlobalOptions& g, int& exit_code) {
  const auto view = ServeDatabaseIfUnserved(g, "search show");
  Client client(g);
  v1::GetSearchRequest req;
  req.set_search_id(opt.id);
  v1::GetSearchResponse resp;
  if (!client.Call(&v1::Ladder::Stub::GetSearch, req, &resp, "search show", &exit_code)) return;
  // A search on a Slurm job of its own (ladder promote --submit): where the job stands, in Slurm's words.
  const std::string& job = resp.search().slurm_job_id();
  const std::string job_state = job.empty() ? "" : SlurmJobState(job);
  // A hero run (ladder promote): its plan, where its live loss stands against the band, the band's warnings.
  std::optional<HeroStatus> hero;
  if (!resp.search().plan_json().empty()) {
    hero = FetchHeroStatus(client, resp.search(), &exit_code);
    if (!hero) return;
  }
  if (g.json) {
    auto j = nlohmann::json::parse(ProtoJson(resp.search(), /*print_defaults=*/true));
    if (!job.empty()) j["slurm_job_state"] = job_state;
    if (hero) j["hero"] = HeroStatusJson(*hero);
    std::cout << j.dump() << "\n";
  } else {
    PrintSearchSummary(resp.search(), std::cout);
    if (!job.empty()) std::cout << "  slurm job: " << job << " (" << job_state << ")\n";
    if (hero) PrintHeroStatus(*hero, std::cout);
  }
  exit_code = kOk;
}

void AddSearchShow(CLI::App* search, const std::shared_ptr<SearchOptions>& opt, GlobalOptions& g,
                       int& exit_code) {
  auto* show = search->add_subcommand("show", "Show one search");
  show->add_option("ID", opt->id, "search id")->required();
  show->callback([opt, &g, &exit_code] { RunSearchShow(*opt, g, exit_code); });
}

// ladder search cancel.
void RunSearchCancel(const SearchOptions& opt, GlobalOptions& g, int& exit_code) {
  Client client(g);
  v1::CancelSearchRequest req;
  req.set_search_id(opt.id);
  v1::CancelSearchResponse resp;
  const grpc::Status st = client.stub().CancelSearch(client.Context().get(), req, &resp);
  if (!st.ok()) {
    // Cancelling a search that has already ended is not an error (the request holds: it does not run).
    v1::GetSearchRequest get;
    get.set_search_id(opt.id);
    v1::GetSearchResponse got;
    if (st.error_code() != grpc::StatusCode::FAILED_PRECONDITION ||
        !client.Call(&v1::Ladder::Stub::GetSearch, get, &got, "search cancel", &exit_code, /*quiet=*/true) ||
        got.search().state() == v1::SEARCH_RUNNING) {
      exit_code = ReportRpcError(client.Explained(st), "search cancel", client.server());
      return;
    }
    if (g.json) {
      std::cout << ProtoJson(got.search(), /*print_defaults=*/true) << "\n";
    } else {
      std::cout << "search " << opt.id << " has already ended (" << StateName(got.search().state())
                << "): nothing to cancel\n";
    }
    exit_code = kOk;
    return;
  }
  if (g.json) {
    std::cout << ProtoJson(resp.search(), /*print_defaults=*/true) << "\n";
  } else {
    std::cout << "cancelled search " << opt.id << "\n";
  }
  exit_code = kOk;
}

void AddSearchCancel(CLI::App* search, const std::shared_ptr<SearchOptions>& opt, GlobalOptions& g,
                       int& exit_code) {
  auto* cancel = search->add_subcommand("cancel", "Cancel a running search (its running trials are stopped)");
  cancel->add_option("ID", opt->id, "search id")->required();
  cancel->callback([opt, &g, &exit_code] { RunSearchCancel(*opt, g, exit_code); });
}

}  // namespace

void SetupSearch(CLI::App& app, GlobalOptions& g, int& exit_code) {
  auto* search = app.add_subcommand("search", "Start, inspect and cancel searches");
  search->require_subcommand(1);
  auto opt = std::make_shared<SearchOptions>();

  AddSearchValidate(search, opt, g, exit_code);
  AddSearchStart(search, opt, g, exit_code);
  SetupSearchSubmit(search, g, exit_code);
  AddSearchList(search, g, exit_code);
  AddSearchShow(search, opt, g, exit_code);
  AddSearchCancel(search, opt, g, exit_code);
  SetupSearchEnqueue(search, g, exit_code);
}

int PrintResultTable(Client& client, const v1::Search& s, const GlobalOptions& g, size_t top) {
  std::vector<v1::Trial> trials;
  int code = kOk;
  if (!ListAllTrials(client, s.id(), "list trials", &trials, &code)) return code;
  auto ranked = RankTrials(s, std::move(trials));
  if (g.json) {
    v1::ListTrialsResponse out;
    for (auto& t : ranked) *out.add_trials() = t;
    std::cout << ProtoJson(out, /*print_defaults=*/true) << "\n";
  } else {
    std::cout << "\n";
    PrintSearchSummary(s, std::cout);
    std::cout << "\n";
    PrintLeaderboard(s, ranked, top, std::cout);
    if (!ranked.empty() && ranked.front().state() == v1::TRIAL_COMPLETED) {
      const auto& best = ranked.front();
      std::cout << "\nbest configuration (trial " << best.number() << ", " << s.objective_metric() << " "
                << best.objective() << "):\n";
      std::map<std::string, v1::ParamValue> sorted(best.params().begin(), best.params().end());
      for (const auto& [k, v] : sorted) std::cout << "  " << k << ": " << FormatParam(v) << "\n";
      std::cout << "  command: ";
      for (const auto& a : best.command()) std::cout << a << " ";
      std::cout << "\n";
    }
  }
  return s.state() == v1::SEARCH_COMPLETED ? kOk : kFailed;
}

}  // namespace ladder::cli
