// The trial of bench/chaos: one rank of an any-command trial that keeps its own record of what it did.
//
//   ladder-chaos-trial --record-dir DIR --steps N --interval-ms M --x X
//
// Global rank 0 (RANK, default 0) prints N metrics lines, one every M ms: {"step": k, "score": X*k/N, "tag":
// E*100000+k} with E = LADDER_ASSIGNMENT_EPOCH, so every point names the run that printed it. The other ranks print
// nothing and live as long. Before a line goes to stdout it is appended to DIR/trial-<LADDER_TRIAL_ID>.log (one
// write(2) per line, O_APPEND: the ranks of a trial share the file), the independent record the bench checks the
// database against:
//   start EPOCH RANK TRIAL_DIR PID TIME
//   point EPOCH RANK STEP TAG TIME
//   end EPOCH RANK TIME
// A killed rank has no end line. Exit 0 after the last step. Every rank also forks a helper that sleeps about as
// long (its own child, not a rank): what a worker killed -9 leaves behind unless the next worker kills it.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string Env(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

void Record(int fd, const std::string& line) {
  if (fd >= 0 && write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    std::perror("ladder-chaos-trial: record");
    std::exit(3);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string record_dir;
  int steps = 10, interval_ms = 100;
  double x = 0.5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--record-dir") record_dir = argv[i + 1];
    else if (flag == "--steps") steps = std::atoi(argv[i + 1]);
    else if (flag == "--interval-ms") interval_ms = std::atoi(argv[i + 1]);
    else if (flag == "--x") x = std::atof(argv[i + 1]);
    else {
      std::fprintf(stderr, "ladder-chaos-trial: unknown flag '%s'\n", argv[i]);
      return 2;
    }
  }
  const std::string trial = Env("LADDER_TRIAL_ID", "0");
  const long long epoch = std::atoll(Env("LADDER_ASSIGNMENT_EPOCH", "0").c_str());
  const int rank = std::atoi(Env("RANK", "0").c_str());
  int fd = -1;
  if (!record_dir.empty()) {
    const std::string path = record_dir + "/trial-" + trial + ".log";
    fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
      std::fprintf(stderr, "ladder-chaos-trial: cannot open %s: %s\n", path.c_str(), std::strerror(errno));
      return 3;
    }
  }
  // A helper process of its own (as `sh -c "python train.py"` has one): it outlives a worker killed -9, and the next
  // worker on the trial directory must kill it, or the bench counts it as an orphan.
  if (fork() == 0) {
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);  // not holding the trial's stdout open
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<long long>(interval_ms) * (steps + 10)));
    _exit(0);
  }
  char buf[512];
  std::snprintf(buf, sizeof buf, "start %lld %d %s %d %.6f\n", epoch, rank, Env("LADDER_TRIAL_DIR", "?").c_str(),
                static_cast<int>(getpid()), Now());
  Record(fd, buf);
  const auto t0 = std::chrono::steady_clock::now();
  for (int k = 1; k <= steps; ++k) {
    std::this_thread::sleep_until(t0 + std::chrono::milliseconds(static_cast<long long>(interval_ms) * k));
    if (rank != 0) continue;
    const long long tag = epoch * 100000 + k;
    std::snprintf(buf, sizeof buf, "point %lld %d %d %lld %.6f\n", epoch, rank, k, tag, Now());
    Record(fd, buf);
    std::printf("{\"step\": %d, \"score\": %.6f, \"tag\": %lld}\n", k, x * k / steps, tag);
    std::fflush(stdout);
  }
  std::snprintf(buf, sizeof buf, "end %lld %d %.6f\n", epoch, rank, Now());
  Record(fd, buf);
  return 0;
}
