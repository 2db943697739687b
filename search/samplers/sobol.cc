#include "search/samplers/sobol.h"

#include <algorithm>

#include "search/samplers/sampler_internal.h"

namespace ladder::search {
namespace {

uint32_t ReverseBits(uint32_t x) {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
  x = ((x >> 8) & 0x00ff00ffu) | ((x & 0x00ff00ffu) << 8);
  return (x >> 16) | (x << 16);
}

// Laine–Karras permutation: a hash in which each bit depends only on the bits below it, so applied to the
// bit-reversed value it permutes each dyadic interval's halves independently (nested uniform scrambling).
uint32_t LaineKarras(uint32_t x, uint32_t seed) {
  x += seed;
  x ^= x * 0x6c50b47cu;
  x ^= x * 0xb82f1e52u;
  x ^= x * 0xc7afe638u;
  x ^= x * 0x8d22f6e6u;
  return x;
}

uint32_t OwenScramble(uint32_t x, uint32_t seed) { return ReverseBits(LaineKarras(ReverseBits(x), seed)); }

std::vector<uint32_t> Directions(int dim) {  // dim 0-based
  std::vector<uint32_t> v(32);
  if (dim == 0) {
    for (int k = 0; k < 32; ++k) v[k] = 1u << (31 - k);
    return v;
  }
  const internal::SobolPolynomial& p = internal::kSobolPolynomials[dim - 1];
  int s = 0;
  while ((p.poly >> (s + 1)) != 0) ++s;
  std::vector<uint32_t> m(32);
  for (int k = 0; k < s && k < 32; ++k) m[k] = p.m[k];
  for (int k = s; k < 32; ++k) {
    // m_k = 2 a_1 m_{k-1} ^ 4 a_2 m_{k-2} ^ ... ^ 2^s m_{k-s} ^ m_{k-s}
    uint32_t x = m[k - s] ^ (m[k - s] << s);
    for (int i = 1; i < s; ++i) {
      if ((p.poly >> (s - i)) & 1u) x ^= m[k - i] << i;
    }
    m[k] = x;
  }
  for (int k = 0; k < 32; ++k) v[k] = m[k] << (31 - k);
  return v;
}

}  // namespace

SobolSequence::SobolSequence(int dims, bool scramble, uint64_t seed) : dims_(std::max(dims, 1)), scramble_(scramble) {
  for (int d = 0; d < dims_; ++d) {
    v_.push_back(Directions(d % internal::kSobolMaxDimension));
    seeds_.push_back(static_cast<uint32_t>(internal::SplitMix64(seed ^ internal::SplitMix64(uint64_t(d) + 1))));
  }
}

std::vector<double> SobolSequence::Point(uint64_t index) const {
  std::vector<double> out(static_cast<size_t>(dims_));
  for (int d = 0; d < dims_; ++d) {
    uint32_t x = 0;
    uint64_t n = index;
    for (int k = 0; n != 0 && k < 32; ++k, n >>= 1) {
      if (n & 1u) x ^= v_[d][k];
    }
    if (scramble_) x = OwenScramble(x, seeds_[d]);
    // The cell's centre of width 2^-32 keeps points off 0 exactly; below 1 by construction.
    out[d] = (static_cast<double>(x) + 0.5) * 0x1.0p-32;
  }
  return out;
}

}  // namespace ladder::search
