#include "worker/warm_start.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/executable.h"
#include "common/log.h"
#include "trainer/zygote_protocol.h"
#include "worker/log_component.h"

namespace ladder::worker {

namespace z = ::ladder::trainer::zygote;

namespace {

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

void CloseAll(std::initializer_list<int> fds) {
  for (int fd : fds) {
    if (fd >= 0) close(fd);
  }
}

}  // namespace

std::vector<std::string> LoadTimeEnvironment(const std::vector<std::string>& env) {
  static const char* const kPrefixes[] = {"LD_",  "GLIBC_TUNABLES=", "MALLOC_", "OMP_", "GOMP_",
                                          "KMP_", "OPENBLAS_",       "GOTO_",   "BLIS_", "MKL_"};
  std::vector<std::string> out;
  for (const auto& e : env) {
    for (const char* p : kPrefixes) {
      if (StartsWith(e, p)) {
        out.push_back(e);
        break;
      }
    }
  }
  return out;
}

struct WarmStarter::Zygote {
  enum class State { kStarting, kReady, kDead };
  State state = State::kStarting;
  std::shared_ptr<TrialProcess> process;
  int sock = -1;  // the worker's end of the socket
  std::unique_ptr<boost::asio::posix::stream_descriptor> ready_wait;  // while starting
  int starts = 0;
  int pid = 0;
  bool gave_up_logged = false;

  void Close() {
    ready_wait.reset();
    if (sock >= 0) close(sock);
    sock = -1;
  }
  // Stops it for good (a reply that never came, a broken socket): its children die with it.
  void Kill() {
    Close();
    if (process && !process->exited()) kill(-process->pid(), SIGKILL);
    state = State::kDead;
  }
  std::string Name() const { return "ladder-train --zygote (pid " + std::to_string(pid) + ")"; }
};

WarmStarter::WarmStarter(boost::asio::io_context& loop, std::string log_dir)
    : loop_(loop), log_dir_(std::move(log_dir)) {}

WarmStarter::~WarmStarter() {
  for (auto& [key, z] : zygotes_) z->Kill();
}

std::string WarmStarter::Key(const LaunchSpec& spec, std::string* exe, std::vector<std::string>* env) const {
  if (spec.argv.empty()) return "";
  std::string error;
  *exe = ResolveExecutable(spec.argv[0], spec.search_dirs, &error);
  if (exe->empty() || std::filesystem::path(*exe).filename() != "ladder-train") return "";
  *env = TrialEnvironment(spec);
  std::string key = *exe;
  for (const auto& e : LoadTimeEnvironment(*env)) key += '\n' + e;
  return key;
}

int WarmStarter::ZygotePid(const LaunchSpec& spec, bool* ready) const {
  std::string exe;
  std::vector<std::string> env;
  auto it = zygotes_.find(Key(spec, &exe, &env));
  const bool up = it != zygotes_.end() && it->second->state != Zygote::State::kDead;
  if (ready) *ready = up && it->second->state == Zygote::State::kReady;
  return up ? it->second->pid : 0;
}

void WarmStarter::StartZygote(Zygote& z, const std::string& exe, const std::vector<std::string>& load_env,
                              const LaunchSpec& spec) {
  ++z.starts;
  z.state = Zygote::State::kDead;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    LogWarning(kLog, std::string("warm starts: socketpair: ") + std::strerror(errno) + "; ladder-train starts cold");
    return;
  }
  LaunchSpec zs;
  zs.argv = {exe, "--zygote"};
  // The worker's environment with the trial's load-time variables: the rest is set per child.
  for (const auto& e : load_env) zs.env[e.substr(0, e.find('='))] = e.substr(e.find('=') + 1);
  zs.search_dirs = spec.search_dirs;
  zs.stderr_path = log_dir_ + "/zygote-" + std::to_string(++started_) + ".log";
  zs.pass_fd = sv[1];
  std::string error;
  std::weak_ptr<Zygote> weak;
  for (auto& [key, p] : zygotes_) {
    if (p.get() == &z) weak = p;
  }
  // Captures the zygote's number: an exit reported after a later start of the same key concerns the old one.
  auto on_exit = [weak, log = zs.stderr_path, start = z.starts](int, const std::string& description) {
    auto zp = weak.lock();
    if (!zp || zp->starts != start) return;
    const bool was_up = zp->state != Zygote::State::kDead;
    zp->Close();
    zp->state = Zygote::State::kDead;
    if (was_up) {
      LogWarning(kLog, "warm starts: " + zp->Name() + " ended" + (description.empty() ? "" : ": " + description) +
                           " (stderr: " + log + "); ladder-train trials start cold until it is started again");
    }
  };
  z.process = TrialProcess::Launch(
      loop_, zs, [](const std::string&, bool) {}, on_exit, &error);
  close(sv[1]);
  if (!z.process) {
    close(sv[0]);
    LogWarning(kLog, "warm starts: cannot start " + exe + " --zygote: " + error + "; ladder-train starts cold");
    return;
  }
  z.sock = sv[0];
  z.pid = z.process->pid();
  z.state = Zygote::State::kStarting;
  LogInfo(kLog, "warm starts: starting " + z.Name() + " for " + exe + "; ladder-train trials start cold until it is ready");
  const int dup_fd = fcntl(z.sock, F_DUPFD_CLOEXEC, 0);
  if (dup_fd < 0) {
    z.Kill();
    return;
  }
  z.ready_wait = std::make_unique<boost::asio::posix::stream_descriptor>(loop_, dup_fd);
  if (auto zp = weak.lock()) WaitForReady(zp);
}

