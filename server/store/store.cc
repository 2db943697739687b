#include "server/store/store.h"

#include <algorithm>
#include <cmath>

#include <google/protobuf/util/json_util.h>
#include <nlohmann/json.hpp>

#include "common/log.h"
#include "server/store/schema.h"

namespace ladder::store {

using nlohmann::json;

namespace {

std::string PlacementJson(const v1::Trial& t) {
  json arr = json::array();
  for (const auto& p : t.placement()) {
    arr.push_back({{"node", p.node_id()},
                   {"host", p.hostname()},
                   {"slots", std::vector<int>(p.slots().begin(), p.slots().end())},
                   {"first_rank", p.first_rank()},
                   {"gpus", std::vector<int>(p.gpus().begin(), p.gpus().end())}});
  }
  return arr.dump();
}

void ParsePlacement(const std::string& text, v1::Trial* t) {
  json arr = json::parse(text, nullptr, false);
  if (!arr.is_array()) return;
  for (const auto& p : arr) {
    auto* pl = t->add_placement();
    pl->set_node_id(p.value("node", ""));
    pl->set_hostname(p.value("host", ""));
    for (int s : p.value("slots", std::vector<int>{})) pl->add_slots(s);
    pl->set_first_rank(p.value("first_rank", 0));
    for (int g : p.value("gpus", std::vector<int>{})) pl->add_gpus(g);
  }
}

std::string CommandJson(const v1::Trial& t) {
  return json(std::vector<std::string>(t.command().begin(), t.command().end())).dump();
}

}  // namespace

Store::Store(const std::string& path, OpenMode mode) : path_(path), db_(path, /*quick_check=*/false, mode) {
  if (mode == OpenMode::kReadOnly) {
    CheckSchemaReadable();
    return;
  }
  Migrate();
  check_thread_ = std::thread([this] { CheckIntegrity(); });
}

Store::~Store() {
  {
    std::lock_guard<std::mutex> g(check_mu_);
    closing_ = true;
    if (check_db_) sqlite3_interrupt(check_db_);
  }
  if (check_thread_.joinable()) check_thread_.join();
  try {
    Flush();
  } catch (...) {
  }
}

void Store::CheckIntegrity() {
  sqlite3* c = nullptr;
  std::string problem;
  if (sqlite3_open_v2(path_.c_str(), &c, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
    problem = std::string("cannot open it for quick_check: ") + sqlite3_errmsg(c);
  } else {
    sqlite3_busy_timeout(c, 5000);
    {
      std::lock_guard<std::mutex> g(check_mu_);
      check_db_ = c;
      if (closing_) sqlite3_interrupt(c);
    }
    sqlite3_stmt* st = nullptr;
    int rc = sqlite3_prepare_v2(c, "PRAGMA quick_check", -1, &st, nullptr);
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
      auto* text = sqlite3_column_text(st, 0);
      std::string result = text ? reinterpret_cast<const char*>(text) : "";
      if (result != "ok") problem = "quick_check: " + result;
    } else if (rc != SQLITE_INTERRUPT) {
      problem = std::string("quick_check failed: ") + sqlite3_errmsg(c);
    }
    sqlite3_finalize(st);
    std::lock_guard<std::mutex> g(check_mu_);
    check_db_ = nullptr;
  }
  sqlite3_close(c);
  if (!problem.empty()) LogError("store", "database '" + path_ + "' " + problem);
  std::lock_guard<std::mutex> g(check_mu_);
  if (!problem.empty()) integrity_problem_ = "database '" + path_ + "' " + problem;
}

std::optional<std::string> Store::IntegrityProblem() {
  if (check_thread_.joinable()) check_thread_.join();
  std::lock_guard<std::mutex> g(check_mu_);
  return integrity_problem_;
}

int Store::SchemaVersion() {
  auto& st = db_.Prepare("PRAGMA user_version");
  st.Step();
  int v = static_cast<int>(st.Int(0));
  st.Reset();
  return v;
}

void Store::Migrate() {
  const auto& migrations = Migrations();
  int version = SchemaVersion();
  if (version > static_cast<int>(migrations.size())) {
    throw SqliteError("database '" + path_ + "' has schema version " + std::to_string(version) +
                      ", newer than this ladder understands (" + std::to_string(migrations.size()) +
                      "); upgrade ladder");
  }
  if (version == static_cast<int>(migrations.size())) return;
  Transaction txn(db_);
  for (size_t i = static_cast<size_t>(version); i < migrations.size(); ++i) db_.Exec(migrations[i]);
  db_.Exec("PRAGMA user_version=" + std::to_string(migrations.size()));
  txn.Commit();
}

void Store::CheckSchemaReadable() {
  const int version = SchemaVersion(), current = static_cast<int>(Migrations().size());
  if (version == current) return;
  if (version > current) {
    throw SqliteError("database '" + path_ + "' has schema version " + std::to_string(version) +
                      ", newer than this ladder understands (" + std::to_string(current) + "); upgrade ladder");
  }
  throw SqliteError("database '" + path_ + "' has schema version " + std::to_string(version) + ", older than this "
                    "ladder's " + std::to_string(current) + ": reading it needs a migration, which a read-only open "
                    "never writes; open it once read-write (ladder-server --db) to migrate it, or read it with the "
                    "ladder that wrote it");
}

void Store::BeginIfNeeded() {
  if (db_.read_only()) throw SqliteError("database '" + path_ + "' is open read-only: no write");
  if (!db_.InTransaction()) {
    if (pending_writes_ > 0) {  // SQLite rolled the batch back after an error: do not start a second half
      const size_t lost = pending_writes_;
      pending_writes_ = 0;
      throw SqliteError("the batch of " + std::to_string(lost) + " writes was rolled back by SQLite (disk full or "
                        "an I/O error?): nothing of it is stored");
    }
    db_.Exec("BEGIN IMMEDIATE");
    if (holds_lease()) CheckLeaseInBatch();
  }
  ++pending_writes_;
}

void Store::Flush() {
  if (!db_.InTransaction() && pending_writes_ > 0) {
    const size_t lost = pending_writes_;
    pending_writes_ = 0;
    throw SqliteError("the batch of " + std::to_string(lost) + " writes was rolled back by SQLite (disk full or an "
                      "I/O error?): nothing of it is stored");
  }
  if (db_.InTransaction()) {
    if (holds_lease()) CheckLeaseFresh();
    db_.Exec("COMMIT");
  }
  pending_writes_ = 0;
  if (lease_renewal_pending_) lease_renewed_ = lease_renewal_written_;
  lease_renewal_pending_ = false;
}

void Store::Abandon() {
  pending_writes_ = 0;
  lease_renewal_pending_ = false;
  if (db_.InTransaction()) {
    try {
      db_.Exec("ROLLBACK");
    } catch (const SqliteError&) {
      // Already rolled back by SQLite.
    }
  }
}

void Store::InsertSearch(v1::Search* s) {
  BeginIfNeeded();
  auto& st = db_.Prepare(
      "INSERT INTO searches(name,state,spec_yaml,objective_metric,direction,max_trials,parallelism,nodes,"
      "ranks_per_node,gpus_per_rank,created_at,error,priority,plan,slurm_job_id) "
      "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  st.Bind(1, s->name()).Bind(2, s->state()).Bind(3, s->spec_yaml()).Bind(4, s->objective_metric());
  st.Bind(5, s->direction()).Bind(6, s->max_trials()).Bind(7, s->parallelism());
  st.Bind(8, s->group().nodes()).Bind(9, s->group().ranks_per_node()).Bind(10, s->group().gpus_per_rank());
  st.Bind(11, s->created_unix()).Bind(12, s->error());
  st.Bind(13, s->priority() == v1::PRIORITY_UNSPECIFIED ? v1::PRIORITY_SEARCH : s->priority());
  st.Bind(14, s->plan_json());
  st.Bind(15, s->slurm_job_id());
  st.Run();
  s->set_id(db_.LastInsertId());
}

void Store::UpdateSearch(const v1::Search& s) {
  BeginIfNeeded();
  auto& st = db_.Prepare("UPDATE searches SET state=?, finished_at=?, error=?, ensemble=? WHERE id=?");
  st.Bind(1, s.state());
  if (s.finished_unix() > 0) {
    st.Bind(2, s.finished_unix());
  } else {
    st.BindNull(2);
  }
  st.Bind(3, s.error());
  if (s.has_ensemble()) {
    std::string json_text;
    (void)google::protobuf::util::MessageToJsonString(s.ensemble(), &json_text);
    st.Bind(4, json_text);
  } else {
    st.BindNull(4);
  }
  st.Bind(5, s.id());
  st.Run();
}

void Store::SetSearchReopened(int64_t search_id, const Reopened& from) {
  BeginIfNeeded();
  auto& st = db_.Prepare("UPDATE searches SET reopened_state=?, reopened_error=? WHERE id=?");
  st.Bind(1, from.state).Bind(2, from.error).Bind(3, search_id);
  st.Run();
}

std::map<int64_t, Store::Reopened> Store::LoadReopened() {
  std::map<int64_t, Reopened> out;
  auto& st = db_.Prepare("SELECT id,reopened_state,reopened_error FROM searches WHERE reopened_state != 0");
  while (st.Step()) out[st.Int(0)] = Reopened{static_cast<int>(st.Int(1)), st.Text(2)};
  st.Reset();
  return out;
}

void Store::InsertTrial(v1::Trial* t) {
  BeginIfNeeded();
  auto& st = db_.Prepare(
      "INSERT INTO trials(search_id,number,state,attempt,created_at,command,probe,micro_batches,enqueued) "
      "VALUES(?,?,?,?,?,?,?,?,?)");
  st.Bind(1, t->search_id()).Bind(2, t->number()).Bind(3, t->state()).Bind(4, t->attempt());
  st.Bind(5, t->created_unix()).Bind(6, CommandJson(*t)).Bind(7, t->probe() ? 1 : 0).Bind(8, t->micro_batches());
  st.Bind(9, t->enqueued() ? 1 : 0);
  st.Run();
  t->set_id(db_.LastInsertId());
  InsertParams(*t);
}

void Store::UpdateTrial(const v1::Trial& t, int64_t assignment_epoch, const std::string& outside_stop) {
  BeginIfNeeded();
  auto& st = db_.Prepare(
      "UPDATE trials SET state=?, attempt=?, exit_code=?, error=?, ignored_lines=?, last_ignored_line=?, "
      "objective=?, metric_count=?, command=?, placement=?, assignment_epoch=?, started_at=?, finished_at=?, "
      "preemptions=?, group_nodes=?, rung=?, outside_stop=?, objectives=? WHERE id=?");
  st.Bind(1, t.state()).Bind(2, t.attempt());
  if (t.state() == v1::TRIAL_COMPLETED || t.state() == v1::TRIAL_FAILED || t.state() == v1::TRIAL_CANCELLED) {
    st.Bind(3, t.exit_code());
  } else {
    st.BindNull(3);
  }
  st.Bind(4, t.error()).Bind(5, t.ignored_lines()).Bind(6, t.last_ignored_line());
  if (t.has_objective()) {
    st.Bind(7, t.objective());
  } else {
    st.BindNull(7);
  }
  st.Bind(8, t.metric_count()).Bind(9, CommandJson(t)).Bind(10, PlacementJson(t)).Bind(11, assignment_epoch);
  if (t.started_unix() > 0) {
    st.Bind(12, t.started_unix());
  } else {
    st.BindNull(12);
  }
  if (t.finished_unix() > 0) {
    st.Bind(13, t.finished_unix());
  } else {
    st.BindNull(13);
  }
  st.Bind(14, t.preemptions()).Bind(15, t.group().nodes()).Bind(16, t.rung()).Bind(17, outside_stop);
  st.Bind(18, t.objectives_size() > 0 ? json(std::vector<double>(t.objectives().begin(), t.objectives().end())).dump()
                                       : std::string());  // a NaN is null
  st.Bind(19, t.id());
  st.Run();
}

void Store::AppendMetrics(int64_t trial_id, const v1::MetricPoint& p) {
  BeginIfNeeded();
  auto& st = db_.Prepare("INSERT INTO metrics(trial_id,step,name,value,time) VALUES(?,?,?,?,?)");
  for (const auto& [name, value] : p.values()) {
    st.Bind(1, trial_id).Bind(2, p.step()).Bind(3, name).Bind(4, value).Bind(5, p.time_unix());
    st.Run();
  }
}

void Store::UpdateTrialProgress(const v1::Trial& t) {
  BeginIfNeeded();
  auto& st =
      db_.Prepare("UPDATE trials SET metric_count=?, ignored_lines=?, last_ignored_line=?, rung=? WHERE id=?");
  st.Bind(1, t.metric_count()).Bind(2, t.ignored_lines()).Bind(3, t.last_ignored_line()).Bind(4, t.rung());
  st.Bind(5, t.id());
  st.Run();
}

void Store::UpsertNode(const v1::WorkerInfo& n) {
  BeginIfNeeded();
  json labels(std::map<std::string, std::string>(n.resources().labels().begin(), n.resources().labels().end()));
  auto& st = db_.Prepare(
      "INSERT INTO nodes(id,hostname,cores,slots,gpus,memory_bytes,labels,state,epoch,last_seen,state_reason) "
      "VALUES(?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET hostname=excluded.hostname, "
      "cores=excluded.cores, slots=excluded.slots, gpus=excluded.gpus, memory_bytes=excluded.memory_bytes, "
      "labels=excluded.labels, state=excluded.state, epoch=excluded.epoch, last_seen=excluded.last_seen, "
      "state_reason=excluded.state_reason");
  const auto& r = n.resources();
  st.Bind(1, n.node_id()).Bind(2, r.hostname()).Bind(3, r.cores()).Bind(4, r.slots()).Bind(5, r.gpus());
  st.Bind(6, r.memory_bytes()).Bind(7, labels.dump()).Bind(8, n.state()).Bind(9, n.epoch());
  st.Bind(10, n.last_seen_unix()).Bind(11, n.state_reason());
  st.Run();
}

void Store::OpenAllocation(int64_t trial_id, int attempt, const std::string& node_id, const std::string& slots,
                           int64_t epoch, double now) {
  BeginIfNeeded();
  auto& st = db_.Prepare(
      "INSERT INTO allocations(trial_id,attempt,node_id,slots,assignment_epoch,started_at) VALUES(?,?,?,?,?,?)");
  st.Bind(1, trial_id).Bind(2, attempt).Bind(3, node_id).Bind(4, slots).Bind(5, epoch).Bind(6, now);
  st.Run();
}

void Store::CloseAllocation(int64_t trial_id, int64_t epoch, const std::string& outcome, double now) {
  BeginIfNeeded();
  auto& st = db_.Prepare(
      "UPDATE allocations SET released_at=?, outcome=? WHERE trial_id=? AND assignment_epoch=? AND "
      "released_at IS NULL");
  st.Bind(1, now).Bind(2, outcome).Bind(3, trial_id).Bind(4, epoch);
  st.Run();
}

int64_t Store::AppendEvent(const std::string& kind, int64_t search_id, int64_t trial_id, const std::string& detail,
                           double now) {
  BeginIfNeeded();
  auto& st = db_.Prepare("INSERT INTO events(time,kind,search_id,trial_id,detail) VALUES(?,?,?,?,?)");
  st.Bind(1, now).Bind(2, kind);
  if (search_id) {
    st.Bind(3, search_id);
  } else {
    st.BindNull(3);
  }
  if (trial_id) {
    st.Bind(4, trial_id);
  } else {
    st.BindNull(4);
  }
  st.Bind(5, detail);
  st.Run();
  return db_.LastInsertId();
}

v1::JournalEntry Store::JournalRow(const Statement& st) {
  v1::JournalEntry e;
  e.set_seq(st.Int(0));
  e.set_time_unix(st.Real(1));
  e.set_kind(st.Text(2));
  e.set_search_id(st.IsNull(3) ? 0 : st.Int(3));
  e.set_trial_id(st.IsNull(4) ? 0 : st.Int(4));
  e.set_detail(st.Text(5));
  return e;
}

std::vector<v1::JournalEntry> Store::LoadJournal(int64_t search_id, int64_t after_seq, int limit) {
  std::vector<v1::JournalEntry> out;
  if (limit <= 0) return out;
  // The newest `limit` entries after after_seq, returned oldest first.
  auto& st = db_.Prepare(
      "SELECT seq,time,kind,search_id,trial_id,detail FROM events WHERE seq > ? AND (? = 0 OR search_id IS NULL OR "
      "search_id = ?) ORDER BY seq DESC LIMIT ?");
  st.Bind(1, after_seq).Bind(2, search_id).Bind(3, search_id).Bind(4, limit);
  while (st.Step()) out.push_back(JournalRow(st));
  st.Reset();
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<v1::Search> Store::LoadSearches() {
  std::vector<v1::Search> out;
  auto& st = db_.Prepare(
      "SELECT id,name,state,spec_yaml,objective_metric,direction,max_trials,parallelism,nodes,ranks_per_node,"
      "gpus_per_rank,created_at,finished_at,error,priority,ensemble,plan,slurm_job_id FROM searches ORDER BY id");
  while (st.Step()) {
    v1::Search s;
    s.set_id(st.Int(0));
    s.set_name(st.Text(1));
    s.set_state(static_cast<v1::SearchState>(st.Int(2)));
    s.set_spec_yaml(st.Text(3));
    s.set_objective_metric(st.Text(4));
    s.set_direction(static_cast<v1::Direction>(st.Int(5)));
    s.set_max_trials(static_cast<int>(st.Int(6)));
    s.set_parallelism(static_cast<int>(st.Int(7)));
    s.mutable_group()->set_nodes(static_cast<int>(st.Int(8)));
    s.mutable_group()->set_ranks_per_node(static_cast<int>(st.Int(9)));
    s.mutable_group()->set_gpus_per_rank(static_cast<int>(st.Int(10)));
    s.set_created_unix(st.Real(11));
    if (!st.IsNull(12)) s.set_finished_unix(st.Real(12));
    s.set_error(st.Text(13));
    s.set_priority(static_cast<v1::Priority>(st.Int(14)));
    if (!st.IsNull(15)) (void)google::protobuf::util::JsonStringToMessage(st.Text(15), s.mutable_ensemble());
    s.set_plan_json(st.Text(16));
    s.set_slurm_job_id(st.Text(17));
    out.push_back(std::move(s));
  }
  st.Reset();
  return out;
}

std::vector<v1::WorkerInfo> Store::LoadNodes() {
  std::vector<v1::WorkerInfo> out;
  auto& st = db_.Prepare(
      "SELECT id,hostname,cores,slots,gpus,memory_bytes,labels,state,epoch,last_seen,state_reason FROM nodes "
      "ORDER BY id");
  while (st.Step()) {
    v1::WorkerInfo n;
    n.set_node_id(st.Text(0));
    auto* r = n.mutable_resources();
    r->set_hostname(st.Text(1));
    r->set_cores(static_cast<int32_t>(st.Int(2)));
    r->set_slots(static_cast<int32_t>(st.Int(3)));
    r->set_gpus(static_cast<int32_t>(st.Int(4)));
    r->set_memory_bytes(st.Int(5));
    json labels = json::parse(st.Text(6), nullptr, false);
    if (labels.is_object()) {
      for (const auto& [k, v] : labels.items()) {
        if (v.is_string()) (*r->mutable_labels())[k] = v.get<std::string>();
      }
    }
    n.set_state(static_cast<v1::WorkerState>(st.Int(7)));
    n.set_epoch(st.Int(8));
    n.set_last_seen_unix(st.Real(9));
    n.set_state_reason(st.Text(10));
    out.push_back(std::move(n));
  }
  st.Reset();
  return out;
}

std::vector<v1::Trial> Store::LoadTrials(std::vector<int64_t>* epochs, std::vector<std::string>* outside_stops) {
  std::vector<v1::Trial> out;
  auto& st = db_.Prepare(
      "SELECT id,search_id,number,state,attempt,exit_code,error,ignored_lines,last_ignored_line,objective,"
      "metric_count,command,placement,assignment_epoch,created_at,started_at,finished_at,preemptions,group_nodes,rung,"
      "probe,micro_batches,outside_stop,objectives,enqueued FROM trials "
      "ORDER BY id");
  while (st.Step()) {
    v1::Trial t;
    t.set_id(st.Int(0));
    t.set_search_id(st.Int(1));
    t.set_number(static_cast<int>(st.Int(2)));
    t.set_state(static_cast<v1::TrialState>(st.Int(3)));
    t.set_attempt(static_cast<int>(st.Int(4)));
    if (!st.IsNull(5)) t.set_exit_code(static_cast<int>(st.Int(5)));
    t.set_error(st.Text(6));
    t.set_ignored_lines(st.Int(7));
    t.set_last_ignored_line(st.Text(8));
    if (!st.IsNull(9)) {
      t.set_has_objective(true);
      t.set_objective(st.Real(9));
    }
    t.set_metric_count(st.Int(10));
    json cmd = json::parse(st.Text(11), nullptr, false);
    if (cmd.is_array()) {
      for (const auto& a : cmd) t.add_command(a.get<std::string>());
    }
    ParsePlacement(st.Text(12), &t);
    if (epochs) epochs->push_back(st.Int(13));
    t.set_created_unix(st.Real(14));
    if (!st.IsNull(15)) t.set_started_unix(st.Real(15));
    if (!st.IsNull(16)) t.set_finished_unix(st.Real(16));
    t.set_preemptions(static_cast<int>(st.Int(17)));
    t.mutable_group()->set_nodes(static_cast<int>(st.Int(18)));  // 0 (older rows): the search's
    t.set_rung(static_cast<int>(st.Int(19)));
    t.set_probe(st.Int(20) != 0);
    t.set_micro_batches(static_cast<int>(st.Int(21)));  // 0 (older rows and ordinary trials): 1
    if (outside_stops) outside_stops->push_back(st.Text(22));
    t.set_enqueued(st.Int(24) != 0);
    json objectives = json::parse(st.Text(23), nullptr, false);  // '' (one objective, older rows): none
    if (objectives.is_array()) {
      for (const auto& v : objectives) t.add_objectives(v.is_number() ? v.get<double>() : std::nan(""));
    }
    out.push_back(std::move(t));
  }
  st.Reset();
  // Parameters, joined in one pass.
  std::unordered_map<int64_t, v1::Trial*> by_id;
  for (auto& t : out) by_id[t.id()] = &t;
  auto& ps = db_.Prepare("SELECT trial_id,name,kind,real_value,int_value,text_value FROM params");
  while (ps.Step()) {
    auto it = by_id.find(ps.Int(0));
    if (it == by_id.end()) continue;
    v1::ParamValue v;
    switch (ps.Int(2)) {
      case 1: v.set_float_value(ps.Real(3)); break;
      case 2: v.set_int_value(ps.Int(4)); break;
      default: v.set_string_value(ps.Text(5)); break;
    }
    (*it->second->mutable_params())[ps.Text(1)] = v;
  }
  ps.Reset();
  return out;
}

int64_t Store::MaxAssignmentEpoch() {
  auto& st = db_.Prepare("SELECT COALESCE(MAX(assignment_epoch),0) FROM allocations");
  st.Step();
  int64_t v = st.Int(0);
  st.Reset();
  return v;
}

std::vector<v1::MetricPoint> Store::LoadMetrics(int64_t trial_id) {
  std::vector<v1::MetricPoint> out;
  auto& st = db_.Prepare("SELECT step,name,value,time FROM metrics WHERE trial_id=? ORDER BY rowid");
  st.Bind(1, trial_id);
  while (st.Step()) {
    int64_t step = st.Int(0);
    double time = st.Real(3);
    if (out.empty() || out.back().step() != step || out.back().time_unix() != time) {
      out.emplace_back();
      out.back().set_step(step);
      out.back().set_time_unix(time);
    }
    (*out.back().mutable_values())[st.Text(1)] = st.Real(2);
  }
  st.Reset();
  return out;
}

void Store::InsertParams(const v1::Trial& trial) {
  const v1::Trial* t = &trial;
  auto& ps = db_.Prepare("INSERT INTO params(trial_id,name,kind,real_value,int_value,text_value) VALUES(?,?,?,?,?,?)");
  for (const auto& [name, v] : t->params()) {
    ps.Bind(1, t->id()).Bind(2, name);
    switch (v.kind_case()) {
      case v1::ParamValue::kFloatValue:
        ps.Bind(3, 1).Bind(4, v.float_value()).BindNull(5).BindNull(6);
        break;
      case v1::ParamValue::kIntValue:
        ps.Bind(3, 2).BindNull(4).Bind(5, v.int_value()).BindNull(6);
        break;
      default:
        ps.Bind(3, 3).BindNull(4).BindNull(5).Bind(6, v.string_value());
        break;
    }
    ps.Run();
  }
}

void Store::ReplaceParams(const v1::Trial& trial) {
  BeginIfNeeded();
  auto& del = db_.Prepare("DELETE FROM params WHERE trial_id=?");
  del.Bind(1, trial.id());
  del.Run();
  InsertParams(trial);
}

std::vector<Store::SearchPoint> Store::LoadSearchMetrics(int64_t search_id, const std::vector<std::string>& names) {
  std::vector<SearchPoint> out;
  if (names.empty()) return out;
  std::string in = "?";
  for (size_t i = 1; i < names.size(); ++i) in += ",?";
  auto& st = db_.Prepare("SELECT m.trial_id,m.step,m.name,m.value,m.time FROM metrics m JOIN trials t ON "
                         "t.id=m.trial_id WHERE t.search_id=? AND m.name IN (" + in + ") ORDER BY m.rowid");
  st.Bind(1, search_id);
  for (size_t i = 0; i < names.size(); ++i) st.Bind(static_cast<int>(i) + 2, names[i]);
  while (st.Step()) {
    int64_t trial = st.Int(0), step = st.Int(1);
    double time = st.Real(4);
    if (out.empty() || out.back().trial_id != trial || out.back().point.step() != step ||
        out.back().point.time_unix() != time) {
      out.emplace_back();
      out.back().trial_id = trial;
      out.back().point.set_step(step);
      out.back().point.set_time_unix(time);
    }
    (*out.back().point.mutable_values())[st.Text(2)] = st.Real(3);
  }
  st.Reset();
  return out;
}

}  // namespace ladder::store
