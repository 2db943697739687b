// Store: configurations given by hand to a running search (ladder search enqueue), each kept until the batch that
// creates its trial deletes it (schema 13).
#include <google/protobuf/util/json_util.h>

#include "server/store/store.h"

namespace ladder::store {

int64_t Store::InsertEnqueued(int64_t search_id, const v1::StoredPoint& point, double now) {
  BeginIfNeeded();
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(point, &json);
  auto& st = db_.Prepare("INSERT INTO enqueued_points(search_id, params, created_at) VALUES(?,?,?)");
  st.Bind(1, search_id).Bind(2, json).Bind(3, now);
  st.Run();
  return db_.LastInsertId();
}

void Store::DeleteEnqueued(int64_t point_id) {
  BeginIfNeeded();
  auto& st = db_.Prepare("DELETE FROM enqueued_points WHERE id=?");
  st.Bind(1, point_id);
  st.Run();
}

std::vector<Store::EnqueuedRow> Store::LoadEnqueued() {
  std::vector<EnqueuedRow> out;
  auto& st = db_.Prepare("SELECT id, search_id, params FROM enqueued_points ORDER BY id");
  while (st.Step()) {
    EnqueuedRow r;
    r.id = st.Int(0);
    r.search_id = st.Int(1);
    if (!google::protobuf::util::JsonStringToMessage(st.Text(2), &r.point).ok()) r.point.Clear();
    out.push_back(std::move(r));
  }
  st.Reset();
  return out;
}

void Store::InsertWarmStart(int64_t search_id, const WarmStartRows& w) {
  BeginIfNeeded();
  auto& head = db_.Prepare("INSERT INTO warm_starts(search_id, source, skipped) VALUES(?,?,?)");
  head.Bind(1, search_id).Bind(2, w.source).Bind(3, static_cast<int64_t>(w.skipped));
  head.Run();
  auto& st = db_.Prepare("INSERT INTO warm_start_points(search_id, seq, point) VALUES(?,?,?)");
  for (size_t i = 0; i < w.points.size(); ++i) {
    std::string json;
    (void)google::protobuf::util::MessageToJsonString(w.points[i], &json);
    st.Bind(1, search_id).Bind(2, static_cast<int64_t>(i)).Bind(3, json);
    st.Run();
  }
}

std::map<int64_t, Store::WarmStartRows> Store::LoadWarmStarts() {
  std::map<int64_t, WarmStartRows> out;
  auto& head = db_.Prepare("SELECT search_id, source, skipped FROM warm_starts");
  while (head.Step()) {
    WarmStartRows& w = out[head.Int(0)];
    w.source = head.Text(1);
    w.skipped = static_cast<int>(head.Int(2));
  }
  head.Reset();
  auto& st = db_.Prepare("SELECT search_id, point FROM warm_start_points ORDER BY search_id, seq");
  while (st.Step()) {
    v1::StoredPoint p;
    if (!google::protobuf::util::JsonStringToMessage(st.Text(1), &p).ok()) continue;
    out[st.Int(0)].points.push_back(std::move(p));
  }
  st.Reset();
  return out;
}

}  // namespace ladder::store
