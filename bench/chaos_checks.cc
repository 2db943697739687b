#include "bench/chaos_checks.h"

#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

namespace ladder::bench::chaos {

namespace {

constexpr int64_t kTagStride = 100000;  // ladder-chaos-trial's tag: epoch * 100000 + step

class ReadOnlyDb {
 public:
  explicit ReadOnlyDb(const std::string& path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
      std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      throw std::runtime_error("cannot open " + path + ": " + msg);
    }
    sqlite3_busy_timeout(db_, 10000);
  }
  ~ReadOnlyDb() { sqlite3_close(db_); }
  // Calls row(statement) for every row of `sql`.
  template <typename F>
  void Each(const std::string& sql, F row) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) {
      throw std::runtime_error(std::string("SQL failed: ") + sqlite3_errmsg(db_) + " in: " + sql);
    }
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) row(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) throw std::runtime_error(std::string("SQL failed: ") + sqlite3_errmsg(db_) + " in: " + sql);
  }

 private:
  sqlite3* db_ = nullptr;
};

std::string Text(sqlite3_stmt* st, int col) {
  const unsigned char* t = sqlite3_column_text(st, col);
  return t ? reinterpret_cast<const char*>(t) : "";
}

const char* StateName(int s) {
  switch (s) {
    case 1: return "PENDING";
    case 2: return "RUNNING";
    case 3: return "COMPLETED";
    case 4: return "FAILED";
    case 5: return "CANCELLED";
    default: return "UNKNOWN";
  }
}

void Example(Findings& f, const std::string& what) {
  if (f.examples.size() < 12) f.examples.push_back(what);
}

// What the trials' records say they did.
struct Records {
  std::map<std::tuple<int64_t, int64_t, int>, int> starts;  // (trial, epoch, rank) -> times started
  std::set<std::pair<int64_t, int64_t>> printed;            // (trial, tag)
  std::map<std::pair<int64_t, int64_t>, std::pair<double, double>> rank0_alive;  // (trial, epoch) -> [first, last]
};

Records ReadRecords(const std::string& dir) {
  Records r;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("trial-", 0) != 0) continue;
    const int64_t trial = std::stoll(name.substr(6));
    std::ifstream in(entry.path());
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream words(line);
      std::string kind;
      int64_t epoch = 0;
      int rank = 0;
      words >> kind >> epoch >> rank;
      double time = 0;
      if (kind == "start") {
        std::string trial_dir;
        int pid = 0;
        words >> trial_dir >> pid >> time;
        ++r.starts[{trial, epoch, rank}];
      } else if (kind == "point") {
        int64_t step = 0, tag = 0;
        words >> step >> tag >> time;
        r.printed.insert({trial, tag});
      } else if (kind == "end") {
        words >> time;
      } else {
        continue;  // a line cut by a kill
      }
      if (rank != 0 || time <= 0) continue;
      auto [it, fresh] = r.rank0_alive.try_emplace({trial, epoch}, time, time);
      if (!fresh) {
        it->second.first = std::min(it->second.first, time);
        it->second.second = std::max(it->second.second, time);
      }
    }
  }
  return r;
}

}  // namespace

std::map<std::pair<int64_t, int64_t>, int64_t> ReadAcks(const std::vector<std::string>& worker_logs) {
  std::map<std::pair<int64_t, int64_t>, int64_t> acks;
  for (const auto& path : worker_logs) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      auto at = line.find("ack trial ");
      if (at == std::string::npos) continue;
      std::istringstream words(line.substr(at));
      std::string w1, w2, w3, w4;
      int64_t trial = 0, epoch = 0, seq = 0;
      words >> w1 >> w2 >> trial >> w3 >> epoch >> w4 >> seq;
      if (!words || w3 != "epoch" || w4 != "durable_seq") continue;
      int64_t& best = acks[{trial, epoch}];
      best = std::max(best, seq);
    }
  }
  return acks;
}

