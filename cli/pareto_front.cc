#include "cli/pareto_front.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "cli/format.h"

namespace ladder::cli {

namespace {

bool Maximized(const v1::SearchObjective& o) { return o.direction() == v1::MAXIMIZE; }

nlohmann::json ParamJson(const v1::ParamValue& v) {
  switch (v.kind_case()) {
    case v1::ParamValue::kFloatValue: return v.float_value();
    case v1::ParamValue::kIntValue: return v.int_value();
    default: return v.string_value();
  }
}

nlohmann::json PointJson(const v1::Search& s, const v1::Trial& t) {
  nlohmann::json values = nlohmann::json::object(), params = nlohmann::json::object();
  for (int i = 0; i < s.objectives_size() && i < t.objectives_size(); ++i) values[s.objectives(i).metric()] = t.objectives(i);
  for (const auto& [k, v] : t.params()) params[k] = ParamJson(v);
  return {{"trial", t.number()}, {"trial_id", t.id()}, {"objectives", values}, {"params", params}};
}

std::string FrontList(const v1::Search& s, const std::vector<v1::Trial>& front) {
  std::string out;
  for (const auto& t : front) out += "\n  trial " + std::to_string(t.number()) + ": " + FormatObjectives(s, t);
  return out;
}

// The front's point with the lowest weighted sum of its objectives, each normalised over the front (0 at the best
// value there, 1 at the worst; 0 where all agree); *score is that sum over the sum of the weights.
const v1::Trial* LowestWeightedSum(const v1::Search& s, const std::vector<v1::Trial>& front,
                                   const std::vector<double>& weights, double* score) {
  const size_t n = weights.size();
  std::vector<double> lo(n, std::numeric_limits<double>::infinity()), hi(n, -std::numeric_limits<double>::infinity());
  for (const auto& t : front) {
    for (size_t i = 0; i < n && static_cast<int>(i) < t.objectives_size(); ++i) {
      lo[i] = std::min(lo[i], t.objectives(static_cast<int>(i)));
      hi[i] = std::max(hi[i], t.objectives(static_cast<int>(i)));
    }
  }
  double wsum = 0;
  for (double w : weights) wsum += w;
  const v1::Trial* best = nullptr;
  for (const auto& t : front) {
    double sum = 0;
    for (size_t i = 0; i < n && static_cast<int>(i) < t.objectives_size(); ++i) {
      const double v = t.objectives(static_cast<int>(i)), range = hi[i] - lo[i];
      const double worse = Maximized(s.objectives(static_cast<int>(i))) ? hi[i] - v : v - lo[i];
      sum += weights[i] * (range > 0 ? worse / range : 0);
    }
    sum /= wsum;
    if (!best || sum < *score) best = &t, *score = sum;
  }
  return best;
}

}  // namespace

std::vector<v1::Trial> FrontTrials(const v1::Search& s, const std::vector<v1::Trial>& trials) {
  std::vector<v1::Trial> out;
  for (int64_t id : s.pareto_front()) {
    auto it = std::find_if(trials.begin(), trials.end(), [id](const v1::Trial& t) { return t.id() == id; });
    if (it != trials.end()) out.push_back(*it);
  }
  return out;
}

std::string FormatObjectives(const v1::Search& s, const v1::Trial& t) {
  std::string out;
  for (int i = 0; i < s.objectives_size(); ++i) {
    out += (i ? ", " : "") + s.objectives(i).metric() + " " +
           (i < t.objectives_size() ? FormatNumber(t.objectives(i), 4) : std::string("-"));
  }
  return out;
}

std::string ObjectiveWords(const v1::Search& s) {
  std::string out;
  for (const auto& o : s.objectives()) out += (out.empty() ? "" : ", ") + std::string(Maximized(o) ? "max " : "min ") + o.metric();
  return out;
}

void PrintParetoFront(const v1::Search& s, const std::vector<v1::Trial>& front, std::ostream& out) {
  std::vector<std::string> keys;
  if (!front.empty()) {
    for (const auto& [k, v] : front.front().params()) keys.push_back(k);
    std::sort(keys.begin(), keys.end());
  }
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = {"trial"};
  for (const auto& o : s.objectives()) header.push_back(o.metric() + (Maximized(o) ? " (max)" : " (min)"));
  header.insert(header.end(), keys.begin(), keys.end());
  rows.push_back(header);
  for (const auto& t : front) {
    std::vector<std::string> row = {std::to_string(t.number())};
    for (int i = 0; i < s.objectives_size(); ++i) {
      row.push_back(i < t.objectives_size() ? FormatNumber(t.objectives(i), 6) : "-");
    }
    for (const auto& k : keys) {
      auto it = t.params().find(k);
      row.push_back(it == t.params().end() ? "" : FormatParam(it->second));
    }
    rows.push_back(row);
  }
  out << "Pareto front: " << front.size() << (front.size() == 1 ? " trial" : " trials") << " (" << ObjectiveWords(s)
      << ")\n";
  PrintColumns(rows, out);
}

nlohmann::json ParetoJson(const v1::Search& s, const std::vector<v1::Trial>& front) {
  nlohmann::json objectives = nlohmann::json::array(), points = nlohmann::json::array();
  for (const auto& o : s.objectives()) objectives.push_back({{"metric", o.metric()}, {"mode", Maximized(o) ? "max" : "min"}});
  for (const auto& t : front) points.push_back(PointJson(s, t));
  return {{"search_id", s.id()}, {"objectives", objectives}, {"front", points}};
}

bool ParseWeights(const std::string& text, std::vector<double>* weights, std::string* error) {
  weights->clear();
  double sum = 0;
  for (size_t from = 0; from <= text.size();) {
    size_t comma = std::min(text.find(',', from), text.size());
    const std::string word = text.substr(from, comma - from);
    char* end = nullptr;
    const double w = word.empty() ? -1 : std::strtod(word.c_str(), &end);
    if (word.empty() || end != word.c_str() + word.size() || !std::isfinite(w) || w < 0) {
      *error = "--weights: '" + word + "' is not a number >= 0 (one weight per objective: --weights 0.7,0.3)";
      return false;
    }
    weights->push_back(w);
    sum += w;
    from = comma + 1;
  }
  if (!(sum > 0)) {
    *error = "--weights: every weight is 0; give at least one a positive weight";
    return false;
  }
  return true;
}

namespace {

// One objective with constraints: --pick plans from that completed trial, refused (naming the constraint it broke)
// when it is infeasible.
FrontChoice PickFeasible(const v1::Search& s, const std::vector<v1::Trial>& trials, int pick) {
  FrontChoice c;
  const std::string head = "--pick " + std::to_string(pick) + ": trial " + std::to_string(pick);
  const v1::Trial* chosen = nullptr;
  for (const auto& t : trials) chosen = t.number() == pick ? &t : chosen;
  if (chosen == nullptr || chosen->state() != v1::TRIAL_COMPLETED || chosen->probe()) {
    c.error = head + " is no completed trial of search " + std::to_string(s.id());
    return c;
  }
  if (chosen->infeasible()) {
    c.error = head + " is infeasible: it broke " + BrokenConstraints(s, *chosen) + " (search " +
              std::to_string(s.id()) + "'s constraints); pick a feasible trial, or leave --pick out for the best one";
    return c;
  }
  c.trial_id = chosen->id();
  c.number = pick;
  c.how = "trial " + std::to_string(pick) + " (" + s.objective_metric() + " " + FormatNumber(chosen->objective(), 4) +
          ", feasible), by --pick " + std::to_string(pick);
  c.json = {{"trial", pick}, {"trial_id", c.trial_id}, {"pick", pick}, {"how", c.how}};
  return c;
}

}  // namespace

FrontChoice ChooseFromFront(const v1::Search& s, const std::vector<v1::Trial>& trials, int pick,
                            const std::vector<double>& weights) {
  FrontChoice c;
  const std::string name = "search " + std::to_string(s.id());
  const int n = s.objectives_size();
  if (n == 0 && pick >= 0 && weights.empty() && s.constraints_size() > 0) return PickFeasible(s, trials, pick);
  if (n == 0) {
    c.error = name + " has one objective (" + s.objective_metric() + "): --pick and --weights choose a point of the " +
              "Pareto front of several";
    return c;
  }
  const std::vector<v1::Trial> front = FrontTrials(s, trials);
  if (front.empty()) {
    const v1::Trial* broke = nullptr;  // constraints: infeasible trials are never on the front
    for (const auto& t : trials) broke = !broke && t.state() == v1::TRIAL_COMPLETED && t.infeasible() ? &t : broke;
    c.error = broke ? name + " has no feasible trial: every completed trial broke its constraints (trial " +
                          std::to_string(broke->number()) + ": " + BrokenConstraints(s, *broke) +
                          "), so its Pareto front is empty: nothing to plan from"
                    : name + " has no completed trial on its Pareto front yet: nothing to plan from";
    return c;
  }
  const v1::Trial* chosen = nullptr;
  if (pick >= 0) {
    for (const auto& t : front) chosen = t.number() == pick ? &t : chosen;
    const v1::Trial* infeasible = nullptr;  // constraints: an infeasible trial is never on the front
    for (const auto& t : trials) infeasible = t.number() == pick && t.infeasible() ? &t : infeasible;
    if (!chosen && infeasible) {
      c.error = "--pick " + std::to_string(pick) + ": trial " + std::to_string(pick) + " is infeasible: it broke " +
                BrokenConstraints(s, *infeasible) + " (" + name + "'s constraints), so it is not on the Pareto " +
                "front of the feasible trials; its points:" + FrontList(s, front);
      return c;
    }
    if (!chosen) {
      c.error = "--pick " + std::to_string(pick) + ": trial " + std::to_string(pick) + " is not on the Pareto front of " +
                name + " (" + ObjectiveWords(s) + "); its points:" + FrontList(s, front);
      return c;
    }
    c.how = "--pick " + std::to_string(pick);
    c.json["pick"] = pick;
  } else if (!weights.empty()) {
    if (static_cast<int>(weights.size()) != n) {
      c.error = "--weights: " + std::to_string(weights.size()) + " weights for " + std::to_string(n) +
                " objectives (" + ObjectiveWords(s) + "): one per objective, in that order";
      return c;
    }
    double best = 0;
    chosen = LowestWeightedSum(s, front, weights, &best);
    std::string words;
    for (double w : weights) words += (words.empty() ? "" : ",") + FormatNumber(w, 6);
    c.how = "--weights " + words + ": the lowest weighted sum of the objectives normalised over the front (" +
            FormatNumber(best, 4) + " of " + std::to_string(front.size()) + " points)";
    c.json["weights"] = weights;
    c.json["score"] = best;
  } else {
    c.error = name + " has " + std::to_string(n) + " objectives (" + ObjectiveWords(s) + "): say which point of its " +
              "Pareto front to plan from, --pick TRIAL or --weights W1,W2,... (one weight per objective, each " +
              "normalised over the front); its points:" + FrontList(s, front);
    return c;
  }
  c.trial_id = chosen->id();
  c.number = chosen->number();
  c.how = "trial " + std::to_string(c.number) + " of the Pareto front (" + FormatObjectives(s, *chosen) + "), by " + c.how;
  c.json["trial"] = c.number;
  c.json["trial_id"] = c.trial_id;
  c.json["objectives"] = PointJson(s, *chosen)["objectives"];
  c.json["how"] = c.how;
  return c;
}

}  // namespace ladder::cli
