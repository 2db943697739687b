// A teacher network's classification task (data_sources.h: teacher:), for the extrapolation regime tasks
// (a best LR that keeps growing with the batch, or levels off: bench/extrapolation_regimes).
//
// A fixed random teacher — a ReLU MLP with one hidden layer of kTeacherHidden units, biases centred so that the
// classes are balanced — labels Gaussian inputs with the argmax of its logits. Two dials:
//   LABEL_NOISE  the fraction of labels replaced by a different class drawn uniformly (so that the stored label
//                differs from the teacher's in that fraction of rows): heavy noise keeps the gradient noisy at any
//                batch, and the best learning rate keeps growing with the batch;
//   RANK         the inputs' effective rank: x = U z + kIsotropicNoise n, z ~ N(0, I_RANK), U a fixed random
//                FEATURES x RANK map with orthogonal columns of equal norm (RANK equal variances FEATURES/RANK;
//                full rank: isotropic), n ~ N(0, I_FEATURES). Noiseless and low
//                rank, the task is realizable by the student MLP and its curvature concentrates on RANK
//                directions: the best LR levels off, earlier the lower the rank.
// Every part is drawn from its own stream of the data seed (teacher weights, subspace, inputs, label noise), so
// turning one dial leaves the others' draws alone: the same inputs and teacher at every LABEL_NOISE.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>

#include "trainer/data_sources.h"

