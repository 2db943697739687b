#include "cli/hero_status.h"

#include <cmath>
#include <cstdio>

#include "cli/watch_model.h"
#include "common/loss_band.h"

namespace ladder::cli {

namespace {

std::string JsonNumberText(const nlohmann::json& v) {
  if (!v.is_number()) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v.get<double>());
  return buf;
}

// [value, lo, hi] as "v [lo, hi]", "v" without bounds, "-" without a value.
std::string JsonIntervalText(const nlohmann::json& v) {
  if (!v.is_array() || v.size() != 3 || !v[0].is_number()) return "-";
  if (!v[1].is_number() || !v[2].is_number()) return JsonNumberText(v[0]) + " (no interval)";
  return JsonNumberText(v[0]) + " [" + JsonNumberText(v[1]) + ", " + JsonNumberText(v[2]) + "]";
}

std::string Position(const HeroStatus& h) {
  if (!h.step) return "";
  if (!h.band_now) return "before the band starts";
  return BandPosition(h.val_loss, *h.band_now);
}

}  // namespace

bool IsBandEntry(const v1::JournalEntry& e) {
  return e.kind() == "hero_outside_band" || e.kind() == "hero_inside_band";
}

HeroStatus ReadHeroStatus(const std::string& plan_json, const std::optional<v1::Trial>& trial,
                          const std::vector<v1::JournalEntry>& journal) {
  HeroStatus h;
  h.plan = nlohmann::json::parse(plan_json, nullptr, false);
  if (h.plan.is_discarded()) h.plan = nlohmann::json::object();
  LossBand band;
  h.band_error = LossBand::Parse(plan_json, &band);
  if (trial) {
    for (auto it = trial->metrics().rbegin(); it != trial->metrics().rend(); ++it) {
      auto v = it->values().find("val_loss");
      if (v == it->values().end()) continue;
      h.step = it->step();
      h.val_loss = v->second;
      h.band_now = band.At(static_cast<double>(it->step()));
      break;
    }
  }
  for (const auto& e : journal) {
    if (IsBandEntry(e)) h.warnings.push_back(e);
  }
  return h;
}

void PrintHeroStatus(const HeroStatus& h, std::ostream& out) {
  const auto& p = h.plan;
  out << "  hero plan";
  if (p.contains("interval_level") && p["interval_level"].is_number()) {
    out << " (intervals " << std::lround(p["interval_level"].get<double>() * 100) << "% nominal)";
  }
  out << ":\n";
  out << "    global batch   " << p.value("global_batch", 0);
  if (p.contains("ramp") && p["ramp"].is_array() && p["ramp"].size() > 1) {
    out << "  (ramp:";
    for (const auto& r : p["ramp"]) out << " " << r[1] << "@" << r[0];
    out << ")";
  }
  out << "\n    peak LR        " << JsonIntervalText(p.value("peak_lr", nlohmann::json())) << "   (rule "
      << p.value("lr_rule", std::string("fit")) << ")\n";
  out << "    warmup         " << p.value("warmup_steps", 0) << " steps; decay " << p.value("decay", std::string("-"))
      << "; optimizer " << p.value("optimizer", std::string("-")) << "; " << p.value("steps", 0) << " steps\n";
  out << "    final val_loss " << JsonIntervalText(p.value("final_loss", nlohmann::json())) << " (predicted)\n";
  const auto band = p.value("loss_band", nlohmann::json::array());
  if (!h.band_error.empty()) {
    out << "    band           unreadable: " << h.band_error << "\n";
  } else if (band.empty()) {
    out << "    band           none (the plan predicted no final loss)\n";
  } else {
    out << "    band          ";
    for (const auto& b : band) {
      char buf[64];
      std::snprintf(buf, sizeof buf, " %lld:[%.3g,%.3g]", static_cast<long long>(b[0].get<double>()),
                    b[1].get<double>(), b[2].get<double>());
      out << buf;
    }
    out << (p.value("stop_outside_band", false) ? "  (stops a run above it)" : "") << "\n";
  }
  if (!h.step) {
    out << "    live           no val_loss reported yet\n";
  } else if (!h.band_now) {
    out << "    live           val_loss " << JsonNumberText(h.val_loss) << " at step " << *h.step
        << (band.empty() ? "" : " (before the band starts)") << "\n";
  } else {
    char buf[160];
    std::snprintf(buf, sizeof buf, "val_loss %.4g at step %lld: %s the band [%.4g, %.4g]", h.val_loss,
                  static_cast<long long>(*h.step), Position(h).c_str(), h.band_now->first, h.band_now->second);
    out << "    live           " << buf << "\n";
  }
  for (const auto& w : h.warnings) {
    out << "    " << (w.kind() == "hero_outside_band" ? "warning " : "note    ") << "       "
        << ClockTime(w.time_unix()) << " trial " << w.trial_id() << ": " << w.detail() << "\n";
  }
}

nlohmann::json HeroStatusJson(const HeroStatus& h) {
  nlohmann::json live = nullptr;
  if (h.step) {
    live = {{"step", *h.step}, {"val_loss", h.val_loss}, {"position", Position(h)}};
    live["band"] = h.band_now ? nlohmann::json::array({h.band_now->first, h.band_now->second}) : nlohmann::json();
  }
  nlohmann::json warnings = nlohmann::json::array();
  for (const auto& w : h.warnings) {
    warnings.push_back({{"time_unix", w.time_unix()}, {"kind", w.kind()}, {"trial_id", w.trial_id()},
                        {"detail", w.detail()}});
  }
  nlohmann::json out = {{"plan", h.plan}, {"live", live}, {"band_warnings", warnings}};
  if (!h.band_error.empty()) out["band_error"] = h.band_error;
  return out;
}

}  // namespace ladder::cli
