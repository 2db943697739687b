// Procedurally generated density volumes for the CosmoFlow-shaped regression workload (data_sources.h: cosmo:).
//
// CosmoFlow (Mathuriya et al. 2018) regresses cosmological parameters from 3D dark-matter density cubes. Here each
// sample is a SIZE³ cube of a log-normal density, exp(0.6·δ), where δ is a periodic Gaussian random field whose
// power spectrum is a power law, P(k) = A·(k/k0)^(−n) (k in grid units, the pivot k0 = 3/8·SIZE, where most
// of the waves are, so that the contrast depends on A far more than on n): a sum of 64 plane waves at wave vectors
// drawn uniformly from the lattice ball 1 ≤ |k| ≤ SIZE/2, each with Gaussian cosine and sine amplitudes of
// variance P(|k|). The two targets are the spectrum's parameters, scaled to [−1, 1]: log2(A) with A in [1/2, 2],
// and n − 2 with the slope n in [1, 3]. The amplitude sets the contrast, the slope how much of it is at small
// scales, so a 3D CNN can read both. The waves come from per-axis tables of e^{2πi·k·x/SIZE}: 64 complex
// products per voxel.
#include <cmath>
#include <complex>
#include <random>

#include "trainer/data_sources.h"

namespace ladder::trainer {

Dataset MakeCosmo(int64_t rows, int64_t size, uint64_t seed) {
  constexpr int kModes = 64;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> g(0, 1);
  const int64_t s = size, voxels = s * s * s, half = s / 2;
  Dataset d;
  d.rows = rows;
  d.features = voxels;
  d.classes = 2;
  d.shape = {1, s, s, s};
  d.label_size = 2;
  d.task = Task::kRegress;
  d.x.resize(static_cast<size_t>(rows * voxels));
  d.targets.resize(static_cast<size_t>(rows * 2));
  const double two_pi = 2 * std::acos(-1.0), pivot = 0.375 * static_cast<double>(s);
  // phase[k + half][x] = e^{2πi·k·x/s} for k in [−half, half].
  std::vector<std::vector<std::complex<double>>> phase(static_cast<size_t>(2 * half + 1));
  for (int64_t k = -half; k <= half; ++k) {
    for (int64_t x = 0; x < s; ++x) {
      const double angle = two_pi * static_cast<double>(k * x) / static_cast<double>(s);
      phase[static_cast<size_t>(k + half)].push_back(std::polar(1.0, angle));
    }
  }
  std::vector<double> field(static_cast<size_t>(voxels));
  for (int64_t r = 0; r < rows; ++r) {
    const double log2_amp = 2 * u(rng) - 1, slope = 1 + 2 * u(rng);
    d.targets[static_cast<size_t>(2 * r)] = static_cast<float>(log2_amp);
    d.targets[static_cast<size_t>(2 * r + 1)] = static_cast<float>(slope - 2);
    std::fill(field.begin(), field.end(), 0.0);
    for (int m = 0; m < kModes; ++m) {
      int64_t k[3];
      double k2 = 0;
      do {
        k2 = 0;
        for (auto& c : k) {
          c = static_cast<int64_t>(rng() % static_cast<uint64_t>(2 * half + 1)) - half;
          k2 += static_cast<double>(c * c);
        }
      } while (k2 < 1 || k2 > static_cast<double>(half * half));
      const double amp = std::sqrt(std::exp2(log2_amp) * std::pow(std::sqrt(k2) / pivot, -slope) / kModes);
      // a·cos θ + b·sin θ = Re((a − ib)·e^{iθ}).
      const std::complex<double> coef(amp * g(rng), -amp * g(rng));
      const auto& pz = phase[static_cast<size_t>(k[0] + half)];
      const auto& py = phase[static_cast<size_t>(k[1] + half)];
      const auto& px = phase[static_cast<size_t>(k[2] + half)];
      size_t v = 0;
      for (int64_t z = 0; z < s; ++z) {
        for (int64_t y = 0; y < s; ++y) {
          const std::complex<double> zy = coef * pz[static_cast<size_t>(z)] * py[static_cast<size_t>(y)];
          for (int64_t x = 0; x < s; ++x) field[v++] += (zy * px[static_cast<size_t>(x)]).real();
        }
      }
    }
    float* out = &d.x[static_cast<size_t>(r * voxels)];
    for (size_t v = 0; v < field.size(); ++v) out[v] = static_cast<float>(std::exp(0.6 * field[v]));
  }
  return d;
}

}  // namespace ladder::trainer
