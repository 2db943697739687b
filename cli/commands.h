#pragma once
// Each subcommand: an options struct, a Setup function that adds it to the CLI11 app, and a Run function
// (one file each). Run returns the process exit code (client.h).
#include <CLI/CLI.hpp>
#include <functional>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "cli/client.h"

namespace ladder::cli {

void SetupSearch(CLI::App& app, GlobalOptions& g, int& exit_code);
void SetupTrials(CLI::App& app, GlobalOptions& g, int& exit_code);
void SetupUp(CLI::App& app, GlobalOptions& g, int& exit_code);
void SetupDemo(CLI::App& app, GlobalOptions& g, int& exit_code);
void SetupPromote(CLI::App& app, GlobalOptions& g, int& exit_code);
void SetupNodes(CLI::App& app, GlobalOptions& g, int& exit_code);
void SetupWatch(CLI::App& app, GlobalOptions& g, int& exit_code);
void SetupCerts(CLI::App& app, GlobalOptions& g, int& exit_code);   // cmd_certs.cc
void SetupTokens(CLI::App& app, GlobalOptions& g, int& exit_code);  // cmd_tokens.cc
// ladder search submit (cmd_search_submit.cc), added to `search`.
void SetupSearchSubmit(CLI::App* search, GlobalOptions& g, int& exit_code);
// ladder search enqueue (cmd_search_enqueue.cc), added to `search`.
void SetupSearchEnqueue(CLI::App* search, GlobalOptions& g, int& exit_code);

// The Slurm jobs submitted for database `db` (<db>.jobs), each chain of resubmissions once, by its newest job, with
// its state from squeue/sacct: [{job_id, kind, name, state, first_job_id, jobs, submitted_unix, script}].
nlohmann::json SlurmJobsJson(const std::string& db);
void PrintSlurmJobs(const nlohmann::json& jobs, std::ostream& out);

// Reads a spec file and validates it locally (the same parser the coordinator uses), also checking that the
// trial command can be found on this machine. Prints the errors and returns false when invalid.
bool LoadAndValidateSpec(const std::string& path, bool check_command, std::string* yaml, bool quiet);

// Prints a finished search's summary, leaderboard (top N) and best configuration (or JSON with --json).
// Returns kOk when the search completed, kFailed otherwise.
int PrintResultTable(Client& client, const v1::Search& s, const GlobalOptions& g, size_t top);

// Blocks SIGINT/SIGTERM (and the `more` signals) in every thread and starts a thread that runs `on_signal` on the
// first one.
void HandleStopSignals(std::function<void(int)> on_signal, const std::vector<int>& more = {});

}  // namespace ladder::cli
