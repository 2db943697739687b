// GP-BO: Gaussian-process Bayesian optimization (gp_model.h) with expected improvement.
//
// Inputs: float/int parameters as their unit coordinate (log scale where `log`), categoricals one-hot, an
// inactive conditional parameter as 0.5 (one-hot: all zero). Targets: losses, robustly standardized (median
// and IQR) with the bad tail compressed logarithmically, so that a few huge losses (Rosenbrock) do not flatten
// the model, then standardized to mean 0 and variance 1.
//
// Cost is bounded: the model holds at most `max_history` (default 200) completed trials, the best quarter by
// loss plus the most recent ones; the kernel hyperparameters are refitted (1 default + 2 random starts of
// L-BFGS) only when the number of completed trials reaches the next point of a geometric schedule (every
// trial up to 10, then every max(2, 20%)), on the first trials in trial-number order, so they stay a function
// of the told set (the sampler's determinism contract) and are cached between refits. The completed trials
// are kept by number and by loss as they are told, so a suggestion reads its model set in O(max_history) and
// its cost does not grow with the history (the promise: under 50 ms at 100,000 trials); the cost of a suggestion
// is that of a GP on max_history points (O(max_history^3) to condition, O(candidates x max_history^2) to
// predict), and a refit's is that of ~3 x 40 marginal-likelihood evaluations on as many.
//
// Pending trials: kriging believer — each pending point joins the model with the posterior mean as its value,
// which collapses the variance there, so EI sends the next suggestion elsewhere.
//
// Constraints (Sampler::TellConstrained): EI against the best feasible trial, times the chance of feasibility from
// a second GP on the trials' largest signed constraint value (a classifier-weighted acquisition, as BoTorch's
// outcome constraints; the chance alone before any feasible trial).
//
// Warm start (trials numbered below 0: an earlier search's, told before this one's first; SearchManager's
// warm_start:): stacked GPs, as Google Vizier transfers between studies (Golovin et al. 2017). A GP on the earlier
// trials gives the prior mean; this search's own trials are modelled by a second GP as residuals from it, with
// hyperparameters of their own, about their mean (the shift between the tasks, which holds where the search has
// no trial yet); EI reads the sum of the means and the residual's variance, against the search's own best. The
// earlier trials' values inform where to look, but they are another task's noisy values: the new task's level and
// its differences are learnt from its own trials, and their best is not the one to beat. Before the search's own
// first trial, the earlier GP alone, against its lowest mean at the trials it holds. Both sides are standardized on
// the earlier trials' scale. (With constraints broken, the one GP over every trial, below.)
//
// Acquisition: EI maximized over 256 uniform candidates, 64 perturbations of each of the 5 best trials, then
// three rounds of local perturbation (scales 0.05, 0.02, 0.008) around the 3 best candidates.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

#include "search/samplers/completed_trials.h"
#include "search/samplers/gp_model.h"
#include "search/samplers/sampler_internal.h"
#include "search/samplers/samplers.h"

