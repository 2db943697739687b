#include "trainer/args.h"

#include <cerrno>
#include <cmath>
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

}  // namespace

std::string Usage() {
  return R"(usage: ladder-train [options]
Trains an MLP classifier on a CSV data set and prints metrics as JSON lines on stdout (docs/METRICS.md).

  --data PATH          CSV or CSV.gz: numeric features, integer class label (0..K-1) last; an optional
                       header line is skipped (default: the shipped digits data)
  --val-fraction F     held-out fraction, split with a fixed seed (default 0.2)
  --width N            hidden units per layer (default 128)
  --depth N            hidden layers (default 2)
  --dropout P          dropout after each hidden layer, 0 <= P < 1 (default 0)
  --optimizer NAME     sgd | adam | adamw (default sgd)
  --lr X               learning rate > 0 (default 0.05)
  --momentum X         SGD momentum, 0 <= X < 1 (default 0.9)
  --weight-decay X     >= 0 (default 0)
  --batch-size N       >= 1 (default 64)
  --epochs N           >= 1 (default 10)
  --max-steps N        stop after N optimizer steps, 0 = no cap (default 0)
  --seed N             initialization and shuffling seed (default 0)
  --threads N          intra-op threads (default 1)
  --log-every N        a train_loss line every N steps (default 10)
  --comm NAME          collectives: auto | none | gloo | mpi | nccl (default auto: mpi under mpirun/srun,
                       gloo when WORLD_SIZE > 1, else none). --batch-size is per rank.
  --bucket-cap-mb X    gradient bucket size for the overlapped allreduce (default 25)
  --save-params PATH   rank 0 writes the final parameters to PATH (raw float32)
  --help               this text

Exit codes: 0 done, 2 bad arguments or data, 3 training diverged (NaN/inf loss).
)";
}

ParsedArgs ParseArgs(const std::vector<std::string>& argv) {
  ParsedArgs out;
  TrainArgs& a = out.args;
  auto real = [&](double* dst, double lo, double hi, bool lo_open, bool hi_open) {
    return [=](const std::string& v) -> std::string {
      double x;
      if (!ToDouble(v, &x)) return "expected a number";
      if ((lo_open ? x <= lo : x < lo) || (hi_open ? x >= hi : x > hi)) return "out of range";
      *dst = x;
      return "";
    };
  };
  auto integer = [&](auto* dst, int64_t lo, int64_t hi) {
    return [=](const std::string& v) -> std::string {
      int64_t x;
      if (!ToInt(v, &x)) return "expected an integer";
      if (x < lo || x > hi) return "must be between " + std::to_string(lo) + " and " + std::to_string(hi);
      *dst = static_cast<std::remove_pointer_t<decltype(dst)>>(x);
      return "";
    };
  };
  const double inf = HUGE_VAL;
  std::map<std::string, std::function<std::string(const std::string&)>> flags = {
      {"--data", [&](const std::string& v) -> std::string { a.data = v; return v.empty() ? "empty path" : ""; }},
      {"--val-fraction", real(&a.val_fraction, 0, 1, true, true)},
      {"--width", integer(&a.width, 1, 1 << 20)},
      {"--depth", integer(&a.depth, 0, 64)},
      {"--dropout", real(&a.dropout, 0, 1, false, true)},
      {"--optimizer",
       [&](const std::string& v) -> std::string {
         if (v != "sgd" && v != "adam" && v != "adamw") return "expected sgd, adam or adamw";
         a.optimizer = v;
         return "";
       }},
      {"--lr", real(&a.lr, 0, inf, true, false)},
      {"--momentum", real(&a.momentum, 0, 1, false, true)},
      {"--weight-decay", real(&a.weight_decay, 0, inf, false, false)},
      {"--batch-size", integer(&a.batch_size, 1, 1 << 24)},
      {"--epochs", integer(&a.epochs, 1, 1000000)},
      {"--max-steps", integer(&a.max_steps, 0, int64_t{1} << 50)},
      {"--seed", integer(&a.seed, 0, int64_t{1} << 62)},
      {"--threads", integer(&a.threads, 1, 1024)},
      {"--log-every", integer(&a.log_every, 1, 1 << 30)},
      {"--comm",
       [&](const std::string& v) -> std::string {
         if (v != "auto" && v != "none" && v != "gloo" && v != "mpi" && v != "nccl") {
           return "expected auto, none, gloo, mpi or nccl";
         }
         a.comm = v;
         return "";
       }},
      {"--bucket-cap-mb", real(&a.bucket_cap_mb, 0, 1 << 20, true, false)},
      {"--save-params", [&](const std::string& v) -> std::string { a.save_params = v; return v.empty() ? "empty path" : ""; }},
  };
  for (size_t i = 0; i < argv.size(); ++i) {
    std::string flag = argv[i], value;
    if (flag == "--help" || flag == "-h") {
      out.help = true;
      return out;
    }
    auto eq = flag.find('=');
    bool inline_value = flag.rfind("--", 0) == 0 && eq != std::string::npos;
    if (inline_value) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    }
    auto it = flags.find(flag);
    if (it == flags.end()) {
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
  return out;
}

}  // namespace ladder::trainer
