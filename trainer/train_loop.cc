#include "trainer/blas_threads.h"
#include "trainer/train_loop.h"

#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trainer/batch_prefetcher.h"
#include "trainer/checkpoint.h"
#include "trainer/checkpoint_epoch.h"
#include "trainer/curvature.h"
#include "trainer/fused_mlp.h"
#include "trainer/predictions.h"
#include "trainer/grad_reducer.h"
#include "trainer/models.h"
#include "trainer/noise_scale.h"
#include "trainer/optim.h"
#include "trainer/overlap_rule.h"
#include "trainer/sample_stream.h"
#include "trainer/schedule.h"
#include "trainer/stop_request.h"
#include "trainer/task.h"
#include "trainer/train_options.h"

namespace ladder::trainer {

namespace {

// All rows as one CPU tensor shaped [rows, sample shape...] (features) or [rows, label_size] (labels).
torch::Tensor Features(const Dataset& d) {
  std::vector<int64_t> shape = {d.rows};
  for (int64_t s : d.SampleShape()) shape.push_back(s);
  return torch::from_blob(const_cast<float*>(d.x.data()), shape, torch::kFloat32).clone();
}
torch::Tensor Labels(const Dataset& d) {
  if (d.task == Task::kRegress) {
    return torch::from_blob(const_cast<float*>(d.targets.data()), {d.rows, d.label_size}, torch::kFloat32).clone();
  }
  return torch::from_blob(const_cast<int64_t*>(d.y.data()), {d.rows, d.label_size}, torch::kInt64).clone();
}

// Where a rank's wall time goes, phase by phase (--phase-times). Mark(p) charges the time since the previous
// mark to phase p; a mark costs one clock read, so the loop always keeps the account.
class PhaseTimes {
 public:
  enum Phase { kData, kForward, kBackward, kAllreduce, kNoise, kOptimizer, kRest, kEval, kCount };
  void Mark(Phase p) {
    const auto now = std::chrono::steady_clock::now();
    total_[p] += std::chrono::duration<double>(now - last_).count();
    last_ = now;
  }
  void Print(int rank, int64_t steps) const {
    static constexpr const char* kNames[kCount] = {"data",        "forward",   "backward", "allreduce_wait",
                                                   "noise_scale", "optimizer", "rest",     "eval"};
    const double per = steps > 0 ? 1e3 / static_cast<double>(steps) : 0.0;
    double sum = 0;
    std::string line;
    for (int p = 0; p < kEval; ++p) {
      sum += total_[p];
      line += std::string(" ") + kNames[p] + " " + std::to_string(total_[p] * per);
    }
    std::fprintf(stderr, "ladder-train: rank %d phase times over %lld steps (ms per step):%s; step %.3f; eval %.1f ms in all\n",
                 rank, static_cast<long long>(steps), line.c_str(), sum * per, total_[kEval] * 1e3);
  }

 private:
  std::array<double, kCount> total_{};
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

// Every rank's `own` value, on every rank: one allreduce-sum of a world-size float64 vector in which each rank
// fills its own slot. A collective: every rank calls it at the same point of the loop (once per evaluation, never
// per step). The vector lives on `device`, as the backend wants (nccl: CUDA; mpi: CPU).
std::vector<double> GatherPerRank(comm::Communicator& comm, const torch::Device& device, double own) {
  auto host = torch::zeros({comm.size()}, torch::kFloat64);
  host[comm.rank()] = own;
  auto t = host.to(device);
  comm.AllreduceSum(t)->Wait();
  const auto back = t.to(torch::kCPU).contiguous();
  return std::vector<double>(back.data_ptr<double>(), back.data_ptr<double>() + back.numel());
}

using Values = std::vector<std::pair<std::string, double>>;

// One call of Train: the state its steps share, each step a method. Run() reads as the run goes: set up, resume,
// then per batch one optimizer step and, at an epoch's end, an evaluation; then the checkpoint and outputs.
class TrainRun {
 public:
  TrainRun(const TrainArgs& a, const Dataset& train, const Dataset& val, MetricsWriter& metrics,
           comm::Communicator& comm)
      : a_(a), train_(train), val_(val), metrics_(metrics), comm_(comm), world_(comm.size()), rank_(comm.rank()),
        leader_(rank_ == 0), bf16_(a.precision == "bf16") {}