namespace ladder::trainer {

namespace {

constexpr int64_t kTeacherHidden = 32;  // hidden units of the teacher (the default student has 128 per layer)
constexpr float kIsotropicNoise = 0.01f;  // the inputs' spread off their RANK-dim subspace (per feature)
constexpr int64_t kPilotRows = 4096;  // inputs drawn to centre the teacher's logits (balanced classes)

// Draws one input row into `x`: U z + kIsotropicNoise n.
void DrawInput(const std::vector<float>& u, int64_t features, int64_t rank, std::mt19937_64& rng, float* x) {
  std::normal_distribution<float> g(0, 1);
  std::vector<float> z(static_cast<size_t>(rank));
  for (auto& v : z) v = g(rng);
  for (int64_t j = 0; j < features; ++j) {
    float s = 0;
    for (int64_t k = 0; k < rank; ++k) s += u[static_cast<size_t>(j * rank + k)] * z[static_cast<size_t>(k)];
    x[j] = s + kIsotropicNoise * g(rng);
  }
}

}  // namespace

Dataset MakeTeacher(const TeacherOptions& o, uint64_t seed, std::vector<int64_t>* teacher_labels) {
  const int64_t f = o.features, c = o.classes, h = kTeacherHidden, r = o.rank > 0 ? o.rank : o.features;
  std::normal_distribution<float> g(0, 1);
  // The subspace: U = sqrt(FEATURES/RANK) Q, Q a random FEATURES x RANK matrix with orthonormal columns (Gram-
  // Schmidt on Gaussian columns), so that the inputs' covariance has RANK equal eigenvalues FEATURES/RANK (trace
  // FEATURES: features of variance about 1) and the rest kIsotropicNoise^2. Full rank is then isotropic (a square
  // Gaussian U would be ill-conditioned: its smallest singular value near 0).
  std::mt19937_64 subspace_rng(seed + 1);
  std::normal_distribution<double> gd(0, 1);
  std::vector<double> q(static_cast<size_t>(f * r));  // column-major: column k at q[k * f]
  for (auto& v : q) v = gd(subspace_rng);
  for (int64_t k = 0; k < r; ++k) {
    double* col = &q[static_cast<size_t>(k * f)];
    for (int64_t m = 0; m < k; ++m) {
      const double* prev = &q[static_cast<size_t>(m * f)];
      double dot = 0;
      for (int64_t j = 0; j < f; ++j) dot += col[j] * prev[j];
      for (int64_t j = 0; j < f; ++j) col[j] -= dot * prev[j];
    }
    double norm = 0;
    for (int64_t j = 0; j < f; ++j) norm += col[j] * col[j];
    for (int64_t j = 0; j < f; ++j) col[j] /= std::sqrt(norm);
  }
  std::vector<float> u(static_cast<size_t>(f * r));  // row-major, as DrawInput reads it
  const double scale = std::sqrt(static_cast<double>(f) / static_cast<double>(r));
  for (int64_t j = 0; j < f; ++j) {
    for (int64_t k = 0; k < r; ++k) {
      u[static_cast<size_t>(j * r + k)] = static_cast<float>(scale * q[static_cast<size_t>(k * f + j)]);
    }
  }
  // The teacher: W1 N(0, 1/FEATURES), b1 N(0, 0.1^2), W2 N(0, 1/HIDDEN); b2 centres the logits.
  std::mt19937_64 teacher_rng(seed + 2);
  std::vector<float> w1(static_cast<size_t>(h * f)), b1(static_cast<size_t>(h)), w2(static_cast<size_t>(c * h));
  for (auto& v : w1) v = g(teacher_rng) / std::sqrt(static_cast<float>(f));
  for (auto& v : b1) v = 0.1f * g(teacher_rng);
  for (auto& v : w2) v = g(teacher_rng) / std::sqrt(static_cast<float>(h));
  std::vector<float> b2(static_cast<size_t>(c), 0.0f);
  std::vector<float> hidden(static_cast<size_t>(h)), logits(static_cast<size_t>(c));
  auto forward = [&](const float* x) {
    for (int64_t i = 0; i < h; ++i) {
      float s = b1[static_cast<size_t>(i)];
      for (int64_t j = 0; j < f; ++j) s += w1[static_cast<size_t>(i * f + j)] * x[j];
      hidden[static_cast<size_t>(i)] = std::max(s, 0.0f);
    }
    for (int64_t k = 0; k < c; ++k) {
      float s = b2[static_cast<size_t>(k)];
      for (int64_t i = 0; i < h; ++i) s += w2[static_cast<size_t>(k * h + i)] * hidden[static_cast<size_t>(i)];
      logits[static_cast<size_t>(k)] = s;
    }
    return static_cast<int64_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  };
  // Centre the logits on a pilot sample (its own stream: the same centring for every ROWS).
  {
    std::mt19937_64 pilot_rng(seed + 3);
    std::vector<double> mean(static_cast<size_t>(c), 0.0);
    std::vector<float> x(static_cast<size_t>(f));
    for (int64_t n = 0; n < kPilotRows; ++n) {
      DrawInput(u, f, r, pilot_rng, x.data());
      forward(x.data());
      for (int64_t k = 0; k < c; ++k) mean[static_cast<size_t>(k)] += logits[static_cast<size_t>(k)];
    }
    for (int64_t k = 0; k < c; ++k) {
      b2[static_cast<size_t>(k)] = static_cast<float>(-mean[static_cast<size_t>(k)] / kPilotRows);
    }
  }
  Dataset d;
  d.rows = o.rows;
  d.features = f;
  d.classes = c;
  d.x.resize(static_cast<size_t>(o.rows * f));
  d.y.resize(static_cast<size_t>(o.rows));
  if (teacher_labels) teacher_labels->resize(static_cast<size_t>(o.rows));
  std::mt19937_64 input_rng(seed + 4), noise_rng(seed + 5);
  std::uniform_real_distribution<double> uniform(0, 1);
  for (int64_t n = 0; n < o.rows; ++n) {
    float* x = &d.x[static_cast<size_t>(n * f)];
    DrawInput(u, f, r, input_rng, x);
    const int64_t label = forward(x);
    if (teacher_labels) (*teacher_labels)[static_cast<size_t>(n)] = label;
    // Both draws every row, so that the rows a noise level flips are a subset of those a higher level flips.
    const double coin = uniform(noise_rng);
    const int64_t other = static_cast<int64_t>(noise_rng() % static_cast<uint64_t>(c - 1));
    d.y[static_cast<size_t>(n)] = coin < o.label_noise ? (other >= label ? other + 1 : other) : label;
  }
  return d;
}

bool ParseTeacher(const std::string& rest, TeacherOptions* out, std::string* error) {
  const std::string usage = "--data teacher:ROWS[:FEATURES[:CLASSES[:LABEL_NOISE[:RANK]]]]";
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    size_t pos = rest.find(':', start);
    parts.push_back(rest.substr(start, pos == std::string::npos ? std::string::npos : pos - start));
    if (pos == std::string::npos) break;
    start = pos + 1;
  }
  if (parts.size() > 5) {
    *error = usage + ": too many fields in 'teacher:" + rest + "'";
    return false;
  }
  TeacherOptions o;
  const char* names[] = {"ROWS", "FEATURES", "CLASSES", "LABEL_NOISE", "RANK"};
  const long long mins[] = {2, 1, 2, 0, 1};
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& p = parts[i];
    char* end = nullptr;
    if (i == 3) {
      double v = std::strtod(p.c_str(), &end);
      if (p.empty() || *end != '\0' || !(v >= 0 && v < 1)) {
        *error = usage + ": LABEL_NOISE must be a fraction in [0, 1), got '" + p + "'";
        return false;
      }
      o.label_noise = v;
      continue;
    }
    long long v = std::strtoll(p.c_str(), &end, 10);
    if (p.empty() || *end != '\0' || v < mins[i]) {
      *error = usage + ": " + names[i] + " must be an integer of at least " + std::to_string(mins[i]) + ", got '" +
               p + "'";
      return false;
    }
    (i == 0 ? o.rows : i == 1 ? o.features : i == 2 ? o.classes : o.rank) = v;
  }
  if (o.rank > o.features) {
    *error = usage + ": RANK must be at most FEATURES (" + std::to_string(o.features) + "), got '" +
             std::to_string(o.rank) + "'";
    return false;
  }
  *out = o;
  return true;
}

}  // namespace ladder::trainer
