#pragma once
// A real multi-node Slurm cluster on this machine for tests (the recipe of ../shared/slurm-local, measured on these
// machines): one slurmctld and N slurmd daemons named n1..nN, each in a UTS namespace of its own so its hostname is
// its node name, and a mount namespace of its own in which NodeLocalDir() is that node's own directory (node-local
// storage: what a process on node i writes there lands in NodeLocalDir(i)), all on 127.0.0.1 with free ports, no
// authentication, MPI through PMIx, optionally a two-level switch topology (topology/tree: leaf switches of two
// nodes under one top switch). Everything lives under the
// test's directory; Stop (or the destructor) stops the slurmd daemons first, then slurmctld.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/address.h"
#include "tests/support/free_port.h"
#include "tests/support/process.h"

namespace ladder::testing {

class LocalSlurm {
 public:
  // Debian's slurmctld, slurmd and the client commands, and unshare: installed by scripts/bootstrap.sh.
  static bool Available() {
    for (const char* p : {"/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/bin/srun", "/usr/bin/sbatch",
                          "/usr/bin/scontrol", "/usr/bin/sinfo", "/usr/bin/unshare"}) {
      if (!std::filesystem::exists(p)) return false;
    }
    return geteuid() == 0;  // slurmd runs jobs as their user: the test runs them as root
  }

  LocalSlurm() = default;
  LocalSlurm(const LocalSlurm&) = delete;
  LocalSlurm& operator=(const LocalSlurm&) = delete;
  ~LocalSlurm() { Stop(); }

  // Preemption by partition priority: a job in partition `high` requeues the jobs of partition `debug` (the default)
  // on the nodes it needs, after `grace_s` seconds in which they got SIGTERM; a requeued job may start again
  // `cred_expire_s` seconds later (Slurm's CredExpire, 120 s by default) at the next scheduling pass.
  // send_user_signal: the site setting SlurmctldParameters=preempt_send_user_signal: a preempted job that asked for a
  // warning signal (--signal) gets that signal, where its --signal says, instead of SIGTERM to every step.
  struct Preemption {
    int grace_s = 30;
    int cred_expire_s = 10;
    bool send_user_signal = false;
  };

  // Starts the cluster under `dir` and waits (up to 30 s) until its `nodes` nodes are idle. Returns "" or what went
  // wrong (tests: ASSERT_EQ(slurm.Start(...), "")); bench/slurm uses it too.
  std::string Start(const std::filesystem::path& dir, int nodes, int cpus, bool topology = true,
                    std::optional<Preemption> preemption = std::nullopt) {
    base_ = dir / "slurm";
    ReapOrphans();
    // Sockets live in the spool and tmp directories: a UNIX socket's path has at most 107 bytes, so those two
    // get a short directory of their own (removed by Stop).
    static int started = 0;
    short_ = std::filesystem::temp_directory_path() /
             ("lsl" + std::to_string(getpid()) + "-" + std::to_string(++started));
    std::filesystem::remove_all(short_);
    nodes_ = nodes;
    for (const char* sub : {"etc", "state", "log", "pid"}) std::filesystem::create_directories(base_ / sub);
    conf_ = (base_ / "etc" / "slurm.conf").string();
    std::ofstream(base_ / "owner.pid") << ::getpid() << "\n";
    WriteConfig(cpus, topology, preemption);
    ctld_ = Spawn({"/usr/sbin/slurmctld", "-D"}, base_ / "log" / "slurmctld.out");
    std::filesystem::create_directories(NodeLocalDir());
    for (int i = 1; i <= nodes; ++i) {
      const std::string n = "n" + std::to_string(i);
      std::filesystem::create_directories(short_ / "spool" / n);
      std::filesystem::create_directories(short_ / "tmp" / n);
      std::filesystem::create_directories(NodeLocalDir(i));
      slurmd_.push_back(Spawn({"/usr/bin/unshare", "--uts", "--mount", "/bin/sh", "-c",
                               "mount --bind " + NodeLocalDir(i).string() + " " + NodeLocalDir().string() +
                                   " && hostname " + n + " && exec slurmd -D -N " + n},
                              base_ / "log" / ("slurmd." + n + ".out")));
    }
    for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
         std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(std::chrono::milliseconds(100))) {
      auto r = Run({"sinfo", "-h", "-t", "idle", "-o", "%D"});
      if (r.exit_code == 0 && r.out.find(std::to_string(nodes)) == 0) return "";
    }
    return "the local Slurm cluster did not come up (logs in " + (base_ / "log").string() + ")";
  }

