#include "common/loss_band.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace ladder {

std::string LossBand::Parse(const std::string& plan_json, LossBand* out) {
  *out = LossBand{};
  if (plan_json.empty()) return "";
  auto j = nlohmann::json::parse(plan_json, nullptr, false);
  if (!j.is_object()) return "not a JSON object";
  out->stop_outside = j.value("stop_outside_band", false);
  if (!j.contains("loss_band")) {  // ladder promote always writes it ([] when it predicted no band)
    return "no \"loss_band\" (the predicted validation-loss band, [[step, lo, hi], ...], [] for none)";
  }
  if (!j["loss_band"].is_array()) return "loss_band: expected [[step, lo, hi], ...]";
  for (const auto& p : j["loss_band"]) {
    if (!p.is_array() || p.size() != 3 || !p[0].is_number() || !p[1].is_number() || !p[2].is_number()) {
      out->points.clear();
      return "loss_band: expected [[step, lo, hi], ...], got " + p.dump();
    }
    out->points.push_back({p[0].get<double>(), p[1].get<double>(), p[2].get<double>()});
  }
  std::sort(out->points.begin(), out->points.end());
  return "";
}

std::optional<std::pair<double, double>> LossBand::At(double step) const {
  if (points.empty() || step < points.front()[0]) return std::nullopt;
  for (size_t i = 1; i < points.size(); ++i) {
    if (step <= points[i][0]) {
      const auto& a = points[i - 1];
      const auto& b = points[i];
      const double f = b[0] > a[0] ? (step - a[0]) / (b[0] - a[0]) : 1.0;
      return std::make_pair(a[1] + f * (b[1] - a[1]), a[2] + f * (b[2] - a[2]));
    }
  }
  return std::make_pair(points.back()[1], points.back()[2]);
}

const char* BandPosition(double loss, const std::pair<double, double>& band) {
  if (loss > band.second) return "above";
  if (loss < band.first) return "below";
  return loss >= band.first && loss <= band.second ? "inside" : "above";  // NaN: worse than any band
}

}  // namespace ladder
