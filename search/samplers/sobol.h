#pragma once
// Sobol' low-discrepancy sequence (Joe–Kuo direction numbers, up to kSobolMaxDimension dimensions), with
// optional Owen scrambling (nested uniform scrambling by hashing, Burley 2020 "Practical Hash-based Owen
// Scrambling"), which keeps the net structure: for any k, the points 0 .. 2^k - 1 have exactly one point in
// each interval [i / 2^k, (i + 1) / 2^k) of every coordinate. Pure value type.
#include <cstdint>
#include <vector>

namespace ladder::search {

namespace internal {
inline constexpr int kSobolMaxDimension = 1024;
struct SobolPolynomial {
  uint32_t poly;        // x^s + a_1 x^(s-1) + ... + 1, bit i = coefficient of x^i
  uint16_t m[13];       // initial direction numbers m_1..m_s
};
extern const SobolPolynomial kSobolPolynomials[kSobolMaxDimension - 1];
}  // namespace internal

class SobolSequence {
 public:
  // dims in [1, kSobolMaxDimension] (more are clamped, see Point). scramble: Owen-scramble with `seed`.
  SobolSequence(int dims, bool scramble, uint64_t seed);
  int dims() const { return dims_; }
  // Point `index` (0-based, < 2^32) in [0, 1)^dims. Dimensions past kSobolMaxDimension repeat earlier ones with
  // an independent scramble.
  std::vector<double> Point(uint64_t index) const;

 private:
  int dims_;
  bool scramble_;
  std::vector<std::vector<uint32_t>> v_;  // direction numbers per dimension, 32 each
  std::vector<uint32_t> seeds_;           // per-dimension scramble seeds
};

}  // namespace ladder::search