  // Runs a Slurm client command (sinfo, srun, sbatch, scontrol, ...) or any program with this cluster's
  // SLURM_CONF; cwd = the test's directory.
  CommandResult Run(std::vector<std::string> args) const {
    std::vector<std::string> all = {"/usr/bin/env", "SLURM_CONF=" + conf_};
    all.insert(all.end(), args.begin(), args.end());
    return RunCommand(all, base_.parent_path());
  }

  const std::string& conf() const { return conf_; }

  // The path of node-local storage as every node's processes see it (each its own directory; outside the nodes it
  // is empty), and node i's directory behind it as this process sees it.
  std::filesystem::path NodeLocalDir() const { return short_ / "local"; }
  std::filesystem::path NodeLocalDir(int i) const { return base_ / "node-local" / ("n" + std::to_string(i)); }

  // Node i (1-based) crashes: its slurmd and everything running on it (the slurmstepd daemons and their tasks,
  // which live in the node's UTS namespace) die at once. Killing slurmd alone would leave its steps running.
  void KillNode(int i) {
    pid_t& p = slurmd_.at(static_cast<size_t>(i - 1));
    if (p <= 0) return;
    std::error_code ec;
    const auto node_ns = std::filesystem::read_symlink("/proc/" + std::to_string(p) + "/ns/uts", ec);
    if (!ec) {
      for (const auto& e : std::filesystem::directory_iterator("/proc")) {
        const std::string name = e.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos || std::stol(name) == p) continue;
        std::error_code ns_ec;
        if (std::filesystem::read_symlink(e.path() / "ns" / "uts", ns_ec) == node_ns && !ns_ec) {
          ::kill(static_cast<pid_t>(std::stol(name)), SIGKILL);
        }
      }
    }
    ::kill(p, SIGKILL);
    ::waitpid(p, nullptr, 0);
    p = -1;
  }

  void Stop() {
    if (ctld_ > 0) {
      // Every job ends first (its steps' processes with it), then the slurmd daemons (they report to slurmctld as
      // they stop), then slurmctld.
      Run({"scancel", "--full", "--user=root"});
      for (int i = 0; i < 100; ++i) {
        auto q = Run({"squeue", "-h", "-o", "%i"});
        if (q.exit_code != 0 || q.out.find_first_not_of(" \n") == std::string::npos) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    for (pid_t& p : slurmd_) Terminate(p);
    slurmd_.clear();
    Terminate(ctld_);
    if (!conf_.empty()) KillStragglers();
    std::error_code ec;
    if (!short_.empty()) std::filesystem::remove_all(short_, ec);
  }

 private:
  void WriteConfig(int cpus, bool topology, const std::optional<Preemption>& preemption) {
    std::ofstream c(conf_);
    // slurmctld serves only where SlurmctldHost names its own host.
    c << "ClusterName=ladder-test\nSlurmctldHost=" << ThisHostname() << "(127.0.0.1)\nSlurmctldPort=" << FreePort()
      << "\nSlurmUser=root\nSlurmdUser=root\nAuthType=auth/none\nCredType=cred/none\n"
      << "StateSaveLocation=" << (base_ / "state").string() << "\nSlurmdSpoolDir=" << (short_ / "spool").string()
      << "/%n\nTmpFS=" << (short_ / "tmp").string() << "/%n\nSlurmctldPidFile=" << (base_ / "pid").string()
      << "/slurmctld.pid\nSlurmdPidFile=" << (base_ / "pid").string() << "/slurmd.%n.pid\nSlurmctldLogFile="
      << (base_ / "log").string() << "/slurmctld.log\nSlurmdLogFile=" << (base_ / "log").string()
      << "/slurmd.%n.log\nProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nSelectType=select/cons_tres\n"
      << "SelectTypeParameters=CR_Core\nSlurmdParameters=config_overrides\nReturnToService=2\nMpiDefault=pmix\n"
      << "JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n"
      << "JobCompType=jobcomp/none\nSwitchType=switch/none\nMailProg=/bin/true\nSlurmdTimeout=10\nKillWait=2\n"
      << "MinJobAge=60\n" << (topology ? "TopologyPlugin=topology/tree\n" : "");
    for (int i = 1; i <= nodes_; ++i) {
      c << "NodeName=n" << i << " NodeHostname=n" << i << " NodeAddr=127.0.0.1 Port=" << FreePort()
        << " CPUs=" << cpus << " RealMemory=1000 State=UNKNOWN\n";
    }
    if (preemption) {
      c << "PreemptType=preempt/partition_prio\nPreemptMode=REQUEUE\nJobRequeue=1\nAuthInfo=cred_expire="
        << preemption->cred_expire_s << "\nSchedulerParameters=sched_interval=2\n"
        << (preemption->send_user_signal ? "SlurmctldParameters=preempt_send_user_signal\n" : "")
        << "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP PriorityTier=1 GraceTime="
        << preemption->grace_s << "\nPartitionName=high Nodes=ALL MaxTime=INFINITE State=UP PriorityTier=2 "
        << "PreemptMode=OFF\n";
    } else {
      c << "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n";
    }
    std::ofstream(base_ / "etc" / "cgroup.conf") << "CgroupPlugin=cgroup/v1\n";
    // PMIx (srun --mpi=pmix): once, under load, a message between two nodes' slurmstepd failed ("pmixp_p2p_send:
    // send failed ... exceeded the retry limit") and the MPI trial went on only after PMIx's timeout, 300 s by
    // default: it completed after 302 s, past ctest's 300 s. With a minute such a stall ends inside the test's time.
    std::ofstream(base_ / "etc" / "mpi.conf") << "PMIxTimeout=60\n";
    if (topology) {
      std::ofstream t(base_ / "etc" / "topology.conf");
      std::string leaves;
      for (int first = 1, s = 1; first <= nodes_; first += 2, ++s) {
        const int last = std::min(first + 1, nodes_);
        t << "SwitchName=leaf" << s << " Nodes=n[" << first << "-" << last << "]\n";
        leaves += (leaves.empty() ? "leaf" : ",leaf") + std::to_string(s);
      }
      t << "SwitchName=top Switches=" << leaves << "\n";
    }
  }

  pid_t Spawn(std::vector<std::string> args, const std::filesystem::path& log) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_store;
    for (char** e = environ; *e; ++e) env_store.emplace_back(*e);
    env_store.push_back("SLURM_CONF=" + conf_);
    std::vector<char*> envp;
    for (auto& e : env_store) envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);  // its own session: a test's signals do not reach it
    pid_t pid = -1;
    if (posix_spawn(&pid, argv[0], &fa, &attr, argv.data(), envp.data()) != 0) pid = -1;
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    return pid;
  }

  // Any process left of this cluster (a slurmstepd whose slurmd died, a job's task): they all carry this
  // cluster's SLURM_CONF in their environment.
  // The daemons and tasks of a cluster whose test is gone (killed at ctest's timeout: no destructor ran) would go on
  // taking CPU from every later test: each process whose SLURM_CONF names a cluster whose owner.pid is not alive is
  // killed. A cluster another test still runs (its owner alive) is left alone.
  static void ReapOrphans() {
    std::map<std::string, bool> orphaned;  // conf path -> its owner is gone
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
      const std::string name = e.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream env(e.path() / "environ", std::ios::binary);
      std::string var;
      while (std::getline(env, var, '\0')) {
        if (var.rfind("SLURM_CONF=", 0) != 0) continue;
        const std::filesystem::path conf = var.substr(11);
        auto it = orphaned.find(conf.string());
        if (it == orphaned.end()) {
          std::ifstream owner(conf.parent_path().parent_path() / "owner.pid");
          pid_t pid = 0;
          const bool gone = (owner >> pid) && pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH;
          it = orphaned.emplace(conf.string(), gone).first;
        }
        if (it->second) ::kill(static_cast<pid_t>(std::stol(name)), SIGKILL);
        break;
      }
    }
  }

  void KillStragglers() const {
    const std::string mark = "SLURM_CONF=" + conf_;
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
      const std::string name = e.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      const pid_t pid = static_cast<pid_t>(std::stol(name));
      if (pid == ::getpid()) continue;
      std::ifstream env(e.path() / "environ", std::ios::binary);
      std::string var;
      while (std::getline(env, var, '\0')) {
        if (var == mark) {
          ::kill(pid, SIGKILL);
          break;
        }
      }
    }
  }

  static void Terminate(pid_t& pid) {
    if (pid <= 0) return;
    ::kill(pid, SIGTERM);
    for (int i = 0; i < 100; ++i) {
      if (::waitpid(pid, nullptr, WNOHANG) == pid) {
        pid = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    pid = -1;
  }

  std::filesystem::path base_, short_;
  std::string conf_;
  int nodes_ = 0;
  pid_t ctld_ = -1;
  std::vector<pid_t> slurmd_;
};

}  // namespace ladder::testing