namespace ladder::search::internal {
namespace {

constexpr int kDefaultMaxHistory = 200;
constexpr int kRandomCandidates = 256;
constexpr int kBestSeeds = 5;
constexpr int kPerturbPerSeed = 64;
constexpr int kRefineSeeds = 3;
constexpr int kRefinePerRound = 32;
constexpr double kRefineScales[] = {0.05, 0.02, 0.008};

double NormalPdf(double z) { return 0.3989422804014327 * std::exp(-0.5 * z * z); }
double NormalCdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

// The number of completed trials the hyperparameters are fitted on, for `completed` trials.
size_t FitPoint(size_t completed) {
  size_t m = 1;
  while (true) {
    size_t next = m < 10 ? m + 1 : m + std::max<size_t>(2, m / 5);
    if (next > completed) return m;
    m = next;
  }
}

// The chance of feasibility's model (GpSampler::Feasibility): a GP on the largest constraint value, standardized,
// and 0 standardized alike.
struct FeasibilityModel {
  GpPosterior post;
  double threshold = 0;
};

// What EI reads: a GP's posterior, plus (a warm start) the earlier trials' GP, whose mean is added (the variance
// is the residual's alone: weighing in the earlier GP's, as Vizier does, left hpobench-segment's warm searches
// short of the cold ones' final regret, docs/BENCHMARKS.md).
struct Model {
  GpPosterior post;
  std::optional<GpPosterior> prior;
  double offset = 0;  // the residuals' mean: how far the new task sits from the earlier one, where unmeasured
  void Predict(const Eigen::MatrixXd& q, Eigen::VectorXd* mean, Eigen::VectorXd* var) const {
    post.Predict(q, mean, var);
    if (!prior) return;
    Eigen::VectorXd pm, pv;
    prior->Predict(q, &pm, &pv);
    *mean += pm;
    mean->array() += offset;
  }
};

// The targets' scale: losses robustly standardized (median and IQR), the bad tail compressed logarithmically,
// then to mean 0 and variance 1 over the losses it was made from.
class TargetScale {
 public:
  explicit TargetScale(const std::vector<const Observation*>& obs) {
    std::vector<double> s;
    for (const Observation* o : obs) s.push_back(*o->loss);
    std::sort(s.begin(), s.end());
    auto quantile = [&](double q) { return s[static_cast<size_t>(q * static_cast<double>(s.size() - 1))]; };
    med_ = quantile(0.5);
    scale_ = (quantile(0.75) - quantile(0.25)) / 1.349;
    if (!(scale_ > 0)) scale_ = std::max(1e-12, s.back() - s.front());
    Eigen::VectorXd y(static_cast<Eigen::Index>(obs.size()));
    for (size_t i = 0; i < obs.size(); ++i) y(static_cast<Eigen::Index>(i)) = Compressed(*obs[i]->loss);
    mean_ = y.mean();
    sd_ = std::sqrt((y.array() - mean_).square().mean());
    if (!(sd_ > 1e-12)) sd_ = 1;
  }
  Eigen::VectorXd Of(const std::vector<const Observation*>& obs) const {
    Eigen::VectorXd y(static_cast<Eigen::Index>(obs.size()));
    for (size_t i = 0; i < obs.size(); ++i) y(static_cast<Eigen::Index>(i)) = (Compressed(*obs[i]->loss) - mean_) / sd_;
    return y;
  }

 private:
  double Compressed(double loss) const {
    const double z = (loss - med_) / scale_;
    return z > 2 ? 2 + std::log1p(z - 2) : z;  // compress the bad tail
  }
  double med_ = 0, scale_ = 1, mean_ = 0, sd_ = 1;
};

class GpSampler : public HistorySampler {
 public:
  explicit GpSampler(const SearchSpec& spec, std::optional<GpKernels> kernels = std::nullopt)
      : HistorySampler(spec), kernels_(std::move(kernels)) {
    const SamplerOptions& o = spec.sampler_options;
    max_history_ = static_cast<size_t>(o.max_history > 0 ? o.max_history : kDefaultMaxHistory);
    const int dims = static_cast<int>(unit().dims());
    startup_ = o.n_startup_trials > 0 ? o.n_startup_trials : std::clamp(2 * dims, 5, 20);
    for (size_t i = 0; i < unit().dims(); ++i) {
      offset_.push_back(features_);
      features_ += unit().choices(i) > 0 ? unit().choices(i) : 1;
    }
  }

 protected:
  void OnTold(const Observation& o) override {
    if (!o.loss) return;
    done_.Add(&o);
    if (o.number <= fit_last_) fit_dirty_ = true;
  }
  void OnForget(const Observation& o) override {
    if (!o.loss) return;
    done_.Remove(&o);
    if (o.number <= fit_last_) fit_dirty_ = true;
  }

 public:
  // The kernels fitted to every completed trial (at most max_history of them: Cap), as a refit would fit them.
  GpKernels FitAll() const {
    const std::vector<const Observation*> fit_set = Cap(done_.by_number());
    std::mt19937_64 fit_rng = TrialRng(seed(), static_cast<int64_t>(fit_set.size()), 0xf17);
    const Eigen::MatrixXd fx = Features(fit_set);
    GpKernels k;
    k.objective = FitGpHyper(fx, Targets(fit_set), GpFitOptions{}, fit_rng);
    if (std::any_of(fit_set.begin(), fit_set.end(), [](const Observation* o) { return o->violation > 0; })) {
      k.constraint = FitGpHyper(fx, Standardized(ConstraintValues(fit_set)), GpFitOptions{}, fit_rng);
    }
    return k;
  }

