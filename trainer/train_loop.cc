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

namespace ladder::trainer {

namespace {

// All rows as one CPU tensor shaped [rows, sample shape...] (features) or [rows, label_size] (labels).
torch::Tensor Features(const Dataset& d) {
  std::vector<int64_t> shape = {d.rows};
  for (int64_t s : d.SampleShape()) shape.push_back(s);
  return torch::from_blob(const_cast<float*>(d.x.data()), shape, torch::kFloat32).clone();
}
torch::Tensor Labels(const Dataset& d) {
  return torch::from_blob(const_cast<int64_t*>(d.y.data()), {d.rows, d.label_size}, torch::kInt64).clone();
}

OptimizerOptions OptimizerOptionsFrom(const TrainArgs& a) {
  OptimizerOptions o;
  o.name = a.optimizer;
  o.momentum = a.momentum;
  o.nesterov = a.nesterov;
  o.weight_decay = a.weight_decay;
  o.trust_coefficient = a.trust_coefficient;
  o.larc_mode = a.larc_mode;
  return o;
}

ScheduleOptions ScheduleFrom(const TrainArgs& a, int64_t total_steps) {
  ScheduleOptions s;
  s.warmup_steps = a.warmup_steps;
  s.decay = a.decay;
  s.milestones = a.milestones;
  s.gamma = a.gamma;
  s.final_lr_fraction = a.final_lr_fraction;
  s.decay_fraction = a.wsd_decay_fraction;
  s.total_steps = total_steps;
  return s;
}

ModelOptions ModelOptionsFrom(const TrainArgs& a, const Dataset& d) {
  ModelOptions m;
  m.name = a.model.empty() ? DefaultModelFor(d) : a.model;
  m.width = a.width;
  m.depth = a.depth;
  m.dropout = a.dropout;
  m.heads = a.heads;
  return m;
}

// --device: cuda:LOCAL_RANK (modulo the GPUs there are) when asked for or, with auto, when one is there.
bool PickDevice(const std::string& want, int local_rank, torch::Device* out, std::string* error) {
  const bool have = torch::cuda::is_available();
  if (want == "cuda" && !have) {
    *error = "--device cuda: no CUDA device is visible to this ladder-train (or it was built with a CPU LibTorch)";
    return false;
  }
  if (want == "cpu" || !have) {
    *out = torch::kCPU;
    return true;
  }
  const auto n = static_cast<int>(torch::cuda::device_count());
  *out = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(local_rank % n));
  return true;
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

TrainResult Fail(int code, const std::string& message) {
  std::fprintf(stderr, "ladder-train: %s\n", message.c_str());
  TrainResult r;
  r.exit_code = code;
  return r;
}

}  // namespace

TrainResult Train(const TrainArgs& a, const Dataset& train, const Dataset& val, MetricsWriter& metrics,
                  comm::Communicator& comm) {
  TrainResult result;
  torch::manual_seed(a.seed);
  torch::set_num_threads(a.threads);
  SetBlasThreads(a.threads);  // OpenBLAS's pool is its own: one thread per core unless told
  const int world = comm.size(), rank = comm.rank();
  const bool leader = rank == 0;
  std::string error;
  torch::Device device = torch::kCPU;
  if (!PickDevice(a.device, comm.local_rank(), &device, &error)) return Fail(2, error);
  if (comm.backend().rfind("nccl", 0) == 0 && !device.is_cuda()) return Fail(2, "--comm nccl needs a CUDA device (--device cuda)");
  if (comm.backend() == "shm" && device.is_cuda()) {
    return Fail(2, "--comm shm works on CPU tensors; use --comm nccl (or gloo) with --device cuda");
  }
  if (comm.backend().rfind("mpi", 0) == 0 && device.is_cuda()) {
    return Fail(2, "--comm mpi works on CPU tensors here; use --comm nccl (or gloo) with --device cuda");
  }
  const bool bf16 = a.precision == "bf16";
  auto net = MakeNetwork(ModelOptionsFrom(a, train), train, &error);
  if (!net) return Fail(2, error);
  net->to(device);
  LossSpec loss_spec;
  loss_spec.task = train.task;
  if (!ClassWeights(a.class_weights, train, &loss_spec.class_weights, &error)) return Fail(2, error);
  if (loss_spec.class_weights.defined()) loss_spec.class_weights = loss_spec.class_weights.to(device);

  auto params = net->parameters();
  std::unique_ptr<GradientReducer> reducer;
  if (world > 1) {
    torch::NoGradGuard no_grad;
    for (auto& p : params) comm.Broadcast(p, 0);
    const bool overlap = OverlapAllreduce(a, device);
    const auto cap = static_cast<int64_t>(a.bucket_cap_mb * 1024 * 1024);
    // Without overlap nothing starts early: no small first bucket either.
    reducer = std::make_unique<GradientReducer>(params, comm, cap, overlap ? kDefaultFirstBucketCapBytes : cap,
                                                overlap);
  }
  // The fused MLP step (fused_mlp.h) replaces autograd's forward and backward where it computes the same thing.
  std::unique_ptr<FusedMlpStep> fused;
  if (a.fused == "auto" && ModelOptionsFrom(a, train).name == "mlp" && a.dropout == 0 && device.is_cpu() && !bf16 &&
      train.task == Task::kClassify && a.micro_batches == 1) {
    std::string why;
    fused = FusedMlpStep::Make(params, train.features, &why);
  }
  auto opt = MakeOptimizer(OptimizerOptionsFrom(a), params, &error);
  if (!opt) return Fail(2, error);
  // Squared norm of each backward pass's gradient (tensor hooks see a pass's gradient before it is accumulated).
  double pass_sq = 0;
  bool measure_noise = false;  // this step measures the noise scale
  for (auto& p : params) {
    p.register_hook([&pass_sq, &measure_noise](torch::Tensor g) {
      if (measure_noise) pass_sq += g.to(torch::kFloat64).pow(2).sum().item<double>();
    });
  }
  NoiseScaleEstimator noise;
  const auto xtr = Features(train), ytr = Labels(train), xva = Features(val), yva = Labels(val);
  const int64_t n = train.rows;
  // The fixed sample the curvature is measured on (rank 0 only: every rank holds the same parameters).
  torch::Tensor xcurv, ycurv;
  if (a.curvature_every > 0 && leader) {
    const int64_t rows = std::min<int64_t>(a.curvature_rows, n);
    xcurv = xtr.narrow(0, 0, rows).to(device);
    ycurv = ytr.narrow(0, 0, rows).to(device);
  }
  const int64_t base_global = static_cast<int64_t>(a.batch_size) * world;
  auto global_at = [&](int64_t s) { return GlobalBatchAt(base_global, a.batch_ramp, s); };
  if (base_global > n) {
    return Fail(2, "the global batch (" + std::to_string(base_global) + ") is larger than the training set (" +
                       std::to_string(n) + " rows)");
  }
  SampleStream stream(n, a.seed);
  // Steps in the whole run (for cosine and WSD): every full global batch until the epochs are done.
  int64_t total_steps = 0;
  for (int64_t left = n * a.epochs; left >= global_at(total_steps) && !(a.max_steps > 0 && total_steps >= a.max_steps);
       ++total_steps) {
    left -= global_at(total_steps);
  }
  const ScheduleOptions sched = ScheduleFrom(a, total_steps);
  int64_t step = 0;
  double allreduce_s = 0, lr = a.lr, grad_norm = 0;
  TrainPosition pos;  // of the next sample, for checkpoints
  if (a.resume && std::filesystem::exists(a.checkpoint)) {
    if (!LoadCheckpoint(a.checkpoint, params, *opt, noise, &pos, &error)) return Fail(2, error);
    step = pos.step;
    allreduce_s = pos.allreduce_s;
    stream.Seek(pos.epoch, pos.offset);
    if (leader) {
      std::fprintf(stderr, "ladder-train: resumed from %s at step %lld (epoch %lld, sample %lld)\n",
                   a.checkpoint.c_str(), static_cast<long long>(step), static_cast<long long>(pos.epoch),
                   static_cast<long long>(pos.offset));
    }
  }
  auto checkpoint = [&] {
    if (!leader || a.checkpoint.empty()) return true;
    pos.step = step;
    pos.allreduce_s = allreduce_s;
    std::string unused;  // a LADDER_ASSIGNMENT_EPOCH that is not a number was refused at start (main.cc)
    const int64_t run_epoch = std::max<int64_t>(0, RunEpochFromEnvironment(&unused));
    if (!SaveCheckpoint(a.checkpoint, params, *opt, noise, pos, &error, run_epoch)) {
      std::fprintf(stderr, "ladder-train: %s\n", error.c_str());
      return false;
    }
    return true;
  };
  PrefetchOptions po;
  po.depth = PrefetchDepth(a, device);
  po.rank = rank;
  po.world = world;
  po.epochs = a.epochs;
  po.max_steps = a.max_steps;
  po.pin_memory = device.is_cuda();
  BatchPrefetcher batches(xtr, ytr, stream, step, global_at, po);
  // Each rank's loss is scaled by 1/world so that the allreduced sum of gradients is their mean.
  const double rank_scale = reducer ? 1.0 / world : 1.0;
  auto epoch_t0 = std::chrono::steady_clock::now();
  double epoch_allreduce_s0 = allreduce_s;  // allreduce_s when this epoch (or evaluation period) began
  int64_t epoch_samples = 0, epoch_steps = 0, run_steps = 0;
  PhaseTimes phases;
  net->train();
  StopRequest stop(comm, device);
  for (;;) {
    // A SIGTERM/SIGUSR1 (preemption, a stopping worker, a Slurm time limit): the ranks agree on this step, rank 0
    // saves the checkpoint, and the run ends with 128 + the signal; --resume goes on from here.
    if (!a.checkpoint.empty() && stop.Due(step)) {
      if (!stop.AllSaved(checkpoint())) {
        return Fail(1, "stopped by a signal at step " + std::to_string(step) + " without a checkpoint");
      }
      if (leader) {
        std::fprintf(stderr, "ladder-train: stopped by signal %d at step %lld; checkpoint saved to %s\n",
                     StopRequest::Signal(), static_cast<long long>(step), a.checkpoint.c_str());
      }
      if (a.phase_times) phases.Print(rank, run_steps);
      result.exit_code = stop.ExitCode();
      return result;
    }
    auto batch = batches.Next();
    if (!batch) break;
    phases.Mark(PhaseTimes::kData);
    ++run_steps;
    const int64_t global = batch->global;
    const auto xb = batch->x.to(device, /*non_blocking=*/true), yb = batch->y.to(device, /*non_blocking=*/true);
    const int64_t len = xb.size(0), micro = a.micro_batches, mlen = len / micro;
    measure_noise = world * micro > 1 && a.noise_scale_every > 0 && step % a.noise_scale_every == 0;
    // The fused step writes the gradients over the last step's: nothing to zero first.
    if (reducer) {
      if (!fused) reducer->ZeroGrad();
      reducer->Prepare();
    } else if (!fused) {
      opt->ZeroGrad();
    }
    torch::Tensor loss;
    double small_sq = 0;  // Σ over micro-batches of ‖g_micro‖²
    if (fused) {
      phases.Mark(PhaseTimes::kRest);
      loss = torch::scalar_tensor(fused->Step(xb, yb, rank_scale, /*accumulate=*/false), torch::kFloat64);
      phases.Mark(PhaseTimes::kBackward);  // forward and backward, one pass
      if (measure_noise) {  // one pass (one micro-batch): its gradient is all of .grad before the allreduce
        pass_sq = 0;
        for (const auto& p : params) pass_sq += p.grad().to(torch::kFloat64).pow(2).sum().item<double>();
        small_sq = pass_sq / (rank_scale * rank_scale);
      }
    } else {
      loss = torch::zeros({}, torch::TensorOptions().device(device));
    }
    for (int64_t m = 0; m < micro && !fused; ++m) {
      const int64_t mstart = m * mlen, mcount = m + 1 == micro ? len - m * mlen : mlen;
      if (reducer) reducer->SetFinalMicroBatch(m + 1 == micro);
      pass_sq = 0;
      // Weighted by its share, so the accumulated gradient is the mean over the whole batch.
      const double share = static_cast<double>(mcount) / static_cast<double>(len);
      torch::Tensor ml;
      phases.Mark(PhaseTimes::kRest);
      {
        AutocastScope autocast(device, bf16);
        ml = TaskLoss(net->forward(xb.narrow(0, mstart, mcount)), yb.narrow(0, mstart, mcount), loss_spec);
      }
      phases.Mark(PhaseTimes::kForward);
      (ml * (share * rank_scale)).backward();
      phases.Mark(PhaseTimes::kBackward);
      // This pass's gradient is share · rank_scale · g_micro.
      if (measure_noise) small_sq += pass_sq / std::pow(share * rank_scale, 2);
      loss = loss + ml.detach() * share;
    }
    phases.Mark(PhaseTimes::kRest);
    if (reducer) allreduce_s += reducer->Finish();
    phases.Mark(PhaseTimes::kAllreduce);
    if (measure_noise) {
      if (world > 1) {
        auto t = torch::tensor({small_sq}, torch::TensorOptions().dtype(torch::kFloat64).device(device));
        comm.AllreduceSum(t)->Wait();
        small_sq = t.item<double>();
      }
      double big_sq = 0;
      for (const auto& p : params) {
        if (p.grad().defined()) big_sq += p.grad().to(torch::kFloat64).pow(2).sum().item<double>();
      }
      noise.Add(small_sq / static_cast<double>(world * micro), len / micro, big_sq, global);
    }
    if (xcurv.defined() && step % a.curvature_every == 0) {
      if (auto c = MeasureCurvature(*net, params, xcurv, ycurv, loss_spec, /*power_iterations=*/10)) {
        metrics.Write(step, {{"grad_curvature", c->along_gradient}, {"sharpness", c->sharpness}});
      }
    }
    phases.Mark(PhaseTimes::kNoise);
    if (a.clip_grad_norm > 0) grad_norm = ClipGradNorm(params, a.clip_grad_norm);
    lr = LearningRate(ScaledPeakLr(a.lr, global, a.reference_batch, a.lr_scaling), sched, step);
    opt->Step(lr);
    phases.Mark(PhaseTimes::kOptimizer);
    ++step;
    ++epoch_steps;
    epoch_samples += global;
    pos.epoch = batch->epoch_after;
    pos.offset = batch->offset_after;
    const double l = loss.item<double>();
    const double epoch_pos = static_cast<double>(pos.epoch) + static_cast<double>(pos.offset) / static_cast<double>(n);
    if (!std::isfinite(l)) {
      if (leader) metrics.Write(step, {{"epoch", epoch_pos}, {"train_loss", l}});
      std::fprintf(stderr, "ladder-train: training diverged at step %lld (loss is %f); try a smaller --lr\n",
                   static_cast<long long>(step), l);
      result.exit_code = 3;
      return result;
    }
    if (step % a.log_every == 0) {
      result.train_losses.push_back(l);
      std::vector<std::pair<std::string, double>> values = {
          {"epoch", epoch_pos}, {"train_loss", l}, {"lr", lr}, {"global_batch", static_cast<double>(global)}};
      if (a.clip_grad_norm > 0) values.emplace_back("grad_norm", grad_norm);
      if (auto ns = noise.BSimple()) values.emplace_back("noise_scale", *ns);
      if (leader) metrics.Write(step, values);
    }
    if (a.checkpoint_every > 0 && step % a.checkpoint_every == 0 && !checkpoint()) {
      result.exit_code = 1;
      return result;
    }
    phases.Mark(PhaseTimes::kRest);
    const bool epoch_end = batch->epochs_completed > 0 || batch->last;
    if (!epoch_end && !(a.eval_every > 0 && step % a.eval_every == 0)) continue;
    // An epoch ended (or the run does, or --eval-every says so): evaluate on rank 0.
    if (device.is_cuda()) torch::cuda::synchronize();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_t0).count();
    std::vector<std::pair<std::string, double>> values;  // rank 0's evaluation line
    if (leader) {
      EvalOptions eo;
      eo.device = device;
      eo.bf16 = bf16;
      eo.max_rows = a.eval_train_rows;
      const auto tr = eo.max_rows == 0 ? std::map<std::string, double>{} : Evaluate(*net, xtr, ytr, loss_spec, train.classes, eo);
      eo.max_rows = 0;
      const auto va = Evaluate(*net, xva, yva, loss_spec, train.classes, eo);
      result.final_val_loss = va.at("loss");
      result.final_val_accuracy = va.at("accuracy");
      // An evaluation line counts whole epochs done (the batch that ended the epoch may reach into the next).
      // The last batch of a run that went through every epoch may leave a partial batch out: that is all epochs.
      const bool all_epochs = batch->last && (a.max_steps == 0 || step < a.max_steps);
      const double epochs_done = all_epochs ? static_cast<double>(a.epochs)
                                 : epoch_end ? std::floor(epoch_pos + 1e-9)
                                             : epoch_pos;  // --eval-every: the fraction of the epochs done
      values.emplace_back("epoch", epochs_done);
      if (!tr.empty()) values.emplace_back("train_loss", tr.at("loss"));
      values.emplace_back("val_loss", va.at("loss"));
      values.emplace_back("val_accuracy", va.at("accuracy"));
      if (va.count("miou")) values.emplace_back("val_miou", va.at("miou"));
      if (va.count("perplexity")) values.emplace_back("val_perplexity", va.at("perplexity"));
      values.emplace_back("samples_per_s", secs > 0 ? static_cast<double>(epoch_samples) / secs : 0.0);
      values.emplace_back("step_time_s", epoch_steps > 0 ? secs / static_cast<double>(epoch_steps) : 0.0);
      values.emplace_back("ranks", static_cast<double>(world));
      values.emplace_back("global_batch", static_cast<double>(batch->global));  // a scale resource for ASHA
      values.emplace_back("allreduce_s", allreduce_s);
    }
    // Each rank's seconds per step outside the gradient allreduce waits (compute and data): a straggler's is the
    // largest. Gathered by every rank at this same point, after rank 0's evaluation, so that every rank's next
    // period starts at this sync point and none holds the evaluation. (With nccl the waits do not block the host:
    // allreduce_s stays near 0 and each rank's value holds its waits too.)
    if (world > 1) {
      const double own = secs - (allreduce_s - epoch_allreduce_s0);
      const auto per_rank = GatherPerRank(comm, device, epoch_steps > 0 ? own / static_cast<double>(epoch_steps) : 0.0);
      for (int r = 0; leader && r < world; ++r) {
        values.emplace_back("step_time_s/rank" + std::to_string(r), per_rank[r]);
      }
    }
    if (leader) {
      metrics.Write(step, values);
      if (!std::isfinite(result.final_val_loss)) {
        std::fprintf(stderr, "ladder-train: validation loss is not finite; training diverged\n");
        result.exit_code = 3;
        return result;
      }
    }
    epoch_samples = 0;
    epoch_steps = 0;
    epoch_allreduce_s0 = allreduce_s;
    epoch_t0 = std::chrono::steady_clock::now();
    phases.Mark(PhaseTimes::kEval);
  }
  if (a.phase_times) phases.Print(rank, run_steps);
  if (!checkpoint()) result.exit_code = 1;
  if (leader && !a.save_predictions.empty()) {
    EvalOptions eo;
    eo.device = device;
    eo.bf16 = bf16;
    std::string perr;
    if (!SavePredictions(*net, xva, yva, loss_spec, eo, a.save_predictions, &perr)) {
      std::fprintf(stderr, "ladder-train: %s\n", perr.c_str());
      result.exit_code = 1;
    }
  }
  if (leader && !a.save_params.empty()) {
    std::ofstream out(a.save_params, std::ios::binary);
    for (const auto& p : net->parameters()) {
      auto c = p.detach().to(torch::kCPU, torch::kFloat32).contiguous();
      out.write(reinterpret_cast<const char*>(c.data_ptr<float>()), static_cast<std::streamsize>(c.numel() * 4));
    }
    if (!out) {
      std::fprintf(stderr, "ladder-train: cannot write %s\n", a.save_params.c_str());
      result.exit_code = 1;
    }
  }
  return result;
}

}  // namespace ladder::trainer