Findings Check(const std::string& db_path, const std::string& record_dir,
               const std::map<std::pair<int64_t, int64_t>, int64_t>& acks) {
  Findings f;
  const Records rec = ReadRecords(record_dir);
  ReadOnlyDb db(db_path);

  db.Each("PRAGMA integrity_check", [&](sqlite3_stmt* st) {
    if (f.integrity.empty()) f.integrity = Text(st, 0);
  });
  f.integrity_ok = f.integrity == "ok";

  f.searches_completed = true;
  db.Each("SELECT state FROM searches ORDER BY id", [&](sqlite3_stmt* st) {
    const int s = sqlite3_column_int(st, 0);
    const char* name = s == 2 ? "COMPLETED" : s == 1 ? "RUNNING" : s == 3 ? "CANCELLED" : s == 4 ? "FAILED" : "?";
    f.search_states += (f.search_states.empty() ? "" : " ") + std::string(name);
    f.searches_completed = f.searches_completed && s == 2;
  });
  if (f.search_states.empty()) f.searches_completed = false;

  // Every trial ended, once, with a reason.
  std::map<int64_t, int64_t> ends;
  db.Each("SELECT trial_id, count(*) FROM events WHERE kind IN ('trial_completed', 'trial_failed', "
          "'trial_cancelled') GROUP BY trial_id",
          [&](sqlite3_stmt* st) { ends[sqlite3_column_int64(st, 0)] = sqlite3_column_int64(st, 1); });
  db.Each("SELECT id, state, finished_at IS NOT NULL, error FROM trials ORDER BY id", [&](sqlite3_stmt* st) {
    const int64_t id = sqlite3_column_int64(st, 0);
    const int state = sqlite3_column_int(st, 1);
    ++f.trials;
    ++f.trial_states[StateName(state)];
    if (state < 3 || state > 5 || sqlite3_column_int(st, 2) == 0) {
      ++f.trials_not_ended;
      Example(f, "trial " + std::to_string(id) + " is " + StateName(state) + " (no end)");
    }
    if (state == 4 && Text(st, 3).empty()) {
      ++f.failed_without_reason;
      Example(f, "trial " + std::to_string(id) + " failed without an error");
    }
    const int64_t n = ends.count(id) ? ends[id] : 0;
    if (n != 1) {
      ++f.trials_ended_not_once;
      Example(f, "trial " + std::to_string(id) + " has " + std::to_string(n) + " end entries in the journal");
    }
  });
  db.Each("SELECT trial_id, assignment_epoch FROM allocations WHERE released_at IS NULL OR outcome IS NULL OR "
          "outcome = ''",
          [&](sqlite3_stmt* st) {
            ++f.open_runs;
            Example(f, "trial " + std::to_string(sqlite3_column_int64(st, 0)) + " epoch " +
                           std::to_string(sqlite3_column_int64(st, 1)) + ": its run was never closed with an outcome");
          });

  // The points: each stored once, each printed by a trial, each acknowledged one stored.
  std::set<std::pair<int64_t, int64_t>> stored;
  db.Each("SELECT trial_id, value, count(*) FROM metrics WHERE name = 'tag' GROUP BY trial_id, value",
          [&](sqlite3_stmt* st) {
            const int64_t trial = sqlite3_column_int64(st, 0);
            const auto tag = static_cast<int64_t>(std::llround(sqlite3_column_double(st, 1)));
            const int64_t n = sqlite3_column_int64(st, 2);
            stored.insert({trial, tag});
            f.stored_points += n;
            if (n > 1) {
              f.duplicate_points += n - 1;
              Example(f, "trial " + std::to_string(trial) + " point " + std::to_string(tag) + " stored " +
                             std::to_string(n) + " times");
            }
            if (!rec.printed.count({trial, tag})) {
              ++f.phantom_points;
              Example(f, "trial " + std::to_string(trial) + " point " + std::to_string(tag) + " stored, never printed");
            }
          });
  for (const auto& [run, durable_seq] : acks) {
    const auto [trial, epoch] = run;
    for (int64_t step = 1; step <= durable_seq; ++step) {  // sequence number s is the run's step s + 1
      const int64_t tag = epoch * kTagStride + step;
      ++f.acked_points;
      if (!rec.printed.count({trial, tag})) ++f.acked_not_printed;
      if (!stored.count({trial, tag})) {
        ++f.acked_points_lost;
        Example(f, "trial " + std::to_string(trial) + " epoch " + std::to_string(epoch) + " step " +
                       std::to_string(step) + ": acknowledged (durable_seq " + std::to_string(durable_seq) +
                       ") but not in the database");
      }
    }
  }

  // Runs: no (trial, epoch, rank) started twice; epochs of one trial alive at once are counted (fenced ones).
  for (const auto& [key, n] : rec.starts) {
    ++f.runs;
    if (n > 1) {
      f.duplicate_runs += n - 1;
      Example(f, "trial " + std::to_string(std::get<0>(key)) + " epoch " + std::to_string(std::get<1>(key)) +
                     " rank " + std::to_string(std::get<2>(key)) + " started " + std::to_string(n) + " times");
    }
  }
  std::map<int64_t, std::vector<std::pair<std::pair<double, double>, int64_t>>> by_trial;  // (span, epoch)
  for (const auto& [key, span] : rec.rank0_alive) by_trial[key.first].push_back({span, key.second});
  for (auto& [trial, spans] : by_trial) {
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); ++i) {
      const auto& [older, older_epoch] = spans[i - 1];
      const auto& [newer, newer_epoch] = spans[i];
      if (newer.first >= older.second) continue;
      ++f.overlapping_epochs;
      Example(f, "trial " + std::to_string(trial) + ": epoch " + std::to_string(older_epoch) + "'s rank 0 still " +
                     "recorded " + std::to_string(static_cast<int64_t>((older.second - newer.first) * 1000)) +
                     " ms after epoch " + std::to_string(newer_epoch) + "'s started");
    }
  }
  return f;
}

}  // namespace ladder::bench::chaos
