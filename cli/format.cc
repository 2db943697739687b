#include "cli/format.h"


#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>

namespace ladder::cli {

std::string FormatParam(const v1::ParamValue& v) {
  switch (v.kind_case()) {
    case v1::ParamValue::kFloatValue: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.4g", v.float_value());
      return buf;
    }
    case v1::ParamValue::kIntValue: return std::to_string(v.int_value());
    default: return v.string_value();
  }
}

std::string FormatParams(const v1::Trial& t) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : t.params()) keys.push_back(k);
  std::sort(keys.begin(), keys.end());
  std::string out;
  for (const auto& k : keys) out += (out.empty() ? "" : " ") + k + "=" + FormatParam(t.params().at(k));
  return out;
}

std::string StateName(v1::TrialState s) {
  switch (s) {
    case v1::TRIAL_PENDING: return "pending";
    case v1::TRIAL_RUNNING: return "running";
    case v1::TRIAL_COMPLETED: return "completed";
    case v1::TRIAL_FAILED: return "failed";
    case v1::TRIAL_CANCELLED: return "cancelled";
    default: return "?";
  }
}

std::string StateName(v1::SearchState s) {
  switch (s) {
    case v1::SEARCH_RUNNING: return "running";
    case v1::SEARCH_COMPLETED: return "completed";
    case v1::SEARCH_CANCELLED: return "cancelled";
    case v1::SEARCH_FAILED: return "failed";
    default: return "?";
  }
}

std::string StateName(v1::WorkerState s) {
  switch (s) {
    case v1::WORKER_UP: return "up";
    case v1::WORKER_DRAINING: return "draining";
    case v1::WORKER_DOWN: return "down";
    case v1::WORKER_QUARANTINED: return "quarantined";
    default: return "?";
  }
}

std::string FormatNumber(double v, int digits) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

std::string FormatDuration(double seconds) {
  if (seconds < 0) seconds = 0;
  char buf[32];
  if (seconds < 60) {
    std::snprintf(buf, sizeof buf, "%.1fs", seconds);
  } else if (seconds < 3600) {
    std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(seconds) / 60, static_cast<int>(seconds) % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%dh%02dm", static_cast<int>(seconds) / 3600, static_cast<int>(seconds) / 60 % 60);
  }
  return buf;
}

std::vector<v1::Trial> RankTrials(const v1::Search& s, std::vector<v1::Trial> trials) {
  auto group = [](const v1::Trial& t) {
    switch (t.state()) {
      case v1::TRIAL_COMPLETED: return 0;
      case v1::TRIAL_RUNNING: return 1;
      case v1::TRIAL_PENDING: return 2;
      case v1::TRIAL_FAILED: return 3;
      default: return 4;
    }
  };
  const bool maximize = s.direction() == v1::MAXIMIZE;
  std::stable_sort(trials.begin(), trials.end(), [&](const v1::Trial& a, const v1::Trial& b) {
    if (group(a) != group(b)) return group(a) < group(b);
    if (a.infeasible() != b.infeasible()) return b.infeasible();  // completed: the feasible ones first
    if (group(a) == 0 && a.objective() != b.objective()) {
      return maximize ? a.objective() > b.objective() : a.objective() < b.objective();
    }
    return a.number() < b.number();
  });
  return trials;
}

std::string BrokenConstraints(const v1::Search& s, const v1::Trial& t) {
  std::string words;
  for (int i = 0; i < t.constraints_size() && i < s.constraints_size(); ++i) {
    const double v = t.constraints(i);
    if (v <= 0) continue;  // it holds
    const auto& c = s.constraints(i);
    const bool max = c.kind() == "max";
    const double value = max ? c.bound() + v : c.bound() - v;
    words += (words.empty() ? "" : ", ") + c.metric() + " " + FormatNumber(value, 6) + (max ? " > max " : " < min ") +
             FormatNumber(c.bound(), 6);
  }
  return words;
}

void PrintLeaderboard(const v1::Search& s, const std::vector<v1::Trial>& ranked, size_t top, std::ostream& out) {
  std::vector<std::string> keys;
  if (!ranked.empty()) {
    for (const auto& [k, v] : ranked.front().params()) keys.push_back(k);
    std::sort(keys.begin(), keys.end());
  }
  std::vector<std::vector<std::string>> rows;
  // Several objectives: a column each, and `front` marks the trials on the Pareto front.
  const bool several = s.objectives_size() > 0;
  std::vector<std::string> header = {"rank", "trial", "state"};
  if (several) {
    header.push_back("front");
    for (const auto& o : s.objectives()) header.push_back(o.metric());
  } else {
    header.push_back(s.objective_metric());
  }
  for (const auto& k : keys) header.push_back(k);
  header.push_back("time");
  header.push_back("note");
  rows.push_back(header);
  size_t rank = 0, shown = 0;
  for (const auto& t : ranked) {
    if (top && shown++ >= top) break;
    // A probe of the climb (ladder promote --probe) is no configuration of the search: tagged, and not ranked.
    // An infeasible trial (it broke a constraint) is no candidate either: marked, not ranked.
    const bool ranked_here = t.state() == v1::TRIAL_COMPLETED && !t.probe() && !t.infeasible();
    if (ranked_here) ++rank;
    std::vector<std::string> row;
    row.push_back(ranked_here ? std::to_string(rank) : "-");
    row.push_back(std::to_string(t.number()));
    row.push_back(StateName(t.state()));
    if (several) {
      row.push_back(t.pareto() ? "*" : "");
      for (int i = 0; i < s.objectives_size(); ++i) {
        row.push_back(i < t.objectives_size() ? FormatNumber(t.objectives(i), 4) : "-");
      }
    } else {
      char obj[32] = "-";
      if (t.has_objective()) std::snprintf(obj, sizeof obj, "%.4f", t.objective());
      row.push_back(obj);
    }
    for (const auto& k : keys) {
      auto it = t.params().find(k);
      row.push_back(it == t.params().end() ? "" : FormatParam(it->second));
    }
    double end = t.finished_unix() > 0 ? t.finished_unix() : 0;
    row.push_back(t.started_unix() > 0 && end > 0 ? FormatDuration(end - t.started_unix()) : "");
    std::string note = t.probe() ? "probe (" + std::to_string(std::max(1, t.micro_batches())) + " micro-batches)"
                       : t.enqueued() ? "enqueued"  // a known point: the spec's enqueue: or ladder search enqueue
                                      : "";
    if (t.infeasible()) note = "infeasible: " + BrokenConstraints(s, t) + (note.empty() ? "" : "; " + note);
    if (!t.error().empty()) note += (note.empty() ? "" : "; ") + t.error();
    if (t.ignored_lines() > 0) note += (note.empty() ? "" : "; ") + std::to_string(t.ignored_lines()) + " ignored lines";
    if (note.size() > 72) note = note.substr(0, 69) + "...";
    row.push_back(note);
    rows.push_back(row);
  }
  PrintColumns(rows, out);
}