  TrainResult Run() {
    torch::manual_seed(a_.seed);
    torch::set_num_threads(a_.threads);
    SetBlasThreads(a_.threads);  // OpenBLAS's pool is its own: one thread per core unless told
    if (!PickDeviceForBackend() || !BuildModel() || !BuildStep() || !PlanSteps() || !Resume()) return result_;
    StartLoop();
    for (;;) {
      if (StoppedBySignal()) return result_;
      auto batch = batches_->Next();
      if (!batch) break;
      if (!TrainStep(*batch)) return result_;
      const bool epoch_end = batch->epochs_completed > 0 || batch->last;
      if (!epoch_end && !(a_.eval_every > 0 && step_ % a_.eval_every == 0)) continue;
      if (!EvaluatePeriod(*batch, epoch_end)) return result_;
    }
    Finish();
    return result_;
  }

 private:
  // Says `message`; the run ends with `code` and nothing else in its result.
  bool Fail(int code, const std::string& message) {
    std::fprintf(stderr, "ladder-train: %s\n", message.c_str());
    result_ = TrainResult{};
    result_.exit_code = code;
    return false;
  }

  // The device, and whether the collective backend works on it.
  bool PickDeviceForBackend() {
    std::string error;
    if (!PickDevice(a_.device, comm_.local_rank(), &device_, &error)) return Fail(2, error);
    const std::string backend = comm_.backend();
    if (backend.rfind("nccl", 0) == 0 && !device_.is_cuda()) {
      return Fail(2, "--comm nccl needs a CUDA device (--device cuda)");
    }
    if (backend == "shm" && device_.is_cuda()) {
      return Fail(2, "--comm shm works on CPU tensors; use --comm nccl (or gloo) with --device cuda");
    }
    if (backend.rfind("mpi", 0) == 0 && device_.is_cuda()) {
      return Fail(2, "--comm mpi works on CPU tensors here; use --comm nccl (or gloo) with --device cuda");
    }
    return true;
  }

  // The network on its device and the loss it is trained on.
  bool BuildModel() {
    std::string error;
    net_ = MakeNetwork(ModelOptionsFrom(a_, train_), train_, &error);
    if (!net_) return Fail(2, error);
    net_->to(device_);
    loss_spec_.task = train_.task;
    loss_spec_.regression_loss = a_.loss;
    if (!ClassWeights(a_.class_weights, train_, &loss_spec_.class_weights, &error)) return Fail(2, error);
    if (loss_spec_.class_weights.defined()) loss_spec_.class_weights = loss_spec_.class_weights.to(device_);
    params_ = net_->parameters();
    state_ = params_;
    for (const auto& b : net_->buffers()) state_.push_back(b);  // a TorchScript model's batch-norm statistics
    return true;
  }

  // What a step runs: the gradient reducer (more than one rank, after rank 0's parameters are broadcast), the
  // fused MLP step where it computes the same thing as autograd, the optimizer, and the hooks that measure each
  // backward pass's gradient for the noise scale (they see a pass's gradient before it is accumulated).
  bool BuildStep() {
    if (world_ > 1) {
      torch::NoGradGuard no_grad;
      for (auto& p : state_) comm_.Broadcast(p, 0);
      const bool overlap = OverlapAllreduce(a_, device_);
      const auto cap = static_cast<int64_t>(a_.bucket_cap_mb * 1024 * 1024);
      // Without overlap nothing starts early: no small first bucket either.
      reducer_ = std::make_unique<GradientReducer>(params_, comm_, cap, overlap ? kDefaultFirstBucketCapBytes : cap,
                                                   overlap);
    }
    if (a_.fused == "auto" && ModelOptionsFrom(a_, train_).name == "mlp" && a_.dropout == 0 && device_.is_cpu() &&
        !bf16_ && train_.task == Task::kClassify && a_.micro_batches == 1) {
      std::string why;
      fused_ = FusedMlpStep::Make(params_, train_.features, &why);
    }
    std::string error;
    opt_ = MakeOptimizer(OptimizerOptionsFrom(a_, net_->NoWeightDecay()), params_, &error);
    if (!opt_) return Fail(2, error);
    for (auto& p : params_) {
      p.register_hook([this](torch::Tensor g) {
        if (measure_noise_) pass_sq_ += g.to(torch::kFloat64).pow(2).sum().item<double>();
      });
    }
    return true;
  }