 protected:
  std::vector<double> Suggest(int64_t trial_number, const std::vector<const Observation*>& /*told*/,
                              const std::vector<const Observation*>& pending) override {
    if (done_.size() < static_cast<size_t>(startup_)) {
      std::vector<double> u = SobolPoint(static_cast<uint64_t>(trial_number));
      SnapAll(&u);
      return u;
    }
    std::mt19937_64 rng = TrialRng(seed(), trial_number, 0x69);
    // A warm start without a broken constraint: the stacked GPs, with kernels of their own (SuggestWarm).
    const auto& all = done_.by_number();
    if (all.front()->number < 0 &&
        std::none_of(all.begin(), all.end(), [](const Observation* o) { return o->violation > 0; })) {
      return SuggestWarm(trial_number, pending, rng);
    }

    // Hyperparameters: fitted on the first FitPoint(n) completed trials (capped), cached; that set changes only
    // when FitPoint moves or a trial among them is told (again).
    const size_t fit_n = FitPoint(done_.size());
    if (fit_n != fit_n_ || fit_dirty_) {
      const auto& done = done_.by_number();
      std::vector<const Observation*> fit_set =
          Cap(std::vector<const Observation*>(done.begin(), done.begin() + static_cast<long>(fit_n)));
      std::vector<int64_t> key;
      for (const Observation* o : fit_set) key.push_back(o->number);
      if (key != fit_key_) {
        Eigen::MatrixXd fx = Features(fit_set);
        std::mt19937_64 fit_rng = TrialRng(seed(), static_cast<int64_t>(key.size()), 0xf17);
        hyper_ = kernels_ ? kernels_->objective : FitGpHyper(fx, Targets(fit_set), GpFitOptions{}, fit_rng);
        // The constraint's own kernel, fitted on the same trials once any of them violates: a constraint's
        // length scales are not the objective's (a half-space is smooth where the objective is rugged).
        constraint_hyper_.reset();
        if (kernels_) {
          constraint_hyper_ = kernels_->constraint;
        } else if (std::any_of(fit_set.begin(), fit_set.end(), [](const Observation* o) { return o->violation > 0; })) {
          constraint_hyper_ = FitGpHyper(fx, Standardized(ConstraintValues(fit_set)), GpFitOptions{}, fit_rng);
        }
        fit_key_ = key;
      }
      fit_n_ = fit_n;
      fit_last_ = done[fit_n - 1]->number;
      fit_dirty_ = false;
    }

    std::vector<const Observation*> model_set = ModelSet();
    Eigen::MatrixXd x = Features(model_set);
    Eigen::VectorXd y = Targets(model_set);
    const bool violated =
        std::any_of(model_set.begin(), model_set.end(), [](const Observation* o) { return o->violation > 0; });
    Model model;
    GpPosterior& post = model.post;
    if (!post.Condition(x, y, hyper_)) return Fallback(trial_number);
    // Constraints: every trial stays in the objective's model, EI is taken against the best feasible one and
    // weighed by the chance of feasibility (Feasibility); with no feasible trial yet, that chance alone.
    std::optional<FeasibilityModel> feasibility;
    double best_y = y.minCoeff();
    if (violated) {
      feasibility = Feasibility(x, model_set);
      best_y = std::numeric_limits<double>::infinity();
      for (size_t i = 0; i < model_set.size(); ++i) {
        if (model_set[i]->violation <= 0) best_y = std::min(best_y, y(static_cast<Eigen::Index>(i)));
      }
    }
    if (!pending.empty()) {
      Eigen::MatrixXd xp = Features(pending);
      Eigen::VectorXd mp, vp;
      post.Predict(xp, &mp, &vp);
      Eigen::MatrixXd xa(x.rows() + xp.rows(), x.cols());
      xa << x, xp;
      Eigen::VectorXd ya(y.size() + mp.size());
      ya << y, mp;
      if (!post.Condition(xa, ya, hyper_)) return Fallback(trial_number);
    }

    return Maximize(model, model_set, best_y, feasibility ? &*feasibility : nullptr, rng);
  }

