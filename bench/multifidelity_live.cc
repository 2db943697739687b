#include "bench/multifidelity_live.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "trainer/zygote_protocol.h"

namespace ladder::bench {

using search::MakeStoppingRule;
using search::TrialDecision;
using search::StoppingRule;
using search::StoppingOptions;

WarmTrainer::WarmTrainer(const std::string& train) {
  namespace z = ladder::trainer::zygote;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) Fail("socketpair");
  pid_ = fork();
  if (pid_ == 0) {
    if ((sv[1] == z::kSocketFd ? fcntl(sv[1], F_SETFD, 0) : dup2(sv[1], z::kSocketFd)) < 0) _exit(127);
    execl(train.c_str(), train.c_str(), "--zygote", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(sv[1]);
  sock_ = sv[0];
  std::string msg;
  std::vector<int> fds;
  if (pid_ < 0 || z::ReceiveMessage(sock_, &msg, &fds) <= 0 || msg.rfind("ready ", 0) != 0) {
    Fail("ladder-train --zygote did not start (" + msg + ")");
  }
}
WarmTrainer::~WarmTrainer() {
  close(sock_);  // it exits at end of file
  waitpid(pid_, nullptr, 0);
}
pid_t WarmTrainer::Spawn(const std::vector<std::string>& args, int out_fd, int* status_fd) {
  namespace z = ladder::trainer::zygote;
  z::SpawnRequest req;
  req.argv = args;
  for (char** e = environ; *e; ++e) req.env.emplace_back(*e);
  int status[2];
  const int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (null < 0 || pipe2(status, O_CLOEXEC) != 0) Fail("pipe");
  const int fds[3] = {out_fd, null, status[1]};
  const std::string err = z::SendMessage(sock_, z::EncodeSpawn(req), fds, 3);
  close(null);
  close(status[1]);
  std::string reply;
  std::vector<int> junk;
  if (!err.empty() || z::ReceiveMessage(sock_, &reply, &junk) <= 0 || reply.rfind("started ", 0) != 0) {
    Fail("the zygote did not start a run: " + err + reply);
  }
  *status_fd = status[0];
  return static_cast<pid_t>(std::atoi(reply.c_str() + 8));
}

void WarmTrainer::Fail(const std::string& what) {
  std::cerr << "ladder-multifidelity-bench: " << what << "\n";
  std::exit(1);
}

namespace {

struct LiveConfig {
  double lr, momentum, dropout;
  std::string optimizer;
  int batch_size, width, depth;
};

// The record_curves space (bench/record_curves), drawn from (seed, trial number) alone.
LiveConfig DrawConfig(uint64_t seed, int64_t number) {
  std::mt19937_64 rng((seed + 1) * 0x9e3779b97f4a7c15ULL ^ static_cast<uint64_t>(number + 1) * 0xbf58476d1ce4e5b9ULL);
  std::uniform_real_distribution<double> u(0, 1);
  auto log_uniform = [&](double lo, double hi) {
    return std::exp(std::log(lo) + u(rng) * (std::log(hi) - std::log(lo)));
  };
  LiveConfig c;
  c.optimizer = u(rng) < 0.5 ? "sgd" : "adam";
  c.lr = log_uniform(1e-4, 1.0);
  c.momentum = c.optimizer == "sgd" ? 0.99 * u(rng) : 0.0;
  c.batch_size = static_cast<int>(std::lround(log_uniform(16, 256)));
  c.width = static_cast<int>(std::lround(log_uniform(16, 256)));
  c.depth = 1 + static_cast<int>(u(rng) * 3) % 3;
  c.dropout = 0.5 * u(rng);
  return c;
}

struct Process {
  pid_t pid = -1;
  int fd = -1;
  int status_fd = -1;  // a warm run's: its wait status comes from the zygote
  std::string buffer;
  int64_t number = 0;
  int epoch = 0;
  bool stopping = false;
  std::chrono::steady_clock::time_point started;  // when Spawn returned
};

Process Spawn(const std::string& train, const LiveConfig& c, int epochs, int64_t number, WarmTrainer* warm,
              const std::vector<std::string>& workload) {
  std::vector<std::string> args = {train, "--epochs", std::to_string(epochs), "--threads", "1", "--log-every",
                                   "1000000000", "--eval-train-rows", "0", "--noise-scale-every", "0", "--seed",
                                   std::to_string(number), "--lr", std::to_string(c.lr), "--optimizer", c.optimizer,
                                   "--momentum", std::to_string(c.momentum), "--batch-size",
                                   std::to_string(c.batch_size), "--width", std::to_string(c.width), "--depth",
                                   std::to_string(c.depth), "--dropout", std::to_string(c.dropout)};
  args.insert(args.end(), workload.begin(), workload.end());
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    std::perror("pipe");
    std::exit(1);
  }
  if (warm) {
    Process p;
    p.pid = warm->Spawn(args, fds[1], &p.status_fd);
    close(fds[1]);
    p.fd = fds[0];
    p.number = number;
    return p;
  }
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, 2);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(fds[1]);
  Process p;
  p.pid = pid;
  p.fd = fds[0];
  p.number = number;
  return p;
}

// Returns the wait status.
int Reap(Process& p, bool kill_it) {
  if (kill_it) kill(p.pid, SIGTERM);
  close(p.fd);
  int status = 0;
  if (p.status_fd >= 0) {  // a warm run: the zygote reaps it and writes its status
    if (read(p.status_fd, &status, sizeof status) < 0) { /* end of file: the zygote is gone, and the run with it */
    }
    close(p.status_fd);
    return status;
  }
  waitpid(p.pid, &status, 0);
  return status;
}

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

double SecondsToReach(const LiveResult& r, double target) {
  for (const auto& [t, v] : r.improvements) {
    if (v <= target) return t;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

LiveResult RunLive(const StoppingOptions& algorithm, const LiveOptions& o, int max_epochs, uint64_t seed,
                   WarmTrainer* warm) {
  std::unique_ptr<StoppingRule> rule = MakeStoppingRule(algorithm, false);
  LiveResult r;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Process> running;
  int64_t next = 0;
  int spent = 0;
  auto start = [&] {
    const auto t = std::chrono::steady_clock::now();
    running.push_back(Spawn(o.train, DrawConfig(seed, next), max_epochs, next, warm, o.workload));
    r.spawn_s += Since(t);
    running.back().started = std::chrono::steady_clock::now();
    ++next;
    ++r.trials;
  };
  int failed_in_a_row = 0;  // runs that ended without reporting an epoch: a bad argument would loop forever
  auto reap = [&](Process& p, bool kill_it) {
    const auto t = std::chrono::steady_clock::now();
    const int status = Reap(p, kill_it);
    r.reap_s += Since(t);
    failed_in_a_row = !kill_it && p.epoch == 0 ? failed_in_a_row + 1 : 0;
    if (failed_in_a_row == 3) {
      std::fprintf(stderr,
                   "ladder-multifidelity-bench: 3 ladder-train runs in a row ended without reporting an epoch "
                   "(the last: wait status %d); run one by hand to see why\n",
                   status);
      std::exit(1);
    }
  };
  for (int w = 0; w < o.workers; ++w) start();
  while (!running.empty()) {
    std::vector<pollfd> fds;
    for (const Process& p : running) fds.push_back({p.fd, POLLIN, 0});
    if (poll(fds.data(), fds.size(), 60000) <= 0) {
      std::cerr << "ladder-multifidelity-bench: no output from ladder-train for 60 s\n";
      std::exit(1);
    }
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      Process& p = running[i];
      char buf[4096];
      ssize_t n = read(p.fd, buf, sizeof buf);
      bool ended = n <= 0;
      if (n > 0) p.buffer.append(buf, static_cast<size_t>(n));
      size_t nl;
      while (!p.stopping && (nl = p.buffer.find('\n')) != std::string::npos) {
        if (spent >= o.budget) {  // another trial spent the last epoch in this pass
          p.stopping = true;
          break;
        }
        std::string line = p.buffer.substr(0, nl);
        p.buffer.erase(0, nl + 1);
        nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
        if (!j.is_object() || !j.contains("val_loss") || !j["val_loss"].is_number()) continue;
        const double v = j["val_loss"].get<double>();
        if (p.epoch == 0) r.first_line_s += Since(p.started);
        ++p.epoch;
        ++spent;
        if (v < r.best) r.improvements.push_back({Since(t0), v});
        r.best = std::min(r.best, v);
        bool stop = spent >= o.budget;
        if (rule) {
          TrialDecision d = rule->Report(p.number, p.epoch, v);
          if (d.stop()) {
            stop = true;
            rule->Complete(p.number, v);
          }
        }
        if (stop) p.stopping = true;
      }
      if (p.stopping || ended) {
        if (ended && rule && !p.stopping) rule->Complete(p.number, std::nullopt);
        reap(p, p.stopping);
        p.pid = -1;
      }
    }
    std::erase_if(running, [](const Process& p) { return p.pid < 0; });
    if (spent >= o.budget) {
      for (Process& p : running) reap(p, true);
      running.clear();
      break;
    }
    while (static_cast<int>(running.size()) < o.workers && spent < o.budget) start();
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace ladder::bench
