// ladder-scheduler-sim: event-driven simulation of the node-group scheduler (server/scheduler) on a Summit-like
// cluster, against a first-fit FIFO baseline on the same workload and the same node-failure trace.
// Run through bench/scheduler_sim (see --help there). Writes nothing; prints a table, then one JSON line.
//
// Workload (deterministic for a seed): ASHA-like search trials of 1-64 nodes (heavy-tailed: most are 1-2
// nodes, a few are 32-64), most stopped at the first rung after a short time, few run long; a few promoted
// trials and hero runs (64 nodes, hours) that may preempt search trials. The searcher keeps --queue requests
// waiting (closed loop: a new trial is submitted when one starts) until all --trials are submitted.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <queue>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "server/scheduler/inventory.h"
#include "server/scheduler/scheduler.h"

namespace ls = ladder::scheduler;

namespace {

struct Options {
  int trials = 100000;
  int queue = 2000;
  int racks = 256;
  int nodes_per_rack = 18;
  int gpus = 6;
  int racks_per_switch = 16;
  uint64_t seed = 1;
  double node_mtbf_days = 200;     // per node; 0: no failures
  double repair_h = 4;
  double checkpoint_s = 60;        // time a preempted trial takes to checkpoint and stop
  int hero_every = 10000;          // one hero run per this many trials
  std::string inventory;           // optional: nodes from an inventory file instead
  bool rung_estimates = true;      // also run ladder with rung-aware estimates (a third column)
};

[[noreturn]] void Usage(int code) {
  std::fprintf(code ? stderr : stdout,
               "usage: ladder-scheduler-sim [--trials N] [--queue N] [--seed N] [--racks N] [--nodes-per-rack N]\n"
               "         [--gpus N] [--racks-per-switch N] [--mtbf-days X] [--repair-h X] [--inventory FILE]\n"
               "         [--rung-estimates on|off]\n");
  std::exit(code);
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") Usage(0);
    if (i + 1 >= argc) {
      std::fprintf(stderr, "ladder-scheduler-sim: %s needs a value (or is unknown)\n", a.c_str());
      Usage(2);
    }
    std::string v = argv[++i];
    char* end = nullptr;
    double num = std::strtod(v.c_str(), &end);
    bool numeric = end && *end == 0 && !v.empty() && num >= 0;
    auto need = [&](bool ok) {
      if (!ok) {
        std::fprintf(stderr, "ladder-scheduler-sim: %s: bad value '%s'\n", a.c_str(), v.c_str());
        std::exit(2);
      }
    };
    if (a == "--inventory") {
      o.inventory = v;
      continue;
    }
    if (a == "--rung-estimates") {
      need(v == "on" || v == "off");
      o.rung_estimates = v == "on";
      continue;
    }
    need(numeric);
    if (a == "--trials") need(num >= 1), o.trials = static_cast<int>(num);
    else if (a == "--queue") need(num >= 1), o.queue = static_cast<int>(num);
    else if (a == "--seed") o.seed = static_cast<uint64_t>(num);
    else if (a == "--racks") need(num >= 1), o.racks = static_cast<int>(num);
    else if (a == "--nodes-per-rack") need(num >= 1), o.nodes_per_rack = static_cast<int>(num);
    else if (a == "--gpus") need(num >= 1), o.gpus = static_cast<int>(num);
    else if (a == "--racks-per-switch") need(num >= 1), o.racks_per_switch = static_cast<int>(num);
    else if (a == "--mtbf-days") o.node_mtbf_days = num;
    else if (a == "--repair-h") o.repair_h = num;
    else {
      std::fprintf(stderr, "ladder-scheduler-sim: unknown option %s\n", a.c_str());
      Usage(2);
    }
  }
  return o;
}

struct TrialDef {
  ls::GroupRequest req;
  double work = 0;            // actual run time, seconds
  std::vector<double> rungs;  // run time at which each rung it reaches ends (the last one == work)
};

// Group sizes (nodes) and their share of search trials: heavy-tailed, 1-64.
const std::vector<std::pair<int, double>> kSizes = {{1, 40},  {2, 18}, {3, 4},    {4, 14},  {6, 3},    {8, 9},
                                                    {12, 2},  {16, 5}, {24, 1.5}, {32, 2.5}, {48, 0.5}, {64, 0.5}};