 private:
  // EI (times the chance of feasibility) maximized over the candidates (see the header comment).
  std::vector<double> Maximize(const Model& model, const std::vector<const Observation*>& model_set, double best_y,
                               const FeasibilityModel* feasible, std::mt19937_64& rng) const {
    std::vector<std::vector<double>> cand;
    for (int i = 0; i < kRandomCandidates; ++i) {
      std::vector<double> u(unit().dims());
      for (double& c : u) c = Uniform01(rng);
      SnapAll(&u);
      cand.push_back(std::move(u));
    }
    std::vector<const Observation*> by_loss = model_set;
    std::stable_sort(by_loss.begin(), by_loss.end(),
                     [](const Observation* a, const Observation* b) { return *a->loss < *b->loss; });
    for (size_t s = 0; s < by_loss.size() && s < static_cast<size_t>(kBestSeeds); ++s) {
      for (int i = 0; i < kPerturbPerSeed; ++i) cand.push_back(Perturb(by_loss[s]->u, 0.1, rng));
    }
    std::vector<double> ei = Ei(model, cand, best_y, feasible);
    for (double scale : kRefineScales) {
      std::vector<size_t> order(cand.size());
      std::iota(order.begin(), order.end(), 0);
      const size_t top = std::min<size_t>(kRefineSeeds, order.size());
      std::partial_sort(order.begin(), order.begin() + static_cast<long>(top), order.end(),
                        [&](size_t a, size_t b) { return ei[a] > ei[b]; });
      std::vector<std::vector<double>> local;
      for (size_t t = 0; t < top; ++t) {
        for (int i = 0; i < kRefinePerRound; ++i) local.push_back(Perturb(cand[order[t]], scale, rng));
      }
      std::vector<double> lei = Ei(model, local, best_y, feasible);
      cand.insert(cand.end(), local.begin(), local.end());
      ei.insert(ei.end(), lei.begin(), lei.end());
    }
    size_t best = static_cast<size_t>(std::max_element(ei.begin(), ei.end()) - ei.begin());
    return cand[best];
  }

  // The warm start's stacked GPs (see the header comment). Each side holds at most max_history_ of its trials
  // (Cap), so the earlier trials' GP is fitted once.
  std::vector<double> SuggestWarm(int64_t trial_number, const std::vector<const Observation*>& pending,
                                  std::mt19937_64& rng) {
    const auto& done = done_.by_number();
    const auto first_own = std::find_if(done.begin(), done.end(), [](const Observation* o) { return o->number >= 0; });
    const std::vector<const Observation*> warm = Cap({done.begin(), first_own}), own = Cap({first_own, done.end()});
    std::vector<const Observation*> model_set = warm;
    model_set.insert(model_set.end(), own.begin(), own.end());
    const TargetScale scale(warm);
    const Eigen::VectorXd yw = scale.Of(warm);
    const Eigen::MatrixXd xw = Features(warm), xo = Features(own);
    std::vector<int64_t> key;
    for (const Observation* o : warm) key.push_back(o->number);
    if (key != warm_key_) {
      std::mt19937_64 fit_rng = TrialRng(seed(), -static_cast<int64_t>(key.size()), 0x3a7);
      warm_hyper_ = FitGpHyper(xw, yw, GpFitOptions{}, fit_rng);
      warm_key_ = key;
    }
    Model model;
    GpPosterior prior;
    if (!prior.Condition(xw, yw, warm_hyper_)) return Fallback(trial_number);
    Eigen::VectorXd mean, var;
    if (own.empty()) {
      prior.Predict(xw, &mean, &var);
      model.post = std::move(prior);
      return Maximize(model, model_set, mean.minCoeff(), nullptr, rng);
    }
    // The residuals of the search's own trials from the earlier trials' mean; their GP's hyperparameters are fitted
    // on the first FitPoint(own) of them (cached, as the cold path's).
    prior.Predict(xo, &mean, &var);
    const Eigen::VectorXd yo = scale.Of(own);
    model.offset = (yo - mean).mean();
    const Eigen::VectorXd r = (yo - mean).array() - model.offset;
    const size_t fit_n = FitPoint(own.size());
    std::vector<int64_t> own_key;
    for (size_t i = 0; i < fit_n; ++i) own_key.push_back(own[i]->number);
    if (own_key != residual_key_ || key != residual_warm_key_) {
      std::mt19937_64 fit_rng = TrialRng(seed(), static_cast<int64_t>(fit_n), 0x7e5);
      const auto n = static_cast<Eigen::Index>(fit_n);
      residual_hyper_ = FitGpHyper(xo.topRows(n), r.head(n), GpFitOptions{}, fit_rng);
      residual_key_ = own_key, residual_warm_key_ = key;
    }
    if (!model.post.Condition(xo, r, residual_hyper_)) return Fallback(trial_number);
    if (!pending.empty()) {  // kriging believer on the residual
      const Eigen::MatrixXd xp = Features(pending);
      Eigen::VectorXd mp, vp;
      model.post.Predict(xp, &mp, &vp);
      Eigen::MatrixXd xa(xo.rows() + xp.rows(), xo.cols());
      xa << xo, xp;
      Eigen::VectorXd ra(r.size() + mp.size());
      ra << r, mp;
      if (!model.post.Condition(xa, ra, residual_hyper_)) return Fallback(trial_number);
    }
    model.prior = std::move(prior);
    return Maximize(model, model_set, yo.minCoeff(), nullptr, rng);
  }

