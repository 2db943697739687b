#include "server/hero_band.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace ladder::server {

std::string HeroBand::Load(const std::string& plan_json) {
  band_.clear();
  if (plan_json.empty()) return "";
  auto j = nlohmann::json::parse(plan_json, nullptr, false);
  if (!j.is_object()) return "not a JSON object";
  stop_outside_ = j.value("stop_outside_band", false);
  if (!j.contains("loss_band")) {  // ladder promote always writes it ([] when it predicted no band)
    return "no \"loss_band\" (the predicted validation-loss band, [[step, lo, hi], ...], [] for none)";
  }
  if (!j["loss_band"].is_array()) return "loss_band: expected [[step, lo, hi], ...]";
  for (const auto& p : j["loss_band"]) {
    if (!p.is_array() || p.size() != 3 || !p[0].is_number() || !p[1].is_number() || !p[2].is_number()) {
      band_.clear();
      return "loss_band: expected [[step, lo, hi], ...], got " + p.dump();
    }
    band_.push_back({p[0].get<double>(), p[1].get<double>(), p[2].get<double>()});
  }
  std::sort(band_.begin(), band_.end());
  return "";
}

std::optional<HeroBand::Verdict> HeroBand::Check(int64_t trial_id, const v1::MetricPoint& point) {
  auto it = point.values().find("val_loss");
  const double step = static_cast<double>(point.step());
  if (band_.empty() || it == point.values().end() || step < band_.front()[0]) return std::nullopt;
  // Linear in the step between band points; the last point's band beyond it.
  double lo = band_.back()[1], hi = band_.back()[2];
  for (size_t i = 1; i < band_.size(); ++i) {
    if (step <= band_[i][0]) {
      const auto& a = band_[i - 1];
      const auto& b = band_[i];
      const double f = b[0] > a[0] ? (step - a[0]) / (b[0] - a[0]) : 1.0;
      lo = a[1] + f * (b[1] - a[1]);
      hi = a[2] + f * (b[2] - a[2]);
      break;
    }
  }
  const double loss = it->second;
  const bool outside = !(loss >= lo && loss <= hi);
  bool& was = outside_[trial_id];
  if (outside == was) return std::nullopt;
  was = outside;
  char buf[200];
  std::snprintf(buf, sizeof buf, "val_loss %.4g at step %lld is %s the predicted band [%.4g, %.4g]", loss,
                static_cast<long long>(point.step()), outside ? (loss > hi ? "above" : "below") : "back inside", lo,
                hi);
  return Verdict{outside, outside && stop_outside_ && loss > hi, buf};
}

}  // namespace ladder::server