void WarmStarter::WaitForReady(const std::shared_ptr<Zygote>& z) {
  std::weak_ptr<Zygote> weak = z;
  z->ready_wait->async_wait(boost::asio::posix::stream_descriptor::wait_read,
                            [this, weak](const boost::system::error_code& ec) {
    auto zp = weak.lock();
    if (ec || !zp || zp->state != Zygote::State::kStarting || zp->sock < 0) return;
    std::string msg;
    std::vector<int> fds;
    const ssize_t n = z::ReceiveMessage(zp->sock, &msg, &fds, MSG_DONTWAIT);
    for (int fd : fds) close(fd);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      WaitForReady(zp);  // spurious (`this` is alive: its destructor closed the descriptor, aborting the wait)
      return;
    }
    if (n > 0 && StartsWith(msg, "ready ")) {
      zp->state = Zygote::State::kReady;
      zp->ready_wait.reset();
      LogInfo(kLog, "warm starts: " + zp->Name() + " ready");
      return;
    }
    LogWarning(kLog, "warm starts: " + zp->Name() + " did not start" + (n > 0 ? ": " + msg : "") +
                         "; ladder-train trials start cold");
    zp->Kill();
  });
}

std::shared_ptr<TrialProcess> WarmStarter::Launch(const LaunchSpec& spec, TrialProcess::LineFn on_line,
                                                  TrialProcess::ExitFn on_exit, std::string* why) {
  why->clear();
  std::string exe;
  std::vector<std::string> env;
  const std::string key = Key(spec, &exe, &env);
  if (key.empty()) return nullptr;  // not ladder-train (or not found: the cold start says so)
  Zygote* z = ReadyZygote(spec, exe, env, key, why);
  if (z == nullptr) return nullptr;
  return SpawnFrom(*z, spec, std::move(env), std::move(on_line), std::move(on_exit), why);
}

WarmStarter::Zygote* WarmStarter::ReadyZygote(const LaunchSpec& spec, const std::string& exe,
                                              const std::vector<std::string>& env, const std::string& key,
                                              std::string* why) {
  auto it = zygotes_.find(key);
  if (it == zygotes_.end()) {
    if (static_cast<int>(zygotes_.size()) >= kMaxZygotes) {
      *why = std::to_string(kMaxZygotes) + " warm-start processes run already (one per load-time environment)";
      return nullptr;
    }
    it = zygotes_.emplace(key, std::make_shared<Zygote>()).first;
    StartZygote(*it->second, exe, LoadTimeEnvironment(env), spec);
    *why = "its warm-start process is starting";
    return nullptr;
  }
  Zygote& z = *it->second;
  if (z.state == Zygote::State::kStarting) {
    *why = "its warm-start process is starting";
    return nullptr;
  }
  if (z.state == Zygote::State::kDead) {
    if (z.starts > kMaxRestarts) {
      *why = "its warm-start process failed " + std::to_string(z.starts) + " times";
      if (!z.gave_up_logged) LogWarning(kLog, "warm starts: given up after " + std::to_string(z.starts) +
                                                  " starts of " + exe + " --zygote; ladder-train trials start cold");
      z.gave_up_logged = true;
      return nullptr;
    }
    StartZygote(z, exe, LoadTimeEnvironment(env), spec);
    *why = "its warm-start process is starting again";
    return nullptr;
  }
  return &z;
}

