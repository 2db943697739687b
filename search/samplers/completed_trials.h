#pragma once
// Internal to search/: a model sampler's completed trials, kept in two orders as they are told, so that a
// suggestion reads what it needs without sorting the history: by trial number (a vector; telling trials in
// order appends) and by (loss, trial number) (an ordered set: the best k are its first k entries). TPE keeps one
// per group of coordinates (tpe_history.h), GP-BO one over every completed trial (gp_sampler.cc).
//
// Not thread-safe; the Observations must outlive it (HistorySampler's stored ones do).
#include <cstddef>
#include <cstdint>
#include <set>
#include <vector>

#include "search/samplers/sampler_internal.h"

namespace ladder::search::internal {

class CompletedTrials {
 public:
  // A completed trial (o->loss set).
  void Add(const Observation* o);
  // Before a trial added here changes (told again); o->loss must still be the value it was added with. A trial
  // that is not here is ignored.
  void Remove(const Observation* o);
  size_t size() const { return by_number_.size(); }
  bool empty() const { return by_number_.empty(); }

  const std::vector<const Observation*>& by_number() const { return by_number_; }
  // The first min(k, size()) trials by (loss, number), in that order (feasible ones first: ByLoss).
  std::vector<const Observation*> Best(size_t k) const;
  // The index in by_number() of the first trial whose number is >= n.
  size_t LowerBound(int64_t n) const;

 private:
  // Feasible trials first, by loss; then infeasible ones, by violation (Optuna's constrained order).
  struct ByLoss {
    bool infeasible;  // violation > 0
    double key;       // the violation if infeasible, else the loss
    int64_t number;
    const Observation* o;
    explicit ByLoss(const Observation* t)
        : infeasible(t->violation > 0), key(infeasible ? t->violation : *t->loss), number(t->number), o(t) {}
    bool operator<(const ByLoss& b) const {
      if (infeasible != b.infeasible) return b.infeasible;
      return key < b.key || (key == b.key && number < b.number);
    }
  };
  std::vector<const Observation*> by_number_;
  std::set<ByLoss> by_loss_;
};

}  // namespace ladder::search::internal