void PrintColumns(const std::vector<std::vector<std::string>>& rows, std::ostream& out) {
  std::vector<size_t> width;
  for (const auto& r : rows) {
    if (width.size() < r.size()) width.resize(r.size(), 0);
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      std::string cell = r[i];
      if (i + 1 < r.size()) cell.resize(width[i], ' ');
      line += (i ? "  " : "") + cell;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  }
}

void PrintSearchSummary(const v1::Search& s, std::ostream& out) {
  out << "search " << s.id() << " '" << s.name() << "': " << StateName(s.state()) << " — " << s.completed()
      << " completed, " << s.running() << " running, " << s.pending() << " pending, " << s.failed() << " failed, "
      << s.cancelled() << " cancelled of " << s.max_trials() << " (" << s.parallelism() << " at a time)\n";
  if (!s.error().empty()) out << "  error: " << s.error() << "\n";
  if (s.probes() > 0) {
    out << "  probes: " << s.probes() << " of its trials are probes of the climb (ladder promote --probe; not "
        << "counted against its " << s.max_trials() << " trials)\n";
  }
  if (!s.warm_start_source().empty()) {
    out << "  warm start: " << s.warm_start_trials() << " completed trials of " << s.warm_start_source()
        << " told to the sampler first";
    if (s.warm_start_skipped() > 0) out << " (" << s.warm_start_skipped() << " skipped: outside this space)";
    out << "; not trials of this search\n";
  }
  if (s.enqueued() > 0) {
    out << "  enqueued: " << s.enqueued() << " known point" << (s.enqueued() == 1 ? "" : "s")
        << " to run before the next sampled trial\n";
  }
  if (s.objectives_size() > 0) {
    std::string words;
    for (const auto& o : s.objectives()) {
      words += (words.empty() ? "" : ", ") + std::string(o.direction() == v1::MAXIMIZE ? "max " : "min ") + o.metric();
    }
    out << "  objectives: " << words << "; Pareto front: " << s.pareto_front_size() << " trial"
        << (s.pareto_front_size() == 1 ? "" : "s") << " (ladder trials " << s.id() << " --pareto)\n";
  } else if (s.best_trial_id() != 0) {
    // A trial is named by its number in the search, as the leaderboard's "trial" column and `best configuration`.
    out << "  best " << s.objective_metric() << " = " << s.best_objective() << " (trial " << s.best_trial_number()
        << (s.constraints_size() > 0 ? ", the best feasible" : "") << ")\n";
  }
  if (s.constraints_size() > 0) {
    std::string words;
    for (const auto& c : s.constraints()) {
      words += (words.empty() ? "" : ", ") + c.metric() + (c.kind() == "max" ? " <= " : " >= ") +
               FormatNumber(c.bound(), 6);
    }
    out << "  constraints: " << words << "; " << s.infeasible() << " of " << s.completed()
        << " completed trials infeasible" << (s.best_trial_id() == 0 && s.infeasible() > 0 ? ": no feasible trial" : "")
        << "\n";
  }
  if (s.priority() == v1::PRIORITY_HERO || s.priority() == v1::PRIORITY_PROMOTED) {
    out << "  priority: " << (s.priority() == v1::PRIORITY_HERO ? "hero" : "promoted") << "\n";
  }
  if (s.has_ensemble()) {
    const auto& e = s.ensemble();
    if (!e.error().empty()) {
      out << "  ensemble: none (" << e.error() << ")\n";
    } else {
      out << "  ensemble " << e.metric() << " = " << e.value() << " vs best single trial " << e.best_single_value()
          << " (trial "
          << (e.has_best_single_trial_number() ? std::to_string(e.best_single_trial_number())
                                               : "id " + std::to_string(e.best_single_trial_id()))
          << "), from " << e.candidates() << " candidates; members:";
      for (const auto& m : e.members()) out << " trial " << m.trial_number() << " x" << m.weight();
      out << "\n";
    }
  }
}

}  // namespace ladder::cli