std::vector<TrialDef> MakeWorkload(const Options& o) {
  std::mt19937_64 rng(o.seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<double> w;
  for (const auto& s : kSizes) w.push_back(s.second);
  std::discrete_distribution<int> size(w.begin(), w.end());
  // ASHA, reduction factor 3: rungs at 10, 30, 90, 270 and 810 minutes; a third of each rung goes on.
  const double kRungMin[] = {10, 30, 90, 270, 810};
  const double kWalltime = 810 * 60 * 1.1;  // the estimate every search trial carries: its full budget
  std::vector<TrialDef> out(o.trials);
  for (int i = 0; i < o.trials; ++i) {
    TrialDef& t = out[i];
    t.req.trial_id = i + 1;
    t.req.gpus_per_rank = 1;
    if (o.hero_every > 0 && i % o.hero_every == o.hero_every / 2) {
      t.req.nodes = 64;
      t.req.ranks_per_node = o.gpus;
      t.req.priority = ls::Priority::kHero;
      t.work = 4 * 3600 * (0.9 + 0.2 * u(rng));
      t.req.estimated_duration_s = 5 * 3600;
      t.rungs = {t.work};
      continue;
    }
    if (u(rng) < 0.005) {  // promoted: a finalist re-run larger
      const int kPromoted[] = {16, 32, 64};
      t.req.nodes = kPromoted[rng() % 3];
      t.req.ranks_per_node = o.gpus;
      t.req.priority = ls::Priority::kPromoted;
      t.work = 3600 * (2 + 2 * u(rng));
      t.req.estimated_duration_s = 5 * 3600;
      t.rungs = {t.work};
      continue;
    }
    t.req.nodes = kSizes[size(rng)].first;
    // Half of the 1-node trials use part of a node (1-3 GPUs).
    t.req.ranks_per_node = (t.req.nodes == 1 && u(rng) < 0.5) ? 1 + static_cast<int>(rng() % 3) : o.gpus;
    int rung = 0;
    while (rung < 4 && u(rng) < 1.0 / 3) ++rung;
    double pace = 0.8 + 0.2 * u(rng);
    for (int i = 0; i <= rung; ++i) t.rungs.push_back(kRungMin[i] * 60 * pace);
    t.work = t.rungs.back();
    t.req.estimated_duration_s = kWalltime;
  }
  return out;
}

std::vector<ls::NodeSpec> MakeCluster(const Options& o) {
  std::vector<ls::NodeSpec> nodes;
  if (!o.inventory.empty()) {
    std::ifstream in(o.inventory);
    if (!in) {
      std::fprintf(stderr, "ladder-scheduler-sim: cannot read %s\n", o.inventory.c_str());
      std::exit(1);
    }
    std::stringstream ss;
    ss << in.rdbuf();
    auto errors = ls::ParseInventory(ss.str(), o.inventory, &nodes);
    for (const auto& e : errors) std::fprintf(stderr, "%s\n", e.ToString().c_str());
    if (!errors.empty()) std::exit(1);
    return nodes;
  }
  for (int r = 0; r < o.racks; ++r) {
    for (int i = 0; i < o.nodes_per_rack; ++i) {
      ls::NodeSpec n;
      char id[32];
      std::snprintf(id, sizeof id, "r%03dn%02d", r, i);
      n.id = id;
      n.resources = {.cores = 42, .slots = o.gpus, .gpus = o.gpus, .memory_bytes = int64_t{512} << 30, .pool = ""};
      n.labels = {{"rack", "r" + std::to_string(r)}, {"switch", "s" + std::to_string(r / o.racks_per_switch)}};
      nodes.push_back(std::move(n));
    }
  }
  return nodes;
}

struct Result {
  std::string name;
  double utilization = 0;           // over [0, last submission]
  double utilization_makespan = 0;  // over [0, last completion]
  double horizon_h = 0, makespan_h = 0;
  double racks_per_group = 0, racks_per_multinode_group = 0, racks_ideal = 0;
  double p50_us = 0, p99_us = 0, max_us = 0, mean_us = 0;  // wall time per pass
  double cpu_p50_us = 0, cpu_p99_us = 0;                     // thread CPU time per pass
  int64_t passes = 0, examined = 0, starts = 0, backfilled = 0, preempted = 0, failures = 0, requeued = 0, completed = 0;
  double hero_wait_h = 0;  // mean wait of hero runs
  double wall_s = 0;
};

// This thread's CPU time: unlike wall time, it leaves out time the OS gave to other processes.
double ThreadCpuUs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

enum class EvKind { kEnd, kPreemptDone, kNodeFail, kNodeRepair, kRung };
struct Event {
  double t;
  uint64_t seq;
  EvKind kind;
  int64_t id;   // trial id, or node index
  int gen;
  bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

Result Simulate(const std::string& name, const Options& o, const std::vector<TrialDef>& defs,
                const std::vector<ls::NodeSpec>& nodes, ls::SchedulerOptions sopt, bool fifo_classes,
                bool rung_estimates) {
  auto wall0 = std::chrono::steady_clock::now();
  Result res;
  res.name = name;
  ls::NodeGroupScheduler sched(sopt);
  int64_t total_gpus = 0;
  for (const auto& n : nodes) {
    if (!sched.AddNode(n).ok()) std::abort();
    total_gpus += n.resources.gpus;
  }
  struct TrialRt {
    double work = 0, start = 0, submitted = 0, est = 0;
    double progress_at_start = 0;
    int gen = 0, gpus = 0;
    bool running = false, done = false;
  };
  std::vector<TrialRt> rt(defs.size() + 1);
  // Rung-aware estimates: the time to the end of the rung a trial is in (x1.1), raised at each rung it passes.
  const double kMargin = 1.1;
  auto rung_end = [&](int64_t id, double progress) {
    for (double r : defs[id - 1].rungs) {
      if (r > progress + 1e-6) return r;
    }
    return defs[id - 1].rungs.back();
  };
  auto rung_estimate = [&](int64_t id) {
    double p = defs[id - 1].work - rt[id].work;
    return std::max(1.0, (rung_end(id, p) - p) * kMargin);
  };
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  uint64_t seq = 0;
  std::mt19937_64 fail_rng(o.seed * 7919 + 17);  // the same failure trace for every policy
  std::exponential_distribution<double> fail_gap(
      o.node_mtbf_days > 0 ? static_cast<double>(nodes.size()) / (o.node_mtbf_days * 86400) : 1);
  auto next_failure = [&](double now) {
    if (o.node_mtbf_days <= 0) return;
    events.push({now + fail_gap(fail_rng), seq++, EvKind::kNodeFail,
                 static_cast<int64_t>(fail_rng() % nodes.size()), 0});
  };
  next_failure(0);

  double now = 0, last_t = 0;
  int64_t busy_gpus = 0, avail_gpus = total_gpus;
  double busy_int = 0, avail_int = 0, busy_total = 0, avail_total = 0;
  double horizon = -1;
  size_t next_submit = 0;
  std::vector<float> lat_us, cpu_us;  // per pass: wall time, and this thread's CPU time
  lat_us.reserve(defs.size() * 3);
  cpu_us.reserve(defs.size() * 3);
  double racks_sum = 0, racks_multi_sum = 0, racks_ideal_sum = 0;
  int64_t multi = 0;
  double hero_wait = 0;
  int heroes = 0;
  std::vector<int> down(nodes.size(), 0);

  auto stop = [&](int64_t id) {  // a running trial stops: account its busy GPUs and work done
    TrialRt& t = rt[id];
    t.work -= now - t.start;
    busy_gpus -= t.gpus;
    t.running = false;
    t.gen++;
  };
  while (true) {
    // The searcher keeps `queue` requests waiting.
    while (next_submit < defs.size() && static_cast<int>(sched.queued()) < o.queue) {
      ls::GroupRequest r = defs[next_submit].req;
      if (fifo_classes) r.priority = ls::Priority::kSearch;
      rt[r.trial_id].work = defs[next_submit].work;
      rt[r.trial_id].submitted = now;
      if (rung_estimates) r.estimated_duration_s = rung_estimate(r.trial_id);
      rt[r.trial_id].est = *r.estimated_duration_s;
      if (!sched.Submit(r, now).ok()) std::abort();
      ++next_submit;
      if (next_submit == defs.size()) horizon = now;
    }
    double c0 = ThreadCpuUs();
    auto t0 = std::chrono::steady_clock::now();
    auto decisions = sched.Schedule(now);
    auto t1 = std::chrono::steady_clock::now();
    lat_us.push_back(std::chrono::duration<float, std::micro>(t1 - t0).count());
    cpu_us.push_back(static_cast<float>(ThreadCpuUs() - c0));
    for (const auto& d : decisions) {
      TrialRt& t = rt[d.trial_id];
      if (d.kind == ls::Decision::Kind::kStart) {
        t.running = true;
        t.start = now;
        t.gen++;
        t.gpus = 0;
        for (const auto& s : d.group.slices) t.gpus += static_cast<int>(s.gpus.size());
        busy_gpus += t.gpus;
        int racks = sched.RacksSpanned(d.group);
        racks_sum += racks;
        if (d.group.size() >= 2) racks_multi_sum += racks, ++multi;
        racks_ideal_sum += sched.cluster().IdealRacks(d.group.size());
        res.starts++;
        if (defs[d.trial_id - 1].req.priority == ls::Priority::kHero && t.work == defs[d.trial_id - 1].work) {
          hero_wait += now - t.submitted, ++heroes;
        }
        events.push({now + t.work, seq++, EvKind::kEnd, d.trial_id, t.gen});
        if (rung_estimates) {
          t.progress_at_start = defs[d.trial_id - 1].work - t.work;
          double next = rung_end(d.trial_id, t.progress_at_start);
          if (next < defs[d.trial_id - 1].work - 1e-6) {
            events.push({now + next - t.progress_at_start, seq++, EvKind::kRung, d.trial_id, t.gen});
          }
        }
      } else {
        events.push({now + o.checkpoint_s, seq++, EvKind::kPreemptDone, d.trial_id, t.gen});
      }
    }
    if (events.empty()) break;
    if (res.completed == static_cast<int64_t>(defs.size())) break;
    now = events.top().t;
    // Integrate busy and available GPU time up to `now`.
    double dt = now - last_t;
    busy_total += busy_gpus * dt;
    avail_total += avail_gpus * dt;
    if (horizon < 0) busy_int += busy_gpus * dt, avail_int += avail_gpus * dt;
    last_t = now;
    while (!events.empty() && events.top().t == now) {
      Event e = events.top();
      events.pop();
      switch (e.kind) {
        case EvKind::kEnd:
          if (!rt[e.id].running || rt[e.id].gen != e.gen) break;
          stop(e.id);
          rt[e.id].done = true;
          res.completed++;
          if (!sched.Finish(e.id).ok()) std::abort();
          break;
        case EvKind::kPreemptDone: {
          if (!rt[e.id].running || rt[e.id].gen != e.gen) break;
          stop(e.id);
          double left = std::max(rt[e.id].work, 1.0);
          rt[e.id].work = left;
          rt[e.id].est = rung_estimates ? rung_estimate(e.id) : std::max(rt[e.id].est - (now - rt[e.id].start), left);
          if (!sched.Requeue(e.id, rt[e.id].est).ok()) std::abort();
          break;
        }
        case EvKind::kNodeFail: {
          if (res.completed < static_cast<int64_t>(defs.size())) next_failure(now);
          if (down[e.id]) break;
          down[e.id] = 1;
          res.failures++;
          std::vector<int64_t> affected;
          if (!sched.SetNodeState(nodes[e.id].id, ls::NodeState::kDown, &affected).ok()) std::abort();
          avail_gpus -= nodes[e.id].resources.gpus;
          for (int64_t id : affected) {  // the rest of each group is stopped; it resumes from its checkpoint
            stop(id);
            rt[id].work = std::max(rt[id].work, 1.0);
            res.requeued++;
            if (!sched.Requeue(id, rung_estimates ? std::optional<double>(rung_estimate(id)) : std::nullopt).ok()) {
              std::abort();
            }
          }
          events.push({now + o.repair_h * 3600, seq++, EvKind::kNodeRepair, e.id, 0});
          break;
        }
        case EvKind::kRung: {  // the trial passed a rung and goes on: its estimate grows to the next one
          TrialRt& t = rt[e.id];
          if (!t.running || t.gen != e.gen) break;
          double progress = t.progress_at_start + (now - t.start);
          double next = rung_end(e.id, progress);
          if (!sched.UpdateEstimate(e.id, (next - t.progress_at_start) * kMargin).ok()) std::abort();
          if (next < defs[e.id - 1].work - 1e-6) {
            events.push({t.start + next - t.progress_at_start, seq++, EvKind::kRung, e.id, t.gen});
          }
          break;
        }
        case EvKind::kNodeRepair:
          down[e.id] = 0;
          avail_gpus += nodes[e.id].resources.gpus;
          if (!sched.SetNodeState(nodes[e.id].id, ls::NodeState::kUp).ok()) std::abort();
          break;
      }
    }
  }
  if (res.completed != static_cast<int64_t>(defs.size())) {
    std::fprintf(stderr, "%s: only %lld of %zu trials completed (queued %zu, running %zu)\n", name.c_str(),
                 static_cast<long long>(res.completed), defs.size(), sched.queued(), sched.running());
    std::exit(1);
  }
  res.utilization = avail_int > 0 ? busy_int / avail_int : 0;
  res.utilization_makespan = avail_total > 0 ? busy_total / avail_total : 0;
  res.horizon_h = horizon / 3600;
  res.makespan_h = now / 3600;
  res.racks_per_group = res.starts ? racks_sum / res.starts : 0;
  res.racks_per_multinode_group = multi ? racks_multi_sum / multi : 0;
  res.racks_ideal = res.starts ? racks_ideal_sum / res.starts : 0;
  res.passes = sched.counters().passes;
  res.examined = sched.counters().examined;
  res.backfilled = sched.counters().backfilled;
  res.preempted = sched.counters().preempted;
  res.hero_wait_h = heroes ? hero_wait / heroes / 3600 : 0;
  std::sort(lat_us.begin(), lat_us.end());
  auto pct = [](const std::vector<float>& v, double p) {
    return v.empty() ? 0.0 : v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
  };
  res.p50_us = pct(lat_us, 0.50);
  res.p99_us = pct(lat_us, 0.99);
  std::sort(cpu_us.begin(), cpu_us.end());
  res.cpu_p50_us = pct(cpu_us, 0.50);
  res.cpu_p99_us = pct(cpu_us, 0.99);
  res.max_us = lat_us.empty() ? 0 : lat_us.back();
  double sum = 0;
  for (float v : lat_us) sum += v;
  res.mean_us = lat_us.empty() ? 0 : sum / lat_us.size();
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return res;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = Parse(argc, argv);
  auto defs = MakeWorkload(o);
  auto nodes = MakeCluster(o);
  ls::NodeGroupScheduler probe;
  {  // Leave out what this cluster can never hold (a small --inventory), renumbering the rest.
    for (const auto& n : nodes) {
      ls::NodeSpec up = n;
      up.state = ls::NodeState::kUp;
      if (!probe.AddNode(up).ok()) std::abort();
    }
    size_t kept = 0;
    for (size_t i = 0; i < defs.size(); ++i) {
      if (!probe.Feasible(defs[i].req).ok()) continue;
      defs[i].req.trial_id = static_cast<int64_t>(kept) + 1;
      if (kept != i) defs[kept] = std::move(defs[i]);  // never a self-move: it would empty `rungs`
      ++kept;
    }
    if (kept < defs.size()) {
      std::printf("left out: %zu trials that need more than this cluster has\n", defs.size() - kept);
      defs.resize(kept);
    }
    if (defs.empty()) {
      std::fprintf(stderr, "ladder-scheduler-sim: no trial fits this cluster\n");
      return 1;
    }
  }
  double node_hours = 0;
  for (const auto& d : defs) node_hours += d.work / 3600 * d.req.nodes * d.req.ranks_per_node / o.gpus;
  if (o.inventory.empty()) {
    std::printf("cluster: %zu nodes x %d GPUs, %d racks of %d, %d racks per switch\n", nodes.size(), o.gpus, o.racks,
                o.nodes_per_rack, o.racks_per_switch);
  } else {
    std::printf("cluster: %zu nodes from %s, %d racks, %d switches\n", nodes.size(), o.inventory.c_str(),
                probe.cluster().rack_count(), probe.cluster().switch_count());
  }
  std::printf("workload: %zu trials (seed %llu), %.0f node-hours of work, %d kept waiting; node MTBF %.0f days, "
              "repair %.0f h\n", defs.size(), static_cast<unsigned long long>(o.seed), node_hours, o.queue,
              o.node_mtbf_days, o.repair_h);
  std::fflush(stdout);

  ls::SchedulerOptions ladder_opt;  // the defaults: compact, EASY backfill, preemption, aging
  ls::SchedulerOptions base_opt;
  base_opt.placement = ls::PlacementPolicy::kFirstFit;
  base_opt.backfill = false;
  base_opt.preemption = false;
  base_opt.aging_interval_s = 0;
  // The JSON compares the first two columns; the third shows the same scheduler with rung-aware estimates.
  std::vector<Result> res;
  res.push_back(Simulate("ladder", o, defs, nodes, ladder_opt, false, false));
  res.push_back(Simulate("first-fit FIFO", o, defs, nodes, base_opt, true, false));
  if (o.rung_estimates) res.push_back(Simulate("ladder, rung estimates", o, defs, nodes, ladder_opt, false, true));
  auto f = [](const char* fmt, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, fmt, v);
    return std::string(buf);
  };
  auto row = [&](const char* label, auto cell) {
    std::printf("%-36s", label);
    for (const Result& r : res) std::printf(" %22s", cell(r).c_str());
    std::printf("\n");
  };
  std::printf("\n");
  row("", [](const Result& r) { return r.name; });
  row("utilization (until last submit)", [&](const Result& r) { return f("%.4f", r.utilization); });
  row("utilization (over makespan)", [&](const Result& r) { return f("%.4f", r.utilization_makespan); });
  row("horizon / makespan (h)", [&](const Result& r) { return f("%.1f", r.horizon_h) + " / " + f("%.1f", r.makespan_h); });
  row("racks per group (all)", [&](const Result& r) { return f("%.3f", r.racks_per_group); });
  row("  lower bound, ceil(nodes / rack)", [&](const Result& r) { return f("%.3f", r.racks_ideal); });
  row("racks per group (2+ nodes)", [&](const Result& r) { return f("%.3f", r.racks_per_multinode_group); });
  row("decision latency p50 / p99 (us)", [&](const Result& r) { return f("%.1f", r.p50_us) + " / " + f("%.1f", r.p99_us); });
  row("  thread CPU time p50 / p99 (us)", [&](const Result& r) { return f("%.1f", r.cpu_p50_us) + " / " + f("%.1f", r.cpu_p99_us); });
  row("  mean / max (us)", [&](const Result& r) { return f("%.1f", r.mean_us) + " / " + f("%.0f", r.max_us); });
  row("scheduling passes", [&](const Result& r) { return f("%.0f", r.passes); });
  row("queued requests examined per pass", [&](const Result& r) { return f("%.1f", r.examined / std::max<double>(1, r.passes)); });
  row("starts (backfilled)", [&](const Result& r) { return f("%.0f", r.starts) + " (" + f("%.0f", r.backfilled) + ")"; });
  row("preempted / node failures / requeued", [&](const Result& r) {
    return f("%.0f", r.preempted) + " / " + f("%.0f", r.failures) + " / " + f("%.0f", r.requeued);
  });
  row("hero run mean wait (h)", [&](const Result& r) { return f("%.2f", r.hero_wait_h); });
  row("simulation wall time (s)", [&](const Result& r) { return f("%.1f", r.wall_s); });
  const Result& a = res[0];
  const Result& b = res[1];
  std::printf("{\"utilization\": %.4f, \"baseline_utilization\": %.4f, \"racks_per_group\": %.4f, "
              "\"baseline_racks_per_group\": %.4f, \"alloc_p50_us\": %.2f, \"alloc_p99_us\": %.2f}\n",
              a.utilization, b.utilization, a.racks_per_group, b.racks_per_group, a.p50_us, a.p99_us);
  return 0;
}