  std::vector<double> Fallback(int64_t trial_number) {
    std::mt19937_64 rng = TrialRng(seed(), trial_number, 0xfa11);
    std::vector<double> u(unit().dims());
    for (double& c : u) c = Uniform01(rng);
    SnapAll(&u);
    return u;
  }

  // At most max_history_: the best quarter by loss (ties: the earlier trial), then the most recent; returned
  // in trial-number order. For the fit set (a prefix of the history, at refits only).
  std::vector<const Observation*> Cap(std::vector<const Observation*> obs) const {
    if (obs.size() <= max_history_) return obs;
    std::vector<const Observation*> by_loss = obs;
    std::stable_sort(by_loss.begin(), by_loss.end(),
                     [](const Observation* a, const Observation* b) { return *a->loss < *b->loss; });
    by_loss.resize(max_history_ / 4);
    return CapFrom(by_loss, obs);
  }
  // The same over every completed trial, from the maintained orders: O(max_history) per suggestion.
  std::vector<const Observation*> ModelSet() const {
    if (done_.size() <= max_history_) return done_.by_number();
    return CapFrom(done_.Best(max_history_ / 4), done_.by_number());
  }
  // `best`, then the most recent others of `obs` (trial-number order) up to max_history_, by trial number.
  std::vector<const Observation*> CapFrom(std::vector<const Observation*> keep,
                                          const std::vector<const Observation*>& obs) const {
    std::vector<int64_t> taken;
    for (const Observation* o : keep) taken.push_back(o->number);
    std::sort(taken.begin(), taken.end());
    for (size_t i = obs.size(); i-- > 0 && keep.size() < max_history_;) {
      if (!std::binary_search(taken.begin(), taken.end(), obs[i]->number)) keep.push_back(obs[i]);
    }
    std::sort(keep.begin(), keep.end(), [](const Observation* a, const Observation* b) { return a->number < b->number; });
    return keep;
  }

  void FeatureRow(const std::vector<double>& u, Eigen::MatrixXd& m, Eigen::Index r) const {
    auto row = m.row(r);
    row.setZero();
    for (size_t i = 0; i < unit().dims(); ++i) {
      const bool active = unit().ActiveUnder(i, u);
      const size_t k = unit().choices(i);
      if (k == 0) {
        row(static_cast<Eigen::Index>(offset_[i])) = active ? u[i] : 0.5;
      } else if (active) {
        size_t c = std::min(static_cast<size_t>(std::clamp(u[i], 0.0, 1.0) * static_cast<double>(k)), k - 1);
        row(static_cast<Eigen::Index>(offset_[i] + c)) = 1.0;
      }
    }
  }

  Eigen::MatrixXd Features(const std::vector<const Observation*>& obs) const {
    Eigen::MatrixXd x(static_cast<Eigen::Index>(obs.size()), static_cast<Eigen::Index>(features_));
    for (size_t r = 0; r < obs.size(); ++r) FeatureRow(obs[r]->u, x, static_cast<Eigen::Index>(r));
    return x;
  }

  static Eigen::VectorXd Targets(const std::vector<const Observation*>& obs) { return TargetScale(obs).Of(obs); }

  std::vector<double> Perturb(const std::vector<double>& base, double scale, std::mt19937_64& rng) const {
    std::vector<double> u = base;
    for (size_t i = 0; i < u.size(); ++i) {
      if (unit().choices(i) > 0) {
        if (Uniform01(rng) < 0.2) u[i] = Uniform01(rng);
      } else {
        u[i] = std::clamp(u[i] + scale * StandardNormal(rng), 0.0, 1.0);
      }
    }
    SnapAll(&u);
    return u;
  }

