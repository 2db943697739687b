#include "search/scaling/scales_section.h"

#include <cmath>
#include <string>

namespace ladder::search::internal {

void ReadScalesSection(ErrorSink& sink, const YAML::Node& n, ScalesOptions* out) {
  auto m = ReadMapping(sink, n, "scales", {"global_batch", "lr", "per_octave", "follow", "extend", "probes", "probe_budget"});
  if (!m) return;
  bool ok = true;
  ScalesOptions o;
  if (const MapEntry* e = Find(*m, "global_batch")) {
    if (!e->value.IsSequence() || e->value.size() < 2) {
      sink.At(e->value, "scales.global_batch",
              "expected a list of at least 2 global batches, e.g. [32, 64, 128], got " + Describe(e->value));
      ok = false;
    } else {
      for (size_t i = 0; i < e->value.size(); ++i) {
        const std::string field = "scales.global_batch[" + std::to_string(i) + "]";
        auto v = ReadInt(sink, e->value[i], field, 1, int64_t{1} << 40);
        if (!v) {
          ok = false;
          continue;
        }
        if (!o.batches.empty() && *v <= o.batches.back()) {
          sink.At(e->value[i], field,
                  "the batches must be ascending and distinct: " + std::to_string(*v) + " follows " +
                      std::to_string(o.batches.back()));
          ok = false;
        }
        o.batches.push_back(*v);
      }
    }
  } else {
    sink.At(n, "scales.global_batch", "missing required field 'global_batch' (the global batches to sweep)");
    ok = false;
  }
  if (const MapEntry* e = Find(*m, "lr")) {
    auto lr = ReadMapping(sink, e->value, "scales.lr", {"low", "high"});
    if (!lr) {
      ok = false;
    } else {
      auto bound = [&](const char* key, double* dst) {
        const MapEntry* b = Find(*lr, key);
        if (b == nullptr) {
          sink.At(e->value, std::string("scales.lr.") + key, std::string("missing required field '") + key + "'");
          ok = false;
          return;
        }
        auto v = ReadNumber(sink, b->value, std::string("scales.lr.") + key);
        if (!v) {
          ok = false;
        } else if (!(*v > 0) || !std::isfinite(*v)) {
          sink.At(b->value, std::string("scales.lr.") + key, "must be > 0, got " + FormatNumber(*v));
          ok = false;
        } else {
          *dst = *v;
        }
      };
      bound("low", &o.lr_low);
      bound("high", &o.lr_high);
      if (ok && !(o.lr_low < o.lr_high)) {
        sink.At(Find(*lr, "high")->value, "scales.lr.high",
                "must be > low (" + FormatNumber(o.lr_low) + "), got " + FormatNumber(o.lr_high));
        ok = false;
      }
    }
  } else {
    sink.At(n, "scales.lr", "missing required field 'lr' (the learning-rate window at the smallest batch)");
    ok = false;
  }
  if (const MapEntry* e = Find(*m, "per_octave")) {
    if (auto v = ReadInt(sink, e->value, "scales.per_octave", 1, 16)) o.per_octave = static_cast<int>(*v); else ok = false;
  }
  if (const MapEntry* e = Find(*m, "extend")) {
    if (auto v = ReadInt(sink, e->value, "scales.extend", 0, 32)) o.extend = static_cast<int>(*v); else ok = false;
  }
  if (const MapEntry* e = Find(*m, "follow")) {
    if (auto s = ReadEnum(sink, e->value, "scales.follow", {"none", "sqrt", "linear"})) {
      o.follow = *s == "none" ? 0.0 : *s == "sqrt" ? 0.5 : 1.0;
    } else {
      ok = false;
    }
  }
  if (const MapEntry* e = Find(*m, "probes")) {
    if (auto s = ReadEnum(sink, e->value, "scales.probes", {"auto", "off"})) o.probes = *s == "auto"; else ok = false;
  }
  if (const MapEntry* e = Find(*m, "probe_budget")) {
    auto v = ReadNumber(sink, e->value, "scales.probe_budget");
    if (!v) {
      ok = false;
    } else if (!(*v > 0 && *v <= 1)) {
      sink.At(e->value, "scales.probe_budget",
              "must be in (0, 1] (a fraction of the sweep's node-hours), got " + FormatNumber(*v));
      ok = false;
    } else {
      o.probe_budget = *v;
    }
  }
  if (ok && ScalesGrid(o).size() > 100000) {
    sink.At(n, "scales", "the grid has " + std::to_string(ScalesGrid(o).size()) +
                             " trials (more than 100000): fewer batches, a narrower lr window or fewer per_octave");
    ok = false;
  }
  if (!ok) return;
  o.enabled = true;
  *out = std::move(o);
}

}  // namespace ladder::search::internal