  int64_t GlobalAt(int64_t step) const { return GlobalBatchAt(base_global_, a_.batch_ramp, step); }

  // The data as tensors, the curvature's fixed sample (rank 0 only: every rank holds the same parameters), the
  // global batch against the training set, and the steps of the whole run (every full global batch until the
  // epochs are done; cosine and WSD need them) with the schedule over them.
  bool PlanSteps() {
    xtr_ = Features(train_), ytr_ = Labels(train_), xva_ = Features(val_), yva_ = Labels(val_);
    n_ = train_.rows;
    if (a_.curvature_every > 0 && leader_) {
      const int64_t rows = std::min<int64_t>(a_.curvature_rows, n_);
      xcurv_ = xtr_.narrow(0, 0, rows).to(device_);
      ycurv_ = ytr_.narrow(0, 0, rows).to(device_);
    }
    base_global_ = static_cast<int64_t>(a_.batch_size) * world_;
    // A sharded training set (every rank its own rows, the same count) is walked by each rank on its own: the
    // stream is over its rows and each step takes the next global/world of them.
    const int64_t shard = train_.shard_world > 1 ? world_ : 1;
    if (base_global_ / shard > n_) {
      return Fail(2, "the global batch (" + std::to_string(base_global_) + ") is larger than the training set (" +
                         std::to_string(n_ * shard) + " rows)");
    }
    stream_.emplace(n_, a_.seed);
    int64_t total_steps = 0;
    for (int64_t left = n_ * a_.epochs;
         left >= GlobalAt(total_steps) / shard && !(a_.max_steps > 0 && total_steps >= a_.max_steps); ++total_steps) {
      left -= GlobalAt(total_steps) / shard;
    }
    sched_ = ScheduleFrom(a_, total_steps);
    lr_ = a_.lr;
    return true;
  }

  // --resume with a checkpoint there: the parameters, the optimizer, the noise estimate and the place in the data.
  bool Resume() {
    if (!a_.resume || !std::filesystem::exists(a_.checkpoint)) return true;
    std::string error;
    if (!LoadCheckpoint(a_.checkpoint, state_, *opt_, noise_, &pos_, &error)) return Fail(2, error);
    step_ = pos_.step;
    allreduce_s_ = pos_.allreduce_s;
    stream_->Seek(pos_.epoch, pos_.offset);
    if (leader_) {
      std::fprintf(stderr, "ladder-train: resumed from %s at step %lld (epoch %lld, sample %lld)\n",
                   a_.checkpoint.c_str(), static_cast<long long>(step_), static_cast<long long>(pos_.epoch),
                   static_cast<long long>(pos_.offset));
    }
    return true;
  }

  // Rank 0 saves the checkpoint where one is asked for; false when it could not.
  bool SaveIfAsked() {
    if (!leader_ || a_.checkpoint.empty()) return true;
    pos_.step = step_;
    pos_.allreduce_s = allreduce_s_;
    std::string unused, error;  // a LADDER_ASSIGNMENT_EPOCH that is not a number was refused at start (main.cc)
    const int64_t run_epoch = std::max<int64_t>(0, RunEpochFromEnvironment(&unused));
    if (!SaveCheckpoint(a_.checkpoint, state_, *opt_, noise_, pos_, &error, run_epoch)) {
      std::fprintf(stderr, "ladder-train: %s\n", error.c_str());
      return false;
    }
    return true;
  }

