#include "trainer/train_loop.h"

#include <torch/torch.h>

#include <filesystem>
#include <fstream>

#include "trainer/checkpoint.h"
#include "trainer/grad_reducer.h"
#include "trainer/noise_scale.h"
#include "trainer/optim.h"
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
  OptimizerOptions oo;
  oo.name = a.optimizer;
  oo.momentum = a.momentum;
  oo.nesterov = a.nesterov;
  oo.weight_decay = a.weight_decay;
  oo.trust_coefficient = a.trust_coefficient;
  oo.larc_mode = a.larc_mode;
  std::string opt_error;
  auto opt = MakeOptimizer(oo, net->parameters(), &opt_error);
  if (!opt) {
    std::fprintf(stderr, "ladder-train: %s\n", opt_error.c_str());
    result.exit_code = 2;
    return result;
  }
  auto params = net->parameters();
  // Squared norm of each backward pass's gradient (hooks see a pass's gradient before it is accumulated).
  double pass_sq = 0;
  for (auto& p : params) {
    p.register_hook([&pass_sq](torch::Tensor g) { pass_sq += g.pow(2).sum().item<double>(); });
  }
  NoiseScaleEstimator noise;
  const auto xtr = Features(train), ytr = Labels(train), xva = Features(val), yva = Labels(val);
  const int64_t n = train.rows;
  const int64_t local = a.batch_size;
  const int64_t global = std::min<int64_t>(local * world, n);
  const int64_t steps_per_epoch = world > 1 ? n / global : (n + global - 1) / global;
  if (steps_per_epoch == 0) {
    std::fprintf(stderr, "ladder-train: the global batch (%lld) is larger than the training set (%lld rows)\n",
                 static_cast<long long>(local * world), static_cast<long long>(n));
    result.exit_code = 2;
    return result;
  }
  std::vector<int64_t> order(static_cast<size_t>(n));
  int64_t step = 0;
  double allreduce_s = 0;
  ScheduleOptions sched;
  sched.warmup_steps = a.warmup_steps;
  sched.decay = a.decay;
  sched.milestones = a.milestones;
  sched.gamma = a.gamma;
  sched.final_lr_fraction = a.final_lr_fraction;
  sched.decay_fraction = a.wsd_decay_fraction;
  sched.total_steps = a.max_steps > 0 ? std::min<int64_t>(a.max_steps, steps_per_epoch * a.epochs)
                                      : steps_per_epoch * a.epochs;
  const double peak_lr = ScaledPeakLr(a.lr, global, a.reference_batch, a.lr_scaling);
  double lr = peak_lr, grad_norm = 0;
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
    if (leader) {
      std::fprintf(stderr, "ladder-train: resumed from %s at step %lld (epoch %lld, batch %lld)\n",
                   a.checkpoint.c_str(), static_cast<long long>(step), static_cast<long long>(start.epoch),
                   static_cast<long long>(start.batch));
    }
  }
  auto checkpoint = [&](int64_t epoch, int64_t next_batch) {
    if (!leader || a.checkpoint.empty()) return true;
    TrainPosition pos{step, epoch, next_batch, allreduce_s};
    if (next_batch >= steps_per_epoch) pos.epoch = epoch + 1, pos.batch = 0;
    std::string err;
    if (!SaveCheckpoint(a.checkpoint, params, *opt, noise, pos, &err)) {
      std::fprintf(stderr, "ladder-train: %s\n", err.c_str());
      return false;
    }
    return true;
  };
  int64_t last_epoch = start.epoch, last_batch = start.batch;
  for (int64_t epoch = start.epoch; epoch < a.epochs; ++epoch) {
    auto t0 = std::chrono::steady_clock::now();
    std::iota(order.begin(), order.end(), 0);
    std::mt19937_64 rng(a.seed * 1000003ULL + static_cast<uint64_t>(epoch));
    std::shuffle(order.begin(), order.end(), rng);
    auto perm = torch::from_blob(order.data(), {n}, torch::kInt64);
    net->train();
    int64_t seen = 0;
    for (int64_t b = epoch == start.epoch ? start.batch : 0; b < steps_per_epoch; ++b) {
      const int64_t from = b * global, glen = std::min(global, n - from);
      // This rank's share of global batch b: positions rank, rank + world, ...
      auto idx = world > 1 ? perm.narrow(0, from, glen).slice(0, rank, glen, world) : perm.narrow(0, from, glen);
      const int64_t len = idx.size(0);
      const int64_t micro = a.micro_batches, mlen = len / micro;
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
      if (world * micro > 1) {
        if (world > 1) {
          auto t = torch::tensor({small_sq}, torch::kFloat64);
          comm.AllreduceSum(t)->Wait();
          small_sq = t.item<double>();
        }
        double big_sq = 0;
        for (const auto& p : params) {
          if (p.grad().defined()) big_sq += p.grad().pow(2).sum().item<double>();
        }
        noise.Add(small_sq / static_cast<double>(world * micro), len / micro, big_sq, len * world);
      }
      if (a.clip_grad_norm > 0) grad_norm = ClipGradNorm(params, a.clip_grad_norm);
      lr = LearningRate(peak_lr, sched, step);
      opt->Step(lr);
      ++step;
      seen += len * world;
      double l = loss.item<double>();
      if (!std::isfinite(l)) {
        metrics.Write(step, {{"epoch", epoch + static_cast<double>(b + 1) / steps_per_epoch}, {"train_loss", l}});
        std::fprintf(stderr, "ladder-train: training diverged at step %lld (loss is %f); try a smaller --lr\n",
                     static_cast<long long>(step), l);
        result.exit_code = 3;
        return result;
      }
      if (step % a.log_every == 0) {
        result.train_losses.push_back(l);
        std::vector<std::pair<std::string, double>> values = {
            {"epoch", epoch + static_cast<double>(b + 1) / steps_per_epoch}, {"train_loss", l}, {"lr", lr}};
        if (a.clip_grad_norm > 0) values.emplace_back("grad_norm", grad_norm);
        if (auto ns = noise.BSimple()) values.emplace_back("noise_scale", *ns);
        if (leader) metrics.Write(step, values);
      }
      last_epoch = epoch;
      last_batch = b + 1;
      if (a.checkpoint_every > 0 && step % a.checkpoint_every == 0 && !checkpoint(epoch, b + 1)) {
        result.exit_code = 1;
        return result;
      }
      if (a.max_steps > 0 && step >= a.max_steps) break;
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!leader) {
      if (a.max_steps > 0 && step >= a.max_steps) break;
      continue;
    }
    net->eval();
    torch::NoGradGuard no_grad;  // until the end of this epoch's iteration
    auto train_loss = torch::nn::functional::cross_entropy(net->forward(xtr), ytr).item<double>();
    auto val_logits = net->forward(xva);
    double val_loss = torch::nn::functional::cross_entropy(val_logits, yva).item<double>();
    double acc = val_logits.argmax(1).eq(yva).to(torch::kFloat64).mean().item<double>();
    result.final_val_loss = val_loss;
    result.final_val_accuracy = acc;
    metrics.Write(step, {{"epoch", epoch + 1.0},
                         {"train_loss", train_loss},
                         {"val_loss", val_loss},
                         {"val_accuracy", acc},
                         {"samples_per_s", secs > 0 ? seen / secs : 0.0},
                         {"ranks", static_cast<double>(world)},
                         {"allreduce_s", allreduce_s}});
    if (!std::isfinite(val_loss)) {
      std::fprintf(stderr, "ladder-train: validation loss is not finite; training diverged\n");
      result.exit_code = 3;
      return result;
    }
    if (a.max_steps > 0 && step >= a.max_steps) break;
  }
  if (!checkpoint(last_epoch, last_batch)) result.exit_code = 1;
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
