#include "search/ensemble/ensemble.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

namespace ladder::search {
namespace {

constexpr double kProbabilityFloor = 1e-15;

bool ParseDouble(std::string_view s, double* out) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

std::vector<std::string_view> SplitFields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t comma = line.find(',', start);
    out.push_back(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

bool IsClassification(EnsembleMetric m) { return m != EnsembleMetric::kMse; }

bool Better(double a, double b, EnsembleMetric m) { return HigherIsBetter(m) ? a > b : a < b; }

std::string Num(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace

PredictionsReadResult ParsePredictionsCsv(std::string_view text, std::string_view path) {
  PredictionsReadResult result;
  ValidationPredictions out;
  size_t cols = 0;  // fields per line, label included
  int line_no = 0;
  bool seen_data = false;
  auto fail = [&](int line, const std::string& message) {
    result.error = std::string(path) + ":" + std::to_string(line) + ": " + message;
    return result;
  };
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    std::string_view line = text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    pos = end == std::string_view::npos ? text.size() + 1 : end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    std::vector<std::string_view> fields = SplitFields(line);
    double label = 0;
    if (!ParseDouble(fields[0], &label)) {
      if (!seen_data && out.labels.empty() && line_no == 1) continue;  // a header
      return fail(line_no, "the label '" + std::string(fields[0]) + "' is not a number");
    }
    seen_data = true;
    if (fields.size() < 2) return fail(line_no, "expected the label and at least one prediction, got 1 field");
    if (cols == 0) {
      cols = fields.size();
    } else if (fields.size() != cols) {
      return fail(line_no, "expected " + std::to_string(cols) + " fields like the lines before, got " +
                               std::to_string(fields.size()));
    }
    out.labels.push_back(label);
    for (size_t i = 1; i < fields.size(); ++i) {
      double v = 0;
      if (!ParseDouble(fields[i], &v) || !std::isfinite(v)) {
        return fail(line_no, "field " + std::to_string(i + 1) + " ('" + std::string(fields[i]) +
                                 "') is not a finite number");
      }
      out.predictions.values.push_back(v);
    }
  }
  if (out.labels.empty()) {
    result.error = std::string(path) + ": no predictions (expected one line per validation example: label,p0,p1,...)";
    return result;
  }
  out.predictions.rows = out.labels.size();
  out.predictions.cols = cols - 1;
  result.value = std::move(out);
  return result;
}

double EnsembleScore(const PredictionMatrix& p, const std::vector<double>& labels, EnsembleMetric metric) {
  double total = 0;
  for (size_t r = 0; r < p.rows; ++r) {
    const double label = labels[r];
    switch (metric) {
      case EnsembleMetric::kAccuracy: {
        size_t best = 0;
        for (size_t c = 1; c < p.cols; ++c) {
          if (p.at(r, c) > p.at(r, best)) best = c;
        }
        total += static_cast<double>(best) == label ? 1.0 : 0.0;
        break;
      }
      case EnsembleMetric::kLogLoss: {
        const double q = std::clamp(p.at(r, static_cast<size_t>(label)), kProbabilityFloor, 1.0);
        total -= std::log(q);
        break;
      }
      case EnsembleMetric::kMse: {
        const double d = p.at(r, 0) - label;
        total += d * d;
        break;
      }
    }
  }
  return p.rows == 0 ? 0.0 : total / static_cast<double>(p.rows);
}

EnsembleResult SelectEnsemble(const std::vector<EnsembleCandidate>& candidates, const std::vector<double>& labels,
                              EnsembleMetric metric, int size) {
  EnsembleResult result;
  if (candidates.empty()) {
    result.error = "no candidates: no trial has validation predictions";
    return result;
  }
  if (size < 1) {
    result.error = "ensemble size must be >= 1, got " + std::to_string(size);
    return result;
  }
  const size_t rows = labels.size(), cols = candidates.front().predictions.cols;
  if (rows == 0) {
    result.error = "no validation labels";
    return result;
  }
  for (const EnsembleCandidate& c : candidates) {
    const PredictionMatrix& p = c.predictions;
    const std::string who = "trial " + std::to_string(c.trial_number) + ": ";
    if (p.rows != rows || p.values.size() != p.rows * p.cols) {
      result.error = who + "has predictions for " + std::to_string(p.rows) + " validation examples, expected " +
                     std::to_string(rows);
      return result;
    }
    if (p.cols != cols) {
      result.error = who + "has " + std::to_string(p.cols) + " prediction columns, the first candidate " +
                     std::to_string(cols);
      return result;
    }
  }
  if (metric == EnsembleMetric::kMse && cols != 1) {
    result.error = "mse needs one prediction column (regression), got " + std::to_string(cols);
    return result;
  }
  if (IsClassification(metric)) {
    for (size_t r = 0; r < rows; ++r) {
      const double l = labels[r];
      if (!(l >= 0 && l < static_cast<double>(cols) && l == std::floor(l))) {
        result.error = "validation example " + std::to_string(r + 1) + ": label " + Num(l) +
                       " is not a class index 0.." + std::to_string(cols - 1);
        return result;
      }
    }
  }

  // Best single candidate.
  for (size_t i = 0; i < candidates.size(); ++i) {
    const double s = EnsembleScore(candidates[i].predictions, labels, metric);
    if (i == 0 || Better(s, result.best_single_metric, metric)) {
      result.best_single_metric = s;
      result.best_single_trial = candidates[i].trial_number;
    }
  }

  // Greedy rounds: `sum` holds the members' summed predictions; a trial addition is scored on (sum + c) / k.
  std::vector<double> sum(rows * cols, 0.0);
  std::vector<int> counts(candidates.size(), 0);
  std::vector<size_t> picks;
  PredictionMatrix trial;
  trial.rows = rows;
  trial.cols = cols;
  trial.values.resize(rows * cols);
  size_t best_round = 0;  // rounds in the returned ensemble
  double best_metric = 0;
  for (int round = 1; round <= size; ++round) {
    size_t pick = 0;
    double pick_metric = 0;
    for (size_t i = 0; i < candidates.size(); ++i) {
      const std::vector<double>& v = candidates[i].predictions.values;
      for (size_t j = 0; j < sum.size(); ++j) trial.values[j] = (sum[j] + v[j]) / round;
      const double s = EnsembleScore(trial, labels, metric);
      if (i == 0 || Better(s, pick_metric, metric)) {
        pick = i;
        pick_metric = s;
      }
    }
    const std::vector<double>& v = candidates[pick].predictions.values;
    for (size_t j = 0; j < sum.size(); ++j) sum[j] += v[j];
    ++counts[pick];
    picks.push_back(pick);
    result.metric_by_round.push_back(pick_metric);
    if (round == 1 || Better(pick_metric, best_metric, metric)) {
      best_metric = pick_metric;
      best_round = static_cast<size_t>(round);
    }
  }

  std::vector<int> kept(candidates.size(), 0);
  for (size_t r = 0; r < best_round; ++r) {
    ++kept[picks[r]];
    result.picks.push_back(candidates[picks[r]].trial_number);
  }
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (kept[i] == 0) continue;
    result.members.push_back({candidates[i].trial_number, kept[i],
                              static_cast<double>(kept[i]) / static_cast<double>(best_round)});
  }
  std::stable_sort(result.members.begin(), result.members.end(),
                   [](const EnsembleMember& a, const EnsembleMember& b) { return a.count > b.count; });
  result.ensemble_metric = best_metric;
  return result;
}

EnsembleResult SelectEnsemble(const std::vector<TrialPredictions>& trials, EnsembleMetric metric, int size) {
  if (trials.empty()) {
    EnsembleResult r;
    r.error = "no candidates: no trial has validation predictions";
    return r;
  }
  const std::vector<double>& labels = trials.front().predictions.labels;
  std::vector<EnsembleCandidate> candidates;
  for (const TrialPredictions& t : trials) {
    const std::vector<double>& mine = t.predictions.labels;
    if (mine != labels) {
      EnsembleResult r;
      std::string where = mine.size() != labels.size()
                              ? std::to_string(mine.size()) + " examples against " + std::to_string(labels.size())
                              : "";
      for (size_t i = 0; where.empty() && i < mine.size(); ++i) {
        if (mine[i] != labels[i]) {
          where = "example " + std::to_string(i + 1) + " has label " + Num(mine[i]) + " against " + Num(labels[i]);
        }
      }
      r.error = "trial " + std::to_string(t.trial_number) + ": its validation labels differ from trial " +
                std::to_string(trials.front().trial_number) + "'s (" + where +
                "): the trials must predict the same validation examples in the same order";
      return r;
    }
    candidates.push_back({t.trial_number, t.predictions.predictions});
  }
  return SelectEnsemble(candidates, labels, metric, size);
}

}  // namespace ladder::search
