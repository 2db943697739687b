// Procedurally generated climate-like fields for the segmentation workload (data_sources.h: climate:).
//
// Each sample has the 16 channels of the CAM5 fields used in extreme-weather segmentation (Kurth et al. 2018):
// TMQ U850 V850 UBOT VBOT QREFHT PS PSL T200 T500 PRECT TS TREFHT Z1000 Z200 ZBOT. The background of every
// channel is a smooth random field (a few low-frequency waves plus a meridional gradient) with noise. On top:
//   tropical cyclones (class 1) — a Gaussian pressure minimum (PS, PSL, Z1000, ZBOT), rotating winds (U/V at
//     850 hPa and the bottom level), a warm core aloft (T200, T500), moisture and rain (TMQ, PRECT, QREFHT);
//   atmospheric rivers (class 2) — long, narrow, curved filaments of water vapour (TMQ, QREFHT) with winds
//     along them and some rain.
// Labels are per pixel (0 background, 1 cyclone, 2 river); the classes are unbalanced (mostly background),
// as in the real data, hence the class-weighted loss.
#include <cmath>
#include <random>

#include "trainer/data_sources.h"

namespace ladder::trainer {

namespace {

enum Channel { TMQ, U850, V850, UBOT, VBOT, QREFHT, PS, PSL, T200, T500, PRECT, TS, TREFHT, Z1000, Z200, ZBOT };
constexpr int kChannels = 16;

}  // namespace

Dataset MakeClimate(int64_t rows, int64_t size, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<float> g(0, 1);
  const int64_t s = size, plane = s * s;
  Dataset d;
  d.rows = rows;
  d.features = kChannels * plane;
  d.classes = 3;
  d.shape = {kChannels, s, s};
  d.label_size = plane;
  d.task = Task::kSegment;
  d.x.resize(static_cast<size_t>(rows * d.features));
  d.y.assign(static_cast<size_t>(rows * plane), 0);
  const double pi = std::acos(-1.0);
  for (int64_t r = 0; r < rows; ++r) {
    float* x = &d.x[static_cast<size_t>(r * d.features)];
    int64_t* y = &d.y[static_cast<size_t>(r * plane)];
    auto at = [&](int c, int64_t i, int64_t j) -> float& { return x[c * plane + i * s + j]; };
    // Background: two random waves per channel, a north-south gradient, noise.
    for (int c = 0; c < kChannels; ++c) {
      double k1 = 1 + 2 * u(rng), k2 = 1 + 2 * u(rng), p1 = 2 * pi * u(rng), p2 = 2 * pi * u(rng);
      double grad = (c == TS || c == TREFHT || c == T500 || c == T200 || c == TMQ) ? 1.0 : 0.2;
      for (int64_t i = 0; i < s; ++i) {
        for (int64_t j = 0; j < s; ++j) {
          double lat = static_cast<double>(i) / static_cast<double>(s), lon = static_cast<double>(j) / static_cast<double>(s);
          at(c, i, j) = static_cast<float>(0.5 * std::sin(2 * pi * k1 * lon + p1) * std::cos(pi * k2 * lat + p2) +
                                           grad * std::sin(pi * lat) + 0.3 * g(rng));
        }
      }
    }
    // Atmospheric river (about 60% of samples): a curve i = i0 + a·j + b·sin(f·j + φ), half-width w.
    if (u(rng) < 0.6) {
      const double i0 = s * (0.2 + 0.6 * u(rng)), a = (u(rng) - 0.5) * 0.8, b = s * 0.1 * u(rng),
                   f = 2 * pi * (0.5 + u(rng)) / static_cast<double>(s), phi = 2 * pi * u(rng);
      const double w = std::max(1.0, s * (0.03 + 0.03 * u(rng)));
      const double j0 = s * 0.4 * u(rng), j1 = s * (0.6 + 0.4 * u(rng));  // it does not span the whole map
      for (int64_t i = 0; i < s; ++i) {
        for (int64_t j = 0; j < s; ++j) {
          if (j < j0 || j > j1) continue;
          const double slope = a + b * f * std::cos(f * j + phi);
          const double dist = std::fabs(i - (i0 + a * j + b * std::sin(f * j + phi))) / std::sqrt(1 + slope * slope);
          const double core = std::exp(-dist * dist / (2 * w * w));
          if (core < 0.05) continue;
          at(TMQ, i, j) += static_cast<float>(2.5 * core);
          at(QREFHT, i, j) += static_cast<float>(1.5 * core);
          at(U850, i, j) += static_cast<float>(1.5 * core / std::sqrt(1 + slope * slope));
          at(V850, i, j) += static_cast<float>(1.5 * core * slope / std::sqrt(1 + slope * slope));
          at(PRECT, i, j) += static_cast<float>(0.8 * core);
          if (dist <= 1.2 * w) y[i * s + j] = 2;
        }
      }
    }
    // Tropical cyclones: 0-2 per sample, radius r.
    const int cyclones = static_cast<int>(u(rng) * 3);
    for (int k = 0; k < cyclones; ++k) {
      const double ci = s * (0.1 + 0.8 * u(rng)), cj = s * (0.1 + 0.8 * u(rng));
      const double rad = std::max(1.5, s * (0.05 + 0.05 * u(rng)));
      const double spin = u(rng) < 0.5 ? 1.0 : -1.0;  // either hemisphere
      for (int64_t i = 0; i < s; ++i) {
        for (int64_t j = 0; j < s; ++j) {
          const double di = i - ci, dj = j - cj, d2 = di * di + dj * dj;
          const double core = std::exp(-d2 / (2 * rad * rad));
          if (core < 0.02) continue;
          for (int c : {PS, PSL, Z1000, ZBOT}) at(c, i, j) -= static_cast<float>(3.0 * core);
          // Rotational wind, strongest at the radius.
          const double wind = 3.0 * std::sqrt(d2) / rad * core;
          const double norm = std::sqrt(d2) + 1e-9;
          for (auto [cu, cv] : {std::pair{U850, V850}, std::pair{UBOT, VBOT}}) {
            at(cu, i, j) += static_cast<float>(-spin * wind * di / norm);
            at(cv, i, j) += static_cast<float>(spin * wind * dj / norm);
          }
          at(T200, i, j) += static_cast<float>(1.5 * core);
          at(T500, i, j) += static_cast<float>(1.5 * core);
          at(TMQ, i, j) += static_cast<float>(2.0 * core);
          at(PRECT, i, j) += static_cast<float>(2.0 * core);
          if (d2 <= 2.0 * rad * rad) y[i * s + j] = 1;
        }
      }
    }
  }
  return d;
}

}  // namespace ladder::trainer
