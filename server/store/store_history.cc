// Store: a trial's history as the dashboards show it — its runs, its journal entries, the end of its log — and
// the node-seconds its ended runs used.
#include <algorithm>

#include "server/store/store.h"

namespace ladder::store {

void Store::SetLogTail(int64_t trial_id, const std::string& tail) {
  BeginIfNeeded();
  auto& st = db_.Prepare("UPDATE trials SET log_tail=? WHERE id=?");
  st.Bind(1, tail).Bind(2, trial_id);
  st.Run();
}

std::string Store::LoadLogTail(int64_t trial_id) {
  auto& st = db_.Prepare("SELECT log_tail FROM trials WHERE id=?");
  st.Bind(1, trial_id);
  std::string tail = st.Step() ? st.Text(0) : "";
  st.Reset();
  return tail;
}

std::vector<v1::Attempt> Store::LoadAttempts(int64_t trial_id) {
  std::vector<v1::Attempt> out;
  auto& st = db_.Prepare(
      "SELECT attempt,node_id,started_at,released_at,outcome FROM allocations WHERE trial_id=? ORDER BY id");
  st.Bind(1, trial_id);
  while (st.Step()) {
    v1::Attempt& a = out.emplace_back();
    a.set_attempt(static_cast<int>(st.Int(0)));
    const std::string nodes = st.Text(1);  // "a,b": the run's nodes in rank order
    for (size_t from = 0; from <= nodes.size();) {
      size_t comma = nodes.find(',', from);
      if (comma == std::string::npos) comma = nodes.size();
      if (comma > from) a.add_nodes(nodes.substr(from, comma - from));
      from = comma + 1;
    }
    a.set_started_unix(st.Real(2));
    if (!st.IsNull(3)) a.set_ended_unix(st.Real(3));
    if (!st.IsNull(4)) a.set_outcome(st.Text(4));
  }
  st.Reset();
  return out;
}

std::vector<v1::JournalEntry> Store::LoadTrialJournal(int64_t trial_id, int limit) {
  std::vector<v1::JournalEntry> out;
  auto& st = db_.Prepare(
      "SELECT seq,time,kind,search_id,trial_id,detail FROM events WHERE trial_id=? ORDER BY seq DESC LIMIT ?");
  st.Bind(1, trial_id).Bind(2, limit);
  while (st.Step()) out.push_back(JournalRow(st));
  st.Reset();
  std::reverse(out.begin(), out.end());
  return out;
}

std::map<int64_t, double> Store::LoadEndedNodeSeconds() {
  std::map<int64_t, double> out;
  // A run's node_id lists its nodes with commas: its node count is the commas + 1.
  auto& st = db_.Prepare(
      "SELECT trial_id, SUM((released_at - started_at) * (LENGTH(node_id) - LENGTH(REPLACE(node_id, ',', '')) + 1)) "
      "FROM allocations WHERE released_at IS NOT NULL GROUP BY trial_id");
  while (st.Step()) out[st.Int(0)] = std::max(0.0, st.Real(1));
  st.Reset();
  return out;
}

}  // namespace ladder::store