  void StartLoop() {
    PrefetchOptions po;
    po.depth = PrefetchDepth(a_, device_);
    po.rank = rank_;
    po.world = world_;
    po.epochs = a_.epochs;
    po.max_steps = a_.max_steps;
    po.pin_memory = device_.is_cuda();
    po.local_shard = train_.shard_world > 1;
    batches_ = std::make_unique<BatchPrefetcher>(xtr_, ytr_, *stream_, step_,
                                                 [this](int64_t s) { return GlobalAt(s); }, po);
    // Each rank's loss is scaled by 1/world so that the allreduced sum of gradients is their mean.
    rank_scale_ = reducer_ ? 1.0 / world_ : 1.0;
    epoch_t0_ = std::chrono::steady_clock::now();
    epoch_allreduce_s0_ = allreduce_s_;
    phases_ = PhaseTimes{};  // the first step's data phase starts here, not at set-up
    net_->train();
    stop_ = std::make_unique<StopRequest>(comm_, device_);
  }

  // A SIGTERM/SIGUSR1 (preemption, a stopping worker, a Slurm time limit): the ranks agree on this step, rank 0
  // saves the checkpoint, and the run ends with 128 + the signal; --resume goes on from here. True: it ended.
  bool StoppedBySignal() {
    if (a_.checkpoint.empty() || !stop_->Due(step_)) return false;
    if (!stop_->AllSaved(SaveIfAsked())) {
      Fail(1, "stopped by a signal at step " + std::to_string(step_) + " without a checkpoint");
      return true;
    }
    if (leader_) {
      std::fprintf(stderr, "ladder-train: stopped by signal %d at step %lld; checkpoint saved to %s\n",
                   StopRequest::Signal(), static_cast<long long>(step_), a_.checkpoint.c_str());
    }
    if (a_.phase_times) phases_.Print(rank_, run_steps_);
    result_.exit_code = stop_->ExitCode();
    return true;
  }

  // One optimizer step on `batch`; false when the run ends here (diverged, a checkpoint not written).
  bool TrainStep(const Batch& batch) {
    phases_.Mark(PhaseTimes::kData);
    ++run_steps_;
    const auto xb = batch.x.to(device_, /*non_blocking=*/true), yb = batch.y.to(device_, /*non_blocking=*/true);
    measure_noise_ =
        world_ * a_.micro_batches > 1 && a_.noise_scale_every > 0 && step_ % a_.noise_scale_every == 0;
    double small_sq = 0;  // Σ over micro-batches of ‖g_micro‖²
    const torch::Tensor loss = ForwardBackward(xb, yb, &small_sq);
    phases_.Mark(PhaseTimes::kRest);
    if (reducer_) allreduce_s_ += reducer_->Finish();
    phases_.Mark(PhaseTimes::kAllreduce);
    if (measure_noise_) AddNoiseSample(small_sq, xb.size(0), batch.global);
    if (xcurv_.defined() && step_ % a_.curvature_every == 0) {
      if (auto c = MeasureCurvature(*net_, params_, xcurv_, ycurv_, loss_spec_, /*power_iterations=*/10)) {
        metrics_.Write(step_, {{"grad_curvature", c->along_gradient}, {"sharpness", c->sharpness}});
      }
    }
    phases_.Mark(PhaseTimes::kNoise);
    if (a_.clip_grad_norm > 0) grad_norm_ = ClipGradNorm(params_, a_.clip_grad_norm);
    lr_ = LearningRate(ScaledPeakLr(a_.lr, batch.global, a_.reference_batch, a_.lr_scaling), sched_, step_);
    opt_->Step(lr_);
    phases_.Mark(PhaseTimes::kOptimizer);
    ++step_;
    ++epoch_steps_;
    epoch_samples_ += batch.global;
    pos_.epoch = batch.epoch_after;
    pos_.offset = batch.offset_after;
    if (!RecordStep(loss.item<double>(), batch.global)) return false;
    phases_.Mark(PhaseTimes::kRest);
    return true;
  }