  // EI at each candidate; with constraints (`feasible`), times the chance the candidate is feasible (EI alone
  // when no trial is feasible yet: best = +inf).
  std::vector<double> Ei(const Model& model, const std::vector<std::vector<double>>& cand, double best,
                         const FeasibilityModel* feasible) const {
    Eigen::MatrixXd q(static_cast<Eigen::Index>(cand.size()), static_cast<Eigen::Index>(features_));
    for (size_t r = 0; r < cand.size(); ++r) FeatureRow(cand[r], q, static_cast<Eigen::Index>(r));
    Eigen::VectorXd mean, var, fmean, fvar;
    model.Predict(q, &mean, &var);
    if (feasible) feasible->post.Predict(q, &fmean, &fvar);
    std::vector<double> ei(cand.size());
    for (size_t r = 0; r < cand.size(); ++r) {
      const auto i = static_cast<Eigen::Index>(r);
      double sd = std::sqrt(var(i));
      double z = (best - mean(i)) / sd;
      ei[r] = std::isfinite(best) ? sd * (z * NormalCdf(z) + NormalPdf(z)) : 1.0;
      if (feasible) ei[r] *= NormalCdf((feasible->threshold - fmean(i)) / std::sqrt(fvar(i)));
    }
    return ei;
  }

  // The chance of feasibility: a GP (the objective's kernel) on the trials' largest signed constraint value,
  // standardized; feasible where it is at most 0 (the threshold, standardized alike).
  std::optional<FeasibilityModel> Feasibility(const Eigen::MatrixXd& x, const std::vector<const Observation*>& obs) const {
    FeasibilityModel m;
    const Eigen::VectorXd c = Standardized(ConstraintValues(obs), &m.threshold);
    if (!m.post.Condition(x, c, constraint_hyper_ ? *constraint_hyper_ : hyper_)) return std::nullopt;
    return m;
  }

  static Eigen::VectorXd ConstraintValues(const std::vector<const Observation*>& obs) {
    Eigen::VectorXd c(static_cast<Eigen::Index>(obs.size()));
    for (size_t i = 0; i < obs.size(); ++i) c(static_cast<Eigen::Index>(i)) = obs[i]->constraint;
    return c;
  }

  // c standardized; *zero (when given): where 0 lands on that scale (the feasibility threshold).
  static Eigen::VectorXd Standardized(const Eigen::VectorXd& c, double* zero = nullptr) {
    const double mean = c.mean();
    double sd = std::sqrt((c.array() - mean).square().mean());
    if (!(sd > 1e-12)) sd = 1;
    if (zero) *zero = -mean / sd;
    return ((c.array() - mean) / sd).matrix();
  }

  std::optional<GpKernels> kernels_;  // given (MakeGpSampler's): used as they are, never fitted
  size_t max_history_;
  int startup_;
  size_t features_ = 0;
  std::vector<size_t> offset_;
  std::vector<int64_t> fit_key_;
  GpHyper hyper_;
  std::optional<GpHyper> constraint_hyper_;  // the constraint's kernel (Feasibility), fitted with hyper_
  // A warm start's kernels (SuggestWarm): the earlier trials' GP, and the residuals' on this search's own trials,
  // with the trial numbers they were fitted on.
  GpHyper warm_hyper_, residual_hyper_;
  std::vector<int64_t> warm_key_, residual_key_, residual_warm_key_;
  CompletedTrials done_;  // kept as trials are told
  // The fit set's cache: FitPoint when last computed, the number of its last trial, and whether a trial at or
  // before that one was told since.
  size_t fit_n_ = 0;
  int64_t fit_last_ = -1;
  bool fit_dirty_ = false;
};

}  // namespace

std::unique_ptr<Sampler> MakeGpSampler(const SearchSpec& spec, std::optional<GpKernels> kernels) {
  return std::make_unique<GpSampler>(spec, std::move(kernels));
}

GpKernels FitGpKernels(const SearchSpec& spec, const std::vector<KernelTrial>& trials) {
  GpSampler gp(spec);
  for (size_t i = 0; i < trials.size(); ++i) {
    gp.TellConstrained(static_cast<int64_t>(i), trials[i].params, trials[i].loss, {trials[i].constraint});
  }
  return gp.FitAll();
}

size_t GpFitPoint(size_t completed) { return FitPoint(completed); }

}  // namespace ladder::search::internal
