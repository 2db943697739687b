#pragma once
// Several objectives in the CLI (pure: protos in, words and values out; the commands do the RPCs and the printing):
// a search's Pareto front as `ladder trials ID --pareto` lists it, and the point of it `ladder promote` plans from.
//
// The choice (ChooseFromFront): `--pick TRIAL` names a trial number on the front; `--weights W1,W2,...` (one weight
// >= 0 per objective, their sum > 0) takes the point whose weighted sum of its objectives, each normalised over the
// front (0 at the front's best value of it, 1 at its worst; 0 when all its points agree), is the lowest (ties: the
// first in the front's order, by the first objective). Neither: refused, the front listed.
#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <vector>

#include "ladder/v1/ladder.pb.h"

namespace ladder::cli {

namespace v1 = ::ladder::v1;

// The trials of Search.pareto_front, in its order, taken from `trials`.
std::vector<v1::Trial> FrontTrials(const v1::Search& s, const std::vector<v1::Trial>& trials);
// "loss 0.2, acc 0.9": the trial's value of each of the search's objectives.
std::string FormatObjectives(const v1::Search& s, const v1::Trial& t);
// "min loss, max acc"
std::string ObjectiveWords(const v1::Search& s);
// A table: trial, each objective ("loss (min)"), the parameters.
void PrintParetoFront(const v1::Search& s, const std::vector<v1::Trial>& front, std::ostream& out);
// {"search_id", "objectives": [{"metric", "mode"}], "front": [{"trial", "trial_id", "objectives": {METRIC: value},
// "params": {NAME: value}}]}
nlohmann::json ParetoJson(const v1::Search& s, const std::vector<v1::Trial>& front);

// "0.7,0.3" as numbers; false with *error set when a word is no number >= 0 or all are 0.
bool ParseWeights(const std::string& text, std::vector<double>* weights, std::string* error);

struct FrontChoice {
  int64_t trial_id = 0;
  int number = -1;      // the trial's number in the search
  std::string how;      // the point and how it was chosen, one line
  nlohmann::json json;  // {"trial", "trial_id", "objectives", "how", and "pick" or "weights" with "score"}
  std::string error;    // why there is none (the front listed)
};
// `pick`: a trial number, or -1; `weights`: empty, or one per objective. One objective with constraints: `pick`
// chooses any completed trial, refused (naming the constraint it broke) when it is infeasible. Several objectives
// with constraints: the front is the feasible trials' (the coordinator's), and `pick` of an infeasible trial is
// refused naming the constraint it broke.
FrontChoice ChooseFromFront(const v1::Search& s, const std::vector<v1::Trial>& trials, int pick,
                            const std::vector<double>& weights);

}  // namespace ladder::cli
