#include "trainer/train_loop.h"

#include <torch/torch.h>

#include <filesystem>
#include <fstream>

#include "trainer/checkpoint.h"
#include "trainer/grad_reducer.h"
#include "trainer/noise_scale.h"
#include "trainer/optim.h"
#include "trainer/sample_stream.h"
#include "trainer/schedule.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>

namespace ladder::trainer {

namespace {

torch::nn::Sequential MakeMlp(int64_t in, int64_t classes, const TrainArgs& a) {
  torch::nn::Sequential net;
  int64_t width = in;
  for (int i = 0; i < a.depth; ++i) {
    net->push_back(torch::nn::Linear(width, a.width));
    net->push_back(torch::nn::ReLU());
    if (a.dropout > 0) net->push_back(torch::nn::Dropout(a.dropout));
    width = a.width;
  }
  net->push_back(torch::nn::Linear(width, classes));
  return net;
}

torch::Tensor Features(const Dataset& d) {
  return torch::from_blob(const_cast<float*>(d.x.data()), {d.rows, d.features}, torch::kFloat32).clone();
}
torch::Tensor Labels(const Dataset& d) {
  return torch::from_blob(const_cast<int64_t*>(d.y.data()), {d.rows}, torch::kInt64).clone();
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

}  // namespace

TrainResult Train(const TrainArgs& a, const Dataset& train, const Dataset& val, MetricsWriter& metrics,
                  comm::Communicator& comm) {
  TrainResult result;
  torch::manual_seed(a.seed);
  torch::set_num_threads(a.threads);
  auto net = MakeMlp(train.features, train.classes, a);
  const int world = comm.size(), rank = comm.rank();
  const bool leader = rank == 0;
  std::unique_ptr<GradientReducer> reducer;
  if (world > 1) {
    torch::NoGradGuard no_grad;
    for (auto& p : net->parameters()) comm.Broadcast(p, 0);
    reducer = std::make_unique<GradientReducer>(net->parameters(), comm,
                                                static_cast<int64_t>(a.bucket_cap_mb * 1024 * 1024));
  }
  std::string opt_error;
  auto opt = MakeOptimizer(OptimizerOptionsFrom(a), net->parameters(), &opt_error);
  if (!opt) {
    std::fprintf(stderr, "ladder-train: %s\n", opt_error.c_str());
    result.exit_code = 2;
    return result;
  }
  auto params = net->parameters();
  // Squared norm of each backward pass's gradient (hooks see a pass's gradient before it is accumulated).
  double pass_sq = 0;
  bool measure_noise = false;  // this step measures the noise scale
  for (auto& p : params) {
    p.register_hook([&pass_sq, &measure_noise](torch::Tensor g) {
      if (measure_noise) pass_sq += g.pow(2).sum().item<double>();
    });
  }
  NoiseScaleEstimator noise;
  const auto xtr = Features(train), ytr = Labels(train), xva = Features(val), yva = Labels(val);
  const int64_t n = train.rows;
  const int64_t base_global = a.batch_size * world;
  auto global_at = [&](int64_t s) { return GlobalBatchAt(base_global, a.batch_ramp, s); };
  if (base_global > n) {
    std::fprintf(stderr, "ladder-train: the global batch (%lld) is larger than the training set (%lld rows)\n",
                 static_cast<long long>(base_global), static_cast<long long>(n));
    result.exit_code = 2;
    return result;
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
  TrainPosition start;
  if (a.resume && std::filesystem::exists(a.checkpoint)) {
    std::string err;
    if (!LoadCheckpoint(a.checkpoint, params, *opt, noise, &start, &err)) {
      std::fprintf(stderr, "ladder-train: %s\n", err.c_str());
      result.exit_code = 2;
      return result;
    }
    step = start.step;
    allreduce_s = start.allreduce_s;
    stream.Seek(start.epoch, start.offset);
    if (leader) {
      std::fprintf(stderr, "ladder-train: resumed from %s at step %lld (epoch %lld, sample %lld)\n",
                   a.checkpoint.c_str(), static_cast<long long>(step), static_cast<long long>(start.epoch),
                   static_cast<long long>(start.offset));
    }
  }
  auto checkpoint = [&] {
    if (!leader || a.checkpoint.empty()) return true;
    std::string err;
    if (!SaveCheckpoint(a.checkpoint, params, *opt, noise, {step, stream.epoch(), stream.offset(), allreduce_s},
                        &err)) {
      std::fprintf(stderr, "ladder-train: %s\n", err.c_str());
      return false;
    }
    return true;
  };
  auto epoch_t0 = std::chrono::steady_clock::now();
  int64_t epoch_samples = 0, epoch_steps = 0;
  net->train();
  while (stream.Remaining(a.epochs) >= global_at(step) && !(a.max_steps > 0 && step >= a.max_steps)) {
    const int64_t global = global_at(step);
    int epochs_done = 0;
    const auto batch = stream.Next(global, &epochs_done);
    // This rank's share of the global batch: positions rank, rank + world, ...
    std::vector<int64_t> mine;
    for (size_t i = static_cast<size_t>(rank); i < batch.size(); i += static_cast<size_t>(world)) mine.push_back(batch[i]);
    const auto idx = torch::tensor(mine, torch::kInt64);
    const int64_t len = idx.size(0), micro = a.micro_batches, mlen = len / micro;
    measure_noise = world * micro > 1 && a.noise_scale_every > 0 && step % a.noise_scale_every == 0;
    opt->ZeroGrad();
    if (reducer) reducer->Prepare();
    torch::Tensor loss = torch::zeros({});
    double small_sq = 0;  // Σ over micro-batches of ‖g_micro‖²
    for (int64_t m = 0; m < micro; ++m) {
      auto midx = idx.narrow(0, m * mlen, m + 1 == micro ? len - m * mlen : mlen);
      if (reducer) reducer->SetFinalMicroBatch(m + 1 == micro);
      pass_sq = 0;
      // Weighted by its share, so the accumulated gradient is the mean over the whole batch.
      const double share = static_cast<double>(midx.size(0)) / static_cast<double>(len);
      auto ml = torch::nn::functional::cross_entropy(net->forward(xtr.index_select(0, midx)),
                                                     ytr.index_select(0, midx)) * share;
      ml.backward();
      small_sq += pass_sq / (share * share);  // this pass's gradient is share · g_micro
      loss = loss + ml.detach();
    }
    if (reducer) allreduce_s += reducer->Finish();
    if (measure_noise) {
      if (world > 1) {
        auto t = torch::tensor({small_sq}, torch::kFloat64);
        comm.AllreduceSum(t)->Wait();
        small_sq = t.item<double>();
      }
      double big_sq = 0;
      for (const auto& p : params) {
        if (p.grad().defined()) big_sq += p.grad().pow(2).sum().item<double>();
      }
      noise.Add(small_sq / static_cast<double>(world * micro), len / micro, big_sq, global);
    }
    if (a.clip_grad_norm > 0) grad_norm = ClipGradNorm(params, a.clip_grad_norm);
    lr = LearningRate(ScaledPeakLr(a.lr, global, a.reference_batch, a.lr_scaling), sched, step);
    opt->Step(lr);
    ++step;
    ++epoch_steps;
    epoch_samples += global;
    const double l = loss.item<double>();
    const double epoch_pos = static_cast<double>(stream.epoch()) + static_cast<double>(stream.offset()) / n;
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
    const bool last = stream.Remaining(a.epochs) < global_at(step) || (a.max_steps > 0 && step >= a.max_steps);
    if (epochs_done == 0 && !last) continue;
    // An epoch ended (or the run does): evaluate on rank 0.
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_t0).count();
    if (leader) {
      torch::NoGradGuard no_grad;
      net->eval();
      auto train_loss = torch::nn::functional::cross_entropy(net->forward(xtr), ytr).item<double>();
      auto val_logits = net->forward(xva);
      double val_loss = torch::nn::functional::cross_entropy(val_logits, yva).item<double>();
      double acc = val_logits.argmax(1).eq(yva).to(torch::kFloat64).mean().item<double>();
      net->train();
      result.final_val_loss = val_loss;
      result.final_val_accuracy = acc;
      metrics.Write(step, {{"epoch", epoch_pos},
                           {"train_loss", train_loss},
                           {"val_loss", val_loss},
                           {"val_accuracy", acc},
                           {"samples_per_s", secs > 0 ? epoch_samples / secs : 0.0},
                           {"step_time_s", epoch_steps > 0 ? secs / static_cast<double>(epoch_steps) : 0.0},
                           {"ranks", static_cast<double>(world)},
                           {"allreduce_s", allreduce_s}});
      if (!std::isfinite(val_loss)) {
        std::fprintf(stderr, "ladder-train: validation loss is not finite; training diverged\n");
        result.exit_code = 3;
        return result;
      }
    }
    epoch_samples = 0;
    epoch_steps = 0;
    epoch_t0 = std::chrono::steady_clock::now();
  }
  if (!checkpoint()) result.exit_code = 1;
  if (leader && !a.save_params.empty()) {
    std::ofstream out(a.save_params, std::ios::binary);
    for (const auto& p : net->parameters()) {
      auto c = p.detach().to(torch::kFloat32).contiguous();
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
