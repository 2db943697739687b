// Store: a completed trial's signed constraint values (the spec's constraints:, schema 17), a JSON list in the
// spec's order. Kept apart from the trial's row writes (store.cc) since only a completion sets them.
#include <cmath>
#include <nlohmann/json.hpp>

#include "server/store/store.h"

namespace ladder::store {

void Store::SetTrialConstraints(int64_t trial_id, const std::vector<double>& values) {
  BeginIfNeeded();
  auto& st = db_.Prepare("UPDATE trials SET constraints=? WHERE id=?");
  st.Bind(1, values.empty() ? std::string() : nlohmann::json(values).dump()).Bind(2, trial_id);
  st.Run();
}

std::map<int64_t, std::vector<double>> Store::LoadTrialConstraints() {
  std::map<int64_t, std::vector<double>> out;
  auto& st = db_.Prepare("SELECT id, constraints FROM trials WHERE constraints != ''");
  while (st.Step()) {
    const nlohmann::json values = nlohmann::json::parse(st.Text(1), nullptr, false);
    if (!values.is_array()) continue;
    std::vector<double>& v = out[st.Int(0)];
    for (const auto& x : values) v.push_back(x.is_number() ? x.get<double>() : std::nan(""));
  }
  st.Reset();
  return out;
}

}  // namespace ladder::store
