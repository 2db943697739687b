#pragma once
// Helpers for tests that run ladder-train as processes and compare the parameters they save
// (--save-params writes raw float32).
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/free_port.h"

namespace ladder::testing {

// The ladder-train binary under test ($LADDER_BIN_DIR overrides the build tree's).
inline std::string TrainerBinary() {
  const char* d = std::getenv("LADDER_BIN_DIR");
  return std::string(d ? d : LADDER_TEST_BIN_DIR) + "/ladder-train";
}

inline std::vector<float> ReadParams(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::vector<float> v;
  float x;
  while (in.read(reinterpret_cast<char*>(&x), sizeof x)) v.push_back(x);
  return v;
}

// max |a - b| / max |b|
inline double RelativeError(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    num = std::max(num, static_cast<double>(std::fabs(a[i] - b[i])));
    den = std::max(den, static_cast<double>(std::fabs(b[i])));
  }
  return num / den;
}

}  // namespace ladder::testing