  // Forward and backward over the micro-batches, or the fused step: the batch's mean loss. When this step
  // measures the noise scale, *small_sq gets the sum over passes of each pass's squared gradient norm.
  torch::Tensor ForwardBackward(const torch::Tensor& xb, const torch::Tensor& yb, double* small_sq) {
    // The fused step writes the gradients over the last step's: nothing to zero first.
    if (reducer_) {
      if (!fused_) reducer_->ZeroGrad();
      reducer_->Prepare();
    } else if (!fused_) {
      opt_->ZeroGrad();
    }
    if (fused_) {
      phases_.Mark(PhaseTimes::kRest);
      auto loss = torch::scalar_tensor(fused_->Step(xb, yb, rank_scale_, /*accumulate=*/false), torch::kFloat64);
      phases_.Mark(PhaseTimes::kBackward);  // forward and backward, one pass
      if (measure_noise_) {  // one pass (one micro-batch): its gradient is all of .grad before the allreduce
        pass_sq_ = 0;
        for (const auto& p : params_) pass_sq_ += p.grad().to(torch::kFloat64).pow(2).sum().item<double>();
        *small_sq = pass_sq_ / (rank_scale_ * rank_scale_);
      }
      return loss;
    }
    const int64_t len = xb.size(0), micro = a_.micro_batches, mlen = len / micro;
    torch::Tensor loss = torch::zeros({}, torch::TensorOptions().device(device_));
    for (int64_t m = 0; m < micro; ++m) {
      const int64_t mstart = m * mlen, mcount = m + 1 == micro ? len - m * mlen : mlen;
      if (reducer_) reducer_->SetFinalMicroBatch(m + 1 == micro);
      pass_sq_ = 0;
      // Weighted by its share, so the accumulated gradient is the mean over the whole batch.
      const double share = static_cast<double>(mcount) / static_cast<double>(len);
      torch::Tensor ml;
      phases_.Mark(PhaseTimes::kRest);
      {
        AutocastScope autocast(device_, bf16_);
        ml = NetworkLoss(*net_, xb.narrow(0, mstart, mcount), yb.narrow(0, mstart, mcount), loss_spec_);
      }
      phases_.Mark(PhaseTimes::kForward);
      (ml * (share * rank_scale_)).backward();
      phases_.Mark(PhaseTimes::kBackward);
      // This pass's gradient is share · rank_scale · g_micro.
      if (measure_noise_) *small_sq += pass_sq_ / std::pow(share * rank_scale_, 2);
      loss = loss + ml.detach() * share;
    }
    return loss;
  }

  // The noise scale's sample of this step: the passes' squared norms summed over ranks, and the whole batch's.
  void AddNoiseSample(double small_sq, int64_t len, int64_t global) {
    const int64_t micro = a_.micro_batches;
    if (world_ > 1) {
      auto t = torch::tensor({small_sq}, torch::TensorOptions().dtype(torch::kFloat64).device(device_));
      comm_.AllreduceSum(t)->Wait();
      small_sq = t.item<double>();
    }
    double big_sq = 0;
    for (const auto& p : params_) {
      if (p.grad().defined()) big_sq += p.grad().to(torch::kFloat64).pow(2).sum().item<double>();
    }
    noise_.Add(small_sq / static_cast<double>(world_ * micro), len / micro, big_sq, global);
  }

  double EpochPosition() const {
    return static_cast<double>(pos_.epoch) + static_cast<double>(pos_.offset) / static_cast<double>(n_);
  }

  // The step's loss: a diverged run ends (exit 3); a metrics line every --log-every steps; a checkpoint every
  // --checkpoint-every steps (exit 1 when it cannot be written).
  bool RecordStep(double l, int64_t global) {
    const double epoch_pos = EpochPosition();
    if (!std::isfinite(l)) {
      if (leader_) metrics_.Write(step_, {{"epoch", epoch_pos}, {"train_loss", l}});
      std::fprintf(stderr, "ladder-train: training diverged at step %lld (loss is %f); try a smaller --lr\n",
                   static_cast<long long>(step_), l);
      result_.exit_code = 3;
      return false;
    }
    if (step_ % a_.log_every == 0) {
      result_.train_losses.push_back(l);
      Values values = {{"epoch", epoch_pos}, {"train_loss", l}, {"lr", lr_}, {"global_batch", static_cast<double>(global)}};
      if (a_.clip_grad_norm > 0) values.emplace_back("grad_norm", grad_norm_);
      if (auto ns = noise_.BSimple()) values.emplace_back("noise_scale", *ns);
      if (leader_) metrics_.Write(step_, values);
    }
    if (a_.checkpoint_every > 0 && step_ % a_.checkpoint_every == 0 && !SaveIfAsked()) {
      result_.exit_code = 1;
      return false;
    }
    return true;
  }

