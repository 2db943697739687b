#pragma once
// Human-readable and JSON renderings of searches and trials for the CLI.
#include <google/protobuf/message.h>

#include <ostream>
#include <string>
#include <vector>

#include "ladder/v1/ladder.pb.h"

namespace ladder::cli {

namespace v1 = ::ladder::v1;

std::string FormatParam(const v1::ParamValue& v);
std::string FormatParams(const v1::Trial& t);  // "lr=0.003 batch_size=32"
std::string StateName(v1::TrialState s);
std::string StateName(v1::SearchState s);
std::string StateName(v1::WorkerState s);
std::string FormatDuration(double seconds);
// A metric value in `digits` significant digits ("%.6g").
std::string FormatNumber(double v, int digits = 6);

// Trials ordered best first: completed by objective (per direction; feasible ones before those that broke a
// constraint), then running, pending, failed, cancelled.
std::vector<v1::Trial> RankTrials(const v1::Search& s, std::vector<v1::Trial> trials);
// An infeasible trial's broken constraints (v1::Trial.constraints against v1::Search.constraints), in words:
// "peak_mem_gb 75.5 > max 70, throughput 900 < min 1000"; "" for a feasible trial.
std::string BrokenConstraints(const v1::Search& s, const v1::Trial& t);
// Rows of cells as left-aligned columns two spaces apart (the first row is usually the header).
void PrintColumns(const std::vector<std::vector<std::string>>& rows, std::ostream& out);
void PrintLeaderboard(const v1::Search& s, const std::vector<v1::Trial>& ranked, size_t top, std::ostream& out);
void PrintSearchSummary(const v1::Search& s, std::ostream& out);

}  // namespace ladder::cli
