#pragma once
// LossBand: a hero run's predicted validation-loss band, as `ladder promote` stores it in the plan's JSON
// ("loss_band": [[step, lo, hi], ...], "stop_outside_band"). One reading of it for the coordinator, which
// watches the live loss against it (server/hero_band.h), and for `ladder search show`, which says where the
// live loss stands. A value type: no I/O.
//
// The band is ascending in step, linear between points, the last point's band beyond it, and says nothing
// before its first step.
#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ladder {

struct LossBand {
  std::vector<std::array<double, 3>> points;  // [step, lo, hi], ascending in step
  bool stop_outside = false;                  // ladder promote --stop-outside-band

  // Reads a plan's JSON; "" when it holds no plan. An error names the field at fault (the band is then empty).
  static std::string Parse(const std::string& plan_json, LossBand* out);
  bool empty() const { return points.empty(); }
  // [lo, hi] at that step; nullopt when the band is empty or the step is before its first point.
  std::optional<std::pair<double, double>> At(double step) const;
};

// Where a loss stands against [lo, hi]: "inside", "above" or "below".
const char* BandPosition(double loss, const std::pair<double, double>& band);

}  // namespace ladder