  // An epoch ended (or the run does, or --eval-every says so): rank 0 evaluates and writes the line, with every
  // rank's seconds per step. False when the validation loss is not finite (exit 3).
  bool EvaluatePeriod(const Batch& batch, bool epoch_end) {
    if (device_.is_cuda()) torch::cuda::synchronize();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_t0_).count();
    Values values;  // rank 0's evaluation line
    if (leader_) values = Evaluation(batch, epoch_end, secs);
    // Each rank's seconds per step outside the gradient allreduce waits (compute and data): a straggler's is the
    // largest. Gathered by every rank at this same point, after rank 0's evaluation, so that every rank's next
    // period starts at this sync point and none holds the evaluation. (With nccl the waits do not block the host:
    // allreduce_s stays near 0 and each rank's value holds its waits too.)
    if (world_ > 1) {
      const double own = secs - (allreduce_s_ - epoch_allreduce_s0_);
      const auto per_rank =
          GatherPerRank(comm_, device_, epoch_steps_ > 0 ? own / static_cast<double>(epoch_steps_) : 0.0);
      for (int r = 0; leader_ && r < world_; ++r) values.emplace_back("step_time_s/rank" + std::to_string(r), per_rank[r]);
    }
    if (leader_) {
      metrics_.Write(step_, values);
      if (!std::isfinite(result_.final_val_loss)) {
        std::fprintf(stderr, "ladder-train: validation loss is not finite; training diverged\n");
        result_.exit_code = 3;
        return false;
      }
    }
    epoch_samples_ = 0;
    epoch_steps_ = 0;
    epoch_allreduce_s0_ = allreduce_s_;
    epoch_t0_ = std::chrono::steady_clock::now();
    phases_.Mark(PhaseTimes::kEval);
    return true;
  }

  // Rank 0's evaluation line: the losses and accuracy (on a sample of the training set with --eval-train-rows),
  // the period's throughput, and the result's final validation figures.
  Values Evaluation(const Batch& batch, bool epoch_end, double secs) {
    EvalOptions eo;
    eo.device = device_;
    eo.bf16 = bf16_;
    eo.max_rows = a_.eval_train_rows;
    const auto tr =
        eo.max_rows == 0 ? std::map<std::string, double>{} : Evaluate(*net_, xtr_, ytr_, loss_spec_, train_.classes, eo);
    eo.max_rows = 0;
    const auto va = Evaluate(*net_, xva_, yva_, loss_spec_, train_.classes, eo);
    result_.final_val_loss = va.at("loss");
    result_.final_val_accuracy = va.count("accuracy") ? va.at("accuracy") : 0.0;
    // An evaluation line counts whole epochs done (the batch that ended the epoch may reach into the next).
    // The last batch of a run that went through every epoch may leave a partial batch out: that is all epochs.
    const double epoch_pos = EpochPosition();
    const bool all_epochs = batch.last && (a_.max_steps == 0 || step_ < a_.max_steps);
    const double epochs_done = all_epochs ? static_cast<double>(a_.epochs)
                               : epoch_end ? std::floor(epoch_pos + 1e-9)
                                           : epoch_pos;  // --eval-every: the fraction of the epochs done
    Values values;
    values.emplace_back("epoch", epochs_done);
    if (!tr.empty()) values.emplace_back("train_loss", tr.at("loss"));
    values.emplace_back("val_loss", va.at("loss"));
    for (const char* key : {"accuracy", "r2", "mae", "miou", "perplexity"}) {  // those the task has (task.h)
      if (va.count(key)) values.emplace_back(std::string("val_") + key, va.at(key));
    }
    values.emplace_back("samples_per_s", secs > 0 ? static_cast<double>(epoch_samples_) / secs : 0.0);
    values.emplace_back("step_time_s", epoch_steps_ > 0 ? secs / static_cast<double>(epoch_steps_) : 0.0);
    values.emplace_back("ranks", static_cast<double>(world_));
    values.emplace_back("global_batch", static_cast<double>(batch.global));  // a scale resource for ASHA
    values.emplace_back("allreduce_s", allreduce_s_);
    return values;
  }

