// TPE's maintained history (search/samplers/tpe_history.h): the good group is exactly the first min(ceil(gamma n), 25)
// trials by (loss, number) whatever order the trials were told in; below the bound the bad group is every
// other trial plus the pending ones with Optuna's weights; past it, the bounded mixture keeps the pending and
// the recent trials as themselves, its total weight is exact and each older trial's expected weight is its own.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "search/samplers/parzen.h"
#include "search/samplers/tpe_history.h"

namespace ladder::search::internal {
namespace {

// Trials 0..n-1 with coarse losses (many ties), told in a shuffled order; `pending` numbers have no loss.
struct History {
  std::map<int64_t, Observation> trials;  // stable addresses, like HistorySampler's
  std::vector<const Observation*> liars;
  TpeHistory tpe;

  History(int64_t n, const std::set<int64_t>& pending, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<int64_t> order;
    for (int64_t i = 0; i < n; ++i) order.push_back(i);
    std::shuffle(order.begin(), order.end(), rng);
    for (int64_t i : order) {
      Observation o;
      o.number = i;
      o.u = {static_cast<double>(rng() % 1000) / 1000.0};
      o.active = {true};
      if (!pending.count(i)) o.loss = static_cast<double>(rng() % 50);
      const Observation* stored = &(trials[i] = o);
      if (stored->loss) tpe.Add(stored);
    }
    for (int64_t p : pending) liars.push_back(&trials.at(p));
  }
  // The good group as the brute force gives it: sort everything by (loss, number), take n_good, by number.
  std::vector<int64_t> GoodByBruteForce(double gamma, size_t max_good) const {
    std::vector<std::pair<double, int64_t>> all;
    for (const auto& [n, o] : trials) {
      if (o.loss) all.emplace_back(*o.loss, n);
    }
    std::sort(all.begin(), all.end());
    const size_t total = all.size() + liars.size();
    const size_t n_good =
        std::min({static_cast<size_t>(std::ceil(gamma * static_cast<double>(total))), max_good, all.size()});
    std::vector<int64_t> good;
    for (size_t i = 0; i < n_good; ++i) good.push_back(all[i].second);
    std::sort(good.begin(), good.end());
    return good;
  }
};

std::vector<int64_t> Numbers(const std::vector<const Observation*>& v) {
  std::vector<int64_t> out;
  for (const Observation* o : v) out.push_back(o->number);
  return out;
}

TEST(TpeHistoryTest, GoodGroupIsExactlyTheFirstGammaNByLossThenNumber) {
  for (int64_t n : {3, 40, 300, 5000}) {
    History h(n, {n / 2, n - 1}, static_cast<uint64_t>(n));
    for (double gamma : {0.1, 0.25, 1.0}) {
      std::mt19937_64 rng(1);
      TpeHistory::Split s = h.tpe.Make(h.liars, gamma, 25, 1 << 20, rng);
      EXPECT_EQ(Numbers(s.good.trials), h.GoodByBruteForce(gamma, 25)) << "n " << n << " gamma " << gamma;
      EXPECT_EQ(s.good.weights, DefaultTpeWeights(s.good.trials.size()));
    }
  }
}

TEST(TpeHistoryTest, BelowTheBoundTheBadGroupIsEveryOtherTrialAndThePendingOnes) {
  History h(600, {7, 599, 598}, 3);
  std::mt19937_64 rng(1);
  TpeHistory::Split s = h.tpe.Make(h.liars, 0.1, 25, 1000, rng);
  std::vector<int64_t> good = Numbers(s.good.trials), expected;
  for (int64_t i = 0; i < 600; ++i) {
    if (!std::binary_search(good.begin(), good.end(), i)) expected.push_back(i);
  }
  EXPECT_EQ(Numbers(s.bad.trials), expected);  // in trial-number order, pending ones merged in place
  EXPECT_EQ(s.bad.weights, DefaultTpeWeights(expected.size()));
  EXPECT_EQ(s.bad_trials, expected.size());
  std::mt19937_64 untouched(1);
  EXPECT_EQ(rng(), untouched()) << "nothing is drawn below the bound";
}

TEST(TpeHistoryTest, TellingATrialAgainMovesIt) {
  History h(100, {}, 4);
  Observation& best = h.trials.at(42);
  h.tpe.Remove(&best);
  best.loss = -1.0;  // now the best trial
  h.tpe.Add(&best);
  std::mt19937_64 rng(1);
  TpeHistory::Split s = h.tpe.Make({}, 0.1, 25, 1000, rng);
  std::vector<int64_t> good = Numbers(s.good.trials);
  EXPECT_EQ(good, h.GoodByBruteForce(0.1, 25));
  EXPECT_TRUE(std::binary_search(good.begin(), good.end(), 42));
  EXPECT_EQ(s.good.trials.size() + s.bad.trials.size(), 100u);
}

TEST(TpeHistoryTest, BoundedBadMixtureKeepsPendingAndRecentTrialsAndTheTotalWeight) {
  const int64_t n = 20000;
  History h(n, {5, 12000, n - 3, n - 2, n - 1}, 5);  // pending trials among the old ones and the newest
  const size_t bound = 512;
  std::mt19937_64 rng(9);
  TpeHistory::Split s = h.tpe.Make(h.liars, 0.1, 25, bound, rng);
  const size_t nb = s.bad_trials;
  ASSERT_EQ(nb, static_cast<size_t>(n) - 25);
  // strata + recent + the pending trials among the older positions (5 and 12000)
  EXPECT_EQ(s.bad.trials.size(), bound + 2);
  std::vector<int64_t> bad = Numbers(s.bad.trials);
  EXPECT_TRUE(std::is_sorted(bad.begin(), bad.end()));
  EXPECT_EQ(std::set<int64_t>(bad.begin(), bad.end()).size(), bad.size()) << "no trial twice";
  for (int64_t g : Numbers(s.good.trials)) EXPECT_FALSE(std::binary_search(bad.begin(), bad.end(), g));
  for (const Observation* l : h.liars) EXPECT_TRUE(std::binary_search(bad.begin(), bad.end(), l->number));
  // The most recent bound / 2 positions are themselves, with their own weights.
  for (size_t i = 0; i < bound / 2; ++i) {
    const size_t k = s.bad.trials.size() - 1 - i;
    EXPECT_DOUBLE_EQ(s.bad.weights[k], DefaultTpeWeight(nb - 1 - i, nb));
  }
  double total = 0;
  for (double w : s.bad.weights) total += w;
  EXPECT_NEAR(total, DefaultTpeWeightSum(0, nb, nb), 1e-9 * total);
  // The same generator state gives the same mixture; another one draws other trials.
  std::mt19937_64 same(9), other(10);
  EXPECT_EQ(Numbers(h.tpe.Make(h.liars, 0.1, 25, bound, same).bad.trials), bad);
  EXPECT_NE(Numbers(h.tpe.Make(h.liars, 0.1, 25, bound, other).bad.trials), bad);
}

TEST(TpeHistoryTest, EachOlderTrialsExpectedWeightIsItsOwn) {
  // Over many draws the bounded mixture's mean weight at a trial converges to the weight it has in the full
  // mixture (the stratified subsample is an unbiased estimate of the bad density).
  const int64_t n = 3000;
  History h(n, {}, 6);
  const size_t bound = 256;
  std::map<int64_t, double> sum;
  const int kDraws = 3000;
  size_t nb = 0;
  std::vector<int64_t> full;  // the bad trials in order, as the unbounded mixture has them
  {
    std::mt19937_64 rng(0);
    TpeHistory::Split s = h.tpe.Make({}, 0.1, 25, 1 << 20, rng);
    full = Numbers(s.bad.trials);
    nb = s.bad_trials;
  }
  for (int d = 0; d < kDraws; ++d) {
    std::mt19937_64 rng(static_cast<uint64_t>(d) + 100);
    TpeHistory::Split s = h.tpe.Make({}, 0.1, 25, bound, rng);
    for (size_t k = 0; k < s.bad.trials.size(); ++k) sum[s.bad.trials[k]->number] += s.bad.weights[k];
  }
  // Groups of 100 consecutive bad positions: a group's mean weight per draw against its exact weight.
  for (size_t a = 0; a + 100 <= nb; a += 100) {
    double got = 0;
    for (size_t p = a; p < a + 100; ++p) got += sum[full[p]] / kDraws;
    const double want = DefaultTpeWeightSum(a, a + 100, nb);
    EXPECT_NEAR(got, want, 0.05 * want) << "positions " << a << "-" << a + 99;
  }
}

TEST(TpeHistoryTest, WeightSumsMatchTheWeights) {
  for (size_t n : {1, 24, 25, 26, 27, 100, 5000}) {
    std::vector<double> w = DefaultTpeWeights(n);
    for (size_t a = 0; a <= n; a += std::max<size_t>(1, n / 7)) {
      for (size_t b = a; b <= n; b += std::max<size_t>(1, n / 5)) {
        double sum = 0;
        for (size_t i = a; i < b; ++i) sum += w[i];
        EXPECT_NEAR(DefaultTpeWeightSum(a, b, n), sum, 1e-9 * std::max(1.0, sum)) << n << " [" << a << ", " << b << ")";
      }
    }
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(DefaultTpeWeight(i, n), w[i]);
  }
}

}  // namespace
}  // namespace ladder::search::internal
