#include "trainer/args.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>

namespace ladder::trainer {

namespace {

bool ToDouble(const std::string& s, double* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

bool ToInt(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

std::string FormatNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::vector<std::string> SplitCommas(const std::string& v) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t comma = v.find(',', start);
    out.push_back(v.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

}  // namespace

std::string Usage() {
  return R"(usage: ladder-train [options]
Trains a network by synchronous data-parallel SGD and prints metrics as JSON lines on stdout (docs/METRICS.md).

  --data SOURCE        CSV or CSV.gz: numeric features, integer class label (0..K-1) last; an optional
                       header line is skipped (default: the shipped digits data); or idx:IMAGES,LABELS
                       (MNIST IDX), cifar10:FILE[,FILE..] (CIFAR-10 binary), synthetic:ROWS[:FEATURES[:CLASSES]]
                       (Gaussian mixture), teacher:ROWS[:FEATURES[:CLASSES[:LABEL_NOISE[:RANK]]]] (a fixed
                       random teacher MLP labels Gaussian inputs; LABEL_NOISE: fraction of labels replaced by
                       another class, default 0; RANK: the inputs' effective rank, default FEATURES; defaults
                       32 features, 10 classes), climate:ROWS[:SIZE] (16-channel fields with cyclones and
                       atmospheric rivers, per-pixel labels), cosmo:ROWS[:SIZE] (SIZE^3 density volumes of
                       Gaussian random fields; regress the power spectrum's amplitude and slope),
                       markov:ROWS[:SEQ[:VOCAB]] (token sequences), text:PATH (a file's bytes as tokens),
                       hdf5:FILE[:X,Y] (datasets X and Y, default x and y, of an HDF5 file: X float [N,F],
                       [N,C,H,W] or [N,C,D,H,W]; Y integer [N] classes, integer [N,H,W] pixel classes, or
                       float [N] or [N,K] regression targets; at several ranks each reads only its rows)
  --model NAME         mlp | cnn (small ResNet, 3D on volumes) | unet (segmentation) | transformer (causal
                       LM); default: unet for climate:, cnn for cosmo:, transformer for token data, mlp otherwise;
                       torchscript:FILE: your own module saved by torch.jit.save (docs/guide/training.md)
  --input-shape C,H,W  reshape vector samples (CSV) into images, e.g. 1,8,8 for the digits (for cnn), or
                       C,D,H,W into volumes (the cnn is then 3D)
  --loss NAME          regression loss: mse | l1 | huber (default mse); val_mae and val_r2 are reported
  --val-fraction F     held-out fraction, split with a fixed seed (default 0.2)
  --width N            mlp hidden units, cnn/unet first-stage channels, transformer model width (default 128)
  --depth N            mlp hidden layers, cnn stages, unet convs per level, transformer blocks (default 2)
  --heads N            transformer attention heads (default 4)
  --seq-len N          tokens per sample for text: (and markov: unless given there) (default 64)
  --dropout P          dropout (after hidden layers, before the cnn head, on attention) 0 <= P < 1 (default 0)
  --class-weights W    segmentation loss weights: auto (inverse square root of the class frequency),
                       none, or a comma list (default auto)
  --device NAME        auto | cpu | cuda (default auto: cuda:LOCAL_RANK when a GPU is there)
  --precision P        fp32 | bf16 (bf16 autocast for forward and loss; fp32 master weights) (default fp32)
  --prefetch N         batches assembled ahead on a background thread, 0 = off (default: 2 on GPUs and on CPU
                       ranks with a core beyond their --threads, else 0, as --overlap auto)
  --eval-train-rows N  training rows evaluated at each epoch end for train_loss (default 10000)
  --eval-every N       also evaluate every N steps (default 0: only at epoch ends); such a line's epoch is
                       the fraction of the epochs done
  --optimizer NAME     sgd | adam | adamw | lars | larc | lamb (default sgd)
  --lr X               (peak) learning rate > 0 (default 0.05)
  --momentum X         SGD/LARS momentum, 0 <= X < 1 (default 0.9)
  --nesterov           Nesterov momentum
  --weight-decay X     >= 0, never on biases and norm parameters (default 0)
  --larc-mode MODE     clip | scale (default clip)
  --trust-coefficient X  LARS/LARC eta (default 0.001)
  --clip-grad-norm X   clip the global gradient norm to X (default 0: off)
  --warmup-steps N     linear warmup (default 0)
  --warmup-fraction X  linear warmup over this share of the run's steps, 0 <= X < 1, instead of --warmup-steps
                       (it scales with the run: a probe at 16x the batch has 1/16 of the steps)
  --decay NAME         none | step | cosine | wsd (default none)
  --milestones A,B,..  steps where the step decay multiplies by --gamma (default 0.1)
  --final-lr-fraction X  cosine/wsd end at X x peak (default 0)
  --wsd-decay-fraction X  wsd decays over the last X of the steps (default 0.2)
  --lr-scaling RULE    none | linear | sqrt: scale --lr from --reference-batch to the global batch
  --reference-batch N  the global batch --lr was tuned at
  --batch-size N       >= 1 (default 64)
  --epochs N           >= 1 (default 10)
  --max-steps N        stop after N optimizer steps, 0 = no cap (default 0)
  --seed N             initialization and shuffling seed (default 0)
  --threads N          intra-op threads (default 1)
  --log-every N        a train_loss line every N steps (default 10); it carries the smoothed gradient
                       noise scale B_simple when the step has more than one micro-batch or rank
  --noise-scale-every N  measure the gradient noise scale on every Nth step (default 10; 0: off). It
                       costs a squared norm per gradient and, with several ranks, one scalar allreduce
  --curvature-every N  on every Nth step (default 0: never) rank 0 measures the loss curvature on the first
                       --curvature-rows training rows (default 1024) with exact Hessian-vector products:
                       grad_curvature (along the gradient; 1/it is McCandlish's eps_max) and sharpness
                       (the top Hessian eigenvalue, 10 power iterations), on a line of their own. It
                       costs 12 double-backward passes over those rows (about 0.6 s for 1,024 rows of the
                       default MLP on one core)
  --micro-batches M    gradient accumulation: split each rank's batch into M equal micro-batches
  --accumulate K       K times as many micro-batches again (M x K in all; default 1): what a scale sweep's
                       command writes as --accumulate {micro_batches}, so that a probe at K times the swept
                       batch runs micro-batches the size of the sweep's on the sweep's nodes
  --batch-ramp S:K,..  batch-size ramp: from step S on, the global batch is K x the base (the sample order
                       stays exact: every step takes the next samples of the same stream)
  --comm NAME          collectives: auto | none | gloo | shm | mpi | nccl (default auto: nccl on GPUs, mpi
                       under mpirun/srun, shm when all WORLD_SIZE > 1 ranks are on this node (shared memory),
                       gloo when WORLD_SIZE > 1, else none). --batch-size is per rank.
  --bucket-cap-mb X    gradient bucket size for the overlapped allreduce (default 25)
  --fused MODE         auto | off: train a plain MLP (no dropout, fp32 CPU, classification, one micro-batch) with
                       a fused forward and backward pass of BLAS calls instead of autograd (default auto)
  --overlap MODE       auto | on | off: start each bucket's allreduce during the backward pass (on), or all
                       after it (off); auto: on for CUDA tensors, and on CPU only when this rank has a core
                       beyond its --threads for the communication (default auto)
  --hierarchical       hierarchical allreduce: reduce inside each node, allreduce across the node leaders,
                       broadcast back inside the node
  --ranks-per-node N   ranks per node (default: from LOCAL_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_SIZE or
                       SLURM_NTASKS_PER_NODE); set it to simulate several nodes on one machine
  --save-params PATH   rank 0 writes the final parameters to PATH (raw float32); every rank writes its own
                       where PATH holds {rank} (replaced by the rank)
  --save-predictions PATH
                       rank 0 writes the final model's validation predictions to PATH (CSV: label, then
                       class probabilities; atomically), for the search spec's `ensemble:`
  --phase-times        at the end every rank prints to stderr its mean milliseconds per step in each phase
                       (data, forward, backward, allreduce wait, noise scale, optimizer, rest)
  --checkpoint PATH    rank 0 writes a checkpoint there (atomically) every --checkpoint-every steps and
                       at the end: parameters, optimizer, step, data position, RNG
                       (never over the checkpoint of a newer run of the trial: LADDER_ASSIGNMENT_EPOCH,
                       recorded in PATH.epoch)
  --checkpoint-every N (default 0: only at the end)
                       With --checkpoint, SIGTERM or SIGUSR1 (preemption, a Slurm time limit) stops the run
                       cleanly: the ranks agree on a step (every 8 steps), rank 0 saves the checkpoint, and
                       every rank exits with 128 + the signal; a second signal ends it at once
  --resume             continue from --checkpoint if it exists (every rank reads it)
  --help               this text
  --version            the ladder version
  --serve              (the only option) serve sweeps of short runs: each stdin line OUT<TAB>arg<TAB>... is
                       one ladder-train run with those arguments, in a forked child whose stdout and stderr
                       go to OUT.out and OUT.err; its exit status is answered on stdout, one line per run.
                       LibTorch's start-up (about 0.5 s) is paid once for all of them (bench/extrapolation)
  --zygote             (the only option) ladder-worker's warm start: forks one training per request on the
                       socket at fd 3 (trainer/zygote_protocol.h); ladder-worker starts it itself

Memory: ladder-train sets glibc's mmap threshold to 32 MiB and its trim threshold to 1 GiB, so that each
step reuses the memory the previous one freed instead of faulting in fresh pages; setting GLIBC_TUNABLES (or
MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_, MALLOC_TOP_PAD_) leaves the allocator as you chose.

Exit codes: 0 done, 1 a runtime failure (a checkpoint not written), 2 bad arguments or data (a failed
rendezvous included), 3 training diverged (NaN/inf loss), 75 rank 0 could not listen on MASTER_PORT because
another process holds it (ladder runs the trial again on another port, without using up an attempt),
128 + signal: stopped by SIGTERM/SIGUSR1 after saving the checkpoint.
)";
}

namespace {

using Setter = std::function<std::string(const std::string&)>;  // "" when the value was taken, else why not

// A number in a range (open or closed at each end).
Setter Real(double* dst, double lo, double hi, bool lo_open, bool hi_open) {
  return [=](const std::string& v) -> std::string {
    double x;
    if (!ToDouble(v, &x)) return "expected a number";
    if ((lo_open ? x <= lo : x < lo) || (hi_open ? x >= hi : x > hi)) {
      std::string range = std::string(lo_open ? "> " : ">= ") + FormatNumber(lo);
      if (std::isfinite(hi)) range += std::string(hi_open ? " and < " : " and <= ") + FormatNumber(hi);
      return "must be " + range;
    }
    *dst = x;
    return "";
  };
}

// A whole number in [lo, hi].
template <class T>
Setter Integer(T* dst, int64_t lo, int64_t hi) {
  return [=](const std::string& v) -> std::string {
    int64_t x;
    if (!ToInt(v, &x)) return "expected an integer";
    if (x < lo || x > hi) return "must be between " + std::to_string(lo) + " and " + std::to_string(hi);
    *dst = static_cast<T>(x);
    return "";
  };
}

// One of `names` ("expected a, b or c" otherwise).
Setter Choice(std::string* dst, std::vector<std::string> names) {
  return [=](const std::string& v) -> std::string {
    for (const auto& n : names) {
      if (v == n) {
        *dst = v;
        return "";
      }
    }
    std::string expected = "expected ";
    for (size_t i = 0; i < names.size(); ++i) {
      expected += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
    }
    return expected;
  };
}

// A built-in model or torchscript:FILE (FILE is checked when the run loads it).
Setter ModelName(std::string* dst) {
  return [=](const std::string& v) -> std::string {
    if (v.rfind("torchscript:", 0) == 0) {
      *dst = v;
      return v.size() > 12 ? "" : "expected torchscript:FILE";
    }
    const std::string error = Choice(dst, {"mlp", "cnn", "unet", "transformer"})(v);
    return error.empty() ? "" : error + " or torchscript:FILE";
  };
}

// A path or other text that must not be empty (`what` says what an empty one is called).
Setter Text(std::string* dst, const char* what = "empty path") {
  return [=](const std::string& v) -> std::string {
    *dst = v;
    return v.empty() ? what : "";
  };
}

Setter ClassWeights(std::string* dst) {
  return [=](const std::string& v) -> std::string {
    if (v != "auto" && v != "none") {
      for (const auto& part : SplitCommas(v)) {
        double w;
        if (!ToDouble(part, &w) || w < 0) return "expected auto, none or comma-separated weights >= 0";
      }
    }
    *dst = v;
    return "";
  };
}

Setter Milestones(std::vector<int64_t>* dst) {
  return [=](const std::string& v) -> std::string {
    dst->clear();
    for (const auto& part : SplitCommas(v)) {
      int64_t m;
      if (!ToInt(part, &m) || m < 0) return "expected comma-separated step numbers";
      dst->push_back(m);
    }
    return "";
  };
}

Setter BatchRamp(std::vector<RampPoint>* dst) {
  return [=](const std::string& v) -> std::string {
    dst->clear();
    for (const auto& part : SplitCommas(v)) {
      auto colon = part.find(':');
      int64_t st, k;
      if (colon == std::string::npos || !ToInt(part.substr(0, colon), &st) || !ToInt(part.substr(colon + 1), &k) ||
          st < 0 || k < 1) {
        return "expected STEP:MULTIPLIER pairs, e.g. 100:2,200:4";
      }
      if (!dst->empty() && st <= dst->back().step) return "steps must increase";
      dst->push_back({st, k});
    }
    return "";
  };
}

// Every option that takes a value, and what it sets in `a`.
std::map<std::string, Setter> ValueOptions(TrainArgs& a) {
  const double inf = HUGE_VAL;
  const int64_t big = int64_t{1} << 40, huge = int64_t{1} << 50;
  return {
      {"--data", Text(&a.data)},
      {"--val-fraction", Real(&a.val_fraction, 0, 1, true, true)},
      {"--model", ModelName(&a.model)},
      {"--input-shape", Text(&a.input_shape, "empty")},
      {"--heads", Integer(&a.heads, 1, 1024)},
      {"--seq-len", Integer(&a.seq_len, 2, 1 << 20)},
      {"--class-weights", ClassWeights(&a.class_weights)},
      {"--loss", Choice(&a.loss, {"mse", "l1", "huber"})},
      {"--device", Choice(&a.device, {"auto", "cpu", "cuda"})},
      {"--fused", Choice(&a.fused, {"auto", "off"})},
      {"--overlap", Choice(&a.overlap, {"auto", "on", "off"})},
      {"--precision", Choice(&a.precision, {"fp32", "bf16"})},
      {"--prefetch", Integer(&a.prefetch, 0, 64)},
      {"--eval-train-rows", Integer(&a.eval_train_rows, 0, big)},
      {"--eval-every", Integer(&a.eval_every, 0, big)},
      {"--width", Integer(&a.width, 1, 1 << 20)},
      {"--depth", Integer(&a.depth, 0, 64)},
      {"--dropout", Real(&a.dropout, 0, 1, false, true)},
      {"--optimizer", Choice(&a.optimizer, {"sgd", "adam", "adamw", "lars", "larc", "lamb"})},
      {"--larc-mode", Choice(&a.larc_mode, {"clip", "scale"})},
      {"--trust-coefficient", Real(&a.trust_coefficient, 0, inf, true, false)},
      {"--clip-grad-norm", Real(&a.clip_grad_norm, 0, inf, false, false)},
      {"--warmup-steps", Integer(&a.warmup_steps, 0, huge)},
      {"--warmup-fraction", Real(&a.warmup_fraction, 0, 1, false, true)},
      {"--decay", Choice(&a.decay, {"none", "step", "cosine", "wsd"})},
      {"--milestones", Milestones(&a.milestones)},
      {"--gamma", Real(&a.gamma, 0, 1, true, false)},
      {"--final-lr-fraction", Real(&a.final_lr_fraction, 0, 1, false, false)},
      {"--wsd-decay-fraction", Real(&a.wsd_decay_fraction, 0, 1, false, false)},
      {"--lr-scaling", Choice(&a.lr_scaling, {"none", "linear", "sqrt"})},
      {"--reference-batch", Integer(&a.reference_batch, 1, big)},
      {"--lr", Real(&a.lr, 0, inf, true, false)},
      {"--momentum", Real(&a.momentum, 0, 1, false, true)},
      {"--weight-decay", Real(&a.weight_decay, 0, inf, false, false)},
      {"--batch-size", Integer(&a.batch_size, 1, 1 << 24)},
      {"--epochs", Integer(&a.epochs, 1, 1000000)},
      {"--max-steps", Integer(&a.max_steps, 0, huge)},
      {"--seed", Integer(&a.seed, 0, int64_t{1} << 62)},
      {"--threads", Integer(&a.threads, 1, 1024)},
      {"--log-every", Integer(&a.log_every, 1, 1 << 30)},
      {"--micro-batches", Integer(&a.micro_batches, 1, 1 << 20)},
      {"--accumulate", Integer(&a.accumulate, 1, 1 << 20)},
      {"--noise-scale-every", Integer(&a.noise_scale_every, 0, 1 << 30)},
      {"--curvature-every", Integer(&a.curvature_every, 0, 1 << 30)},
      {"--curvature-rows", Integer(&a.curvature_rows, 1, big)},
      {"--batch-ramp", BatchRamp(&a.batch_ramp)},
      {"--checkpoint", Text(&a.checkpoint)},
      {"--checkpoint-every", Integer(&a.checkpoint_every, 0, huge)},
      {"--comm", Choice(&a.comm, {"auto", "none", "gloo", "shm", "mpi", "nccl"})},
      {"--bucket-cap-mb", Real(&a.bucket_cap_mb, 0, 1 << 20, true, false)},
      {"--ranks-per-node", Integer(&a.ranks_per_node, 1, 1 << 20)},
      {"--save-params", Text(&a.save_params)},
      {"--save-predictions", Text(&a.save_predictions)},
  };
}

// Every option without a value.
std::map<std::string, bool*> SwitchOptions(TrainArgs& a) {
  return {{"--nesterov", &a.nesterov}, {"--resume", &a.resume}, {"--hierarchical", &a.hierarchical},
          {"--phase-times", &a.phase_times}};
}

// The rules between options; "" when they hold.
std::string CheckCombinations(const TrainArgs& a) {
  std::string error;
  if (a.batch_size % a.micro_batches != 0) {
    error = a.accumulate > 1 ? "options --micro-batches " + std::to_string(a.micro_batches / a.accumulate) +
                                   " x --accumulate " + std::to_string(a.accumulate) + ": " +
                                   std::to_string(a.micro_batches) + " micro-batches do not divide --batch-size " +
                                   std::to_string(a.batch_size)
                             : "option --micro-batches: " + std::to_string(a.micro_batches) +
                                   " does not divide --batch-size " + std::to_string(a.batch_size);
  }
  if (a.resume && a.checkpoint.empty()) error = "option --resume needs --checkpoint PATH";
  if (a.warmup_steps > 0 && a.warmup_fraction > 0) error = "options --warmup-steps and --warmup-fraction: give one";
  if (a.lr_scaling != "none" && a.reference_batch == 0) error = "option --lr-scaling needs --reference-batch";
  if ((a.decay == "step") && a.milestones.empty()) error = "option --decay step needs --milestones";
  return error;
}

}  // namespace

ParsedArgs ParseArgs(const std::vector<std::string>& argv) {
  ParsedArgs out;
  TrainArgs& a = out.args;
  const auto values = ValueOptions(a);
  const auto switches = SwitchOptions(a);
  for (size_t i = 0; i < argv.size(); ++i) {
    std::string flag = argv[i], value;
    if (flag == "--help" || flag == "-h") {
      out.help = true;
      return out;
    }
    if (flag == "--version") {
      out.version = true;
      return out;
    }
    if (flag == "--serve") {
      out.error = "--serve must be the only option (each request line carries a run's options)";
      return out;
    }
    if (flag == "--zygote") {
      out.error = "--zygote must be the only option (ladder-worker starts it; each request carries a run's options)";
      return out;
    }
    if (auto sw = switches.find(flag); sw != switches.end()) {
      *sw->second = true;
      continue;
    }
    auto eq = flag.find('=');
    bool inline_value = flag.rfind("--", 0) == 0 && eq != std::string::npos;
    if (inline_value) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    }
    auto it = values.find(flag);
    if (it == values.end()) {
      out.error = "unknown option '" + flag + "' (see --help)";
      return out;
    }
    if (!inline_value) {
      if (i + 1 >= argv.size()) {
        out.error = "option " + flag + " needs a value";
        return out;
      }
      value = argv[++i];
    }
    std::string err = it->second(value);
    if (!err.empty()) {
      out.error = "option " + flag + ": invalid value '" + value + "': " + err;
      return out;
    }
  }
  if (int64_t{a.micro_batches} * a.accumulate > (1 << 20)) {
    out.error = "options --micro-batches " + std::to_string(a.micro_batches) + " and --accumulate " +
                std::to_string(a.accumulate) + ": more than 1048576 micro-batches";
    return out;
  }
  a.micro_batches *= a.accumulate;
  out.error = CheckCombinations(a);
  return out;
}

}  // namespace ladder::trainer