  // The run went through its steps: the phase times, the last checkpoint, and the outputs asked for (exit 1
  // when one cannot be written).
  void Finish() {
    if (a_.phase_times) phases_.Print(rank_, run_steps_);
    if (!SaveIfAsked()) result_.exit_code = 1;
    if (leader_ && !a_.save_predictions.empty()) {
      EvalOptions eo;
      eo.device = device_;
      eo.bf16 = bf16_;
      std::string perr;
      if (!SavePredictions(*net_, xva_, yva_, loss_spec_, eo, a_.save_predictions, &perr)) {
        std::fprintf(stderr, "ladder-train: %s\n", perr.c_str());
        result_.exit_code = 1;
      }
    }
    const auto per_rank = a_.save_params.find("{rank}");  // every rank writes its own file
    if ((leader_ || per_rank != std::string::npos) && !a_.save_params.empty()) {
      std::ofstream out(per_rank == std::string::npos
                            ? a_.save_params
                            : std::string(a_.save_params).replace(per_rank, 6, std::to_string(rank_)),
                        std::ios::binary);
      for (const auto& p : net_->parameters()) {
        auto c = p.detach().to(torch::kCPU, torch::kFloat32).contiguous();
        out.write(reinterpret_cast<const char*>(c.data_ptr<float>()), static_cast<std::streamsize>(c.numel() * 4));
      }
      if (!out) {
        std::fprintf(stderr, "ladder-train: cannot write %s\n", a_.save_params.c_str());
        result_.exit_code = 1;
      }
    }
  }

  const TrainArgs& a_;
  const Dataset& train_;
  const Dataset& val_;
  MetricsWriter& metrics_;
  comm::Communicator& comm_;
  const int world_, rank_;
  const bool leader_, bf16_;
  TrainResult result_;
  torch::Device device_ = torch::kCPU;
  std::shared_ptr<Network> net_;
  LossSpec loss_spec_;
  std::vector<torch::Tensor> params_, state_;  // state_: the parameters, then the buffers
  std::unique_ptr<GradientReducer> reducer_;
  std::unique_ptr<FusedMlpStep> fused_;
  std::unique_ptr<Optimizer> opt_;
  double pass_sq_ = 0;         // squared norm of the last backward pass's gradient (the hooks add to it)
  bool measure_noise_ = false;  // this step measures the noise scale
  NoiseScaleEstimator noise_;
  torch::Tensor xtr_, ytr_, xva_, yva_, xcurv_, ycurv_;
  int64_t n_ = 0, base_global_ = 0;
  std::optional<SampleStream> stream_;
  ScheduleOptions sched_;
  int64_t step_ = 0;
  double allreduce_s_ = 0, lr_ = 0, grad_norm_ = 0;
  TrainPosition pos_;  // of the next sample, for checkpoints
  std::unique_ptr<BatchPrefetcher> batches_;
  double rank_scale_ = 1;
  std::chrono::steady_clock::time_point epoch_t0_;
  double epoch_allreduce_s0_ = 0;  // allreduce_s when this epoch (or evaluation period) began
  int64_t epoch_samples_ = 0, epoch_steps_ = 0, run_steps_ = 0;
  PhaseTimes phases_;
  std::unique_ptr<StopRequest> stop_;
};

}  // namespace

TrainResult Train(const TrainArgs& a, const Dataset& train, const Dataset& val, MetricsWriter& metrics,
                  comm::Communicator& comm) {
  return TrainRun(a, train, val, metrics, comm).Run();
}

}  // namespace ladder::trainer
