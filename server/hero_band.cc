#include "server/hero_band.h"

#include <cstdio>

namespace ladder::server {

std::string HeroBand::Load(const std::string& plan_json) { return LossBand::Parse(plan_json, &band_); }

std::optional<HeroBand::Verdict> HeroBand::Check(int64_t trial_id, const v1::MetricPoint& point) {
  auto it = point.values().find("val_loss");
  if (it == point.values().end()) return std::nullopt;
  const auto band = band_.At(static_cast<double>(point.step()));
  if (!band) return std::nullopt;
  const auto [lo, hi] = *band;
  const double loss = it->second;
  const bool outside = !(loss >= lo && loss <= hi);
  bool& was = outside_[trial_id];
  if (outside == was) return std::nullopt;
  was = outside;
  char buf[200];
  std::snprintf(buf, sizeof buf, "val_loss %.4g at step %lld is %s the predicted band [%.4g, %.4g]", loss,
                static_cast<long long>(point.step()), outside ? (loss > hi ? "above" : "below") : "back inside", lo,
                hi);
  return Verdict{outside, outside && band_.stop_outside && loss > hi, buf};
}

}  // namespace ladder::server