std::shared_ptr<TrialProcess> WarmStarter::SpawnFrom(Zygote& z, const LaunchSpec& spec, std::vector<std::string> env,
                                                     TrialProcess::LineFn on_line, TrialProcess::ExitFn on_exit,
                                                     std::string* why) {
  // Ready: the descriptors a cold start would give the child, sent to the zygote, which forks it.
  int out[2] = {-1, -1}, status[2] = {-1, -1};
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(status, O_CLOEXEC) != 0) {
    *why = std::string("pipe: ") + std::strerror(errno);
    CloseAll({out[0], out[1]});
    return nullptr;
  }
  const int err_fd = open(spec.stderr_path.empty() ? "/dev/null" : spec.stderr_path.c_str(),
                          O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (err_fd < 0) {
    *why = "cannot open '" + spec.stderr_path + "': " + std::strerror(errno);
    CloseAll({out[0], out[1], status[0], status[1]});
    return nullptr;
  }
  z::SpawnRequest req;
  req.cwd = spec.workdir;
  req.argv = spec.argv;
  req.env = std::move(env);
  const int fds[z::kSpawnFds] = {out[1], err_fd, status[1]};
  const std::string sent = z::SendMessage(z.sock, z::EncodeSpawn(req), fds, z::kSpawnFds, MSG_DONTWAIT);
  CloseAll({out[1], err_fd, status[1]});  // the zygote holds its own copies now
  if (!sent.empty()) {
    CloseAll({out[0], status[0]});
    if (errno == EMSGSIZE) {
      *why = "its arguments and environment are larger than a warm-start request can carry (" +
             std::to_string(z::kMaxMessageBytes) + " bytes)";
      LogInfo(kLog, "warm starts: " + *why + "; it starts cold");
      return nullptr;
    }
    *why = z.Name() + " cannot be reached: " + sent;
    LogWarning(kLog, "warm starts: " + *why + "; stopping it, ladder-train trials start cold");
    z.Kill();
    return nullptr;
  }
  pollfd p{z.sock, POLLIN, 0};
  int ready;
  while ((ready = poll(&p, 1, static_cast<int>(kReplyTimeout.count()))) < 0 && errno == EINTR) {
  }
  std::string reply;
  std::vector<int> junk;
  const ssize_t n = ready > 0 ? z::ReceiveMessage(z.sock, &reply, &junk, MSG_DONTWAIT) : -1;
  for (int fd : junk) close(fd);
  if (n > 0 && StartsWith(reply, "started ")) {
    const int pid = std::atoi(reply.c_str() + 8);
    if (pid > 0) {
      return TrialProcess::Adopt(loop_, pid, out[0], status[0],
                                 "killed: its warm-start process, " + z.Name() + ", died", std::move(on_line),
                                 std::move(on_exit));
    }
  }
  CloseAll({out[0], status[0]});
  if (n > 0 && StartsWith(reply, "failed ")) {
    *why = "the warm start failed: " + reply.substr(reply.find(' ', 7) + 1);
    LogInfo(kLog, "warm starts: " + *why + "; it starts cold");
    return nullptr;
  }
  *why = z.Name() + (ready == 0 ? " did not answer in " + std::to_string(kReplyTimeout.count()) + " ms"
                                : " answered '" + reply + "'");
  LogWarning(kLog, "warm starts: " + *why + "; stopping it, ladder-train trials start cold");
  z.Kill();
  return nullptr;
}

}  // namespace ladder::worker
