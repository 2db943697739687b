#include "search/multiobjective/pareto.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>

namespace ladder::search {
namespace {

// Points strictly below ref in every objective (the others bound no volume).
std::vector<ObjectiveVector> Inside(const std::vector<ObjectiveVector>& points, const ObjectiveVector& ref) {
  std::vector<ObjectiveVector> in;
  for (const ObjectiveVector& p : points) {
    bool ok = p.size() == ref.size();
    for (size_t i = 0; ok && i < p.size(); ++i) ok = p[i] < ref[i];
    if (ok) in.push_back(p);
  }
  return in;
}

double Volume2(std::vector<ObjectiveVector> pts, const ObjectiveVector& ref) {
  std::sort(pts.begin(), pts.end());
  double area = 0, prev_y = ref[1];
  for (const ObjectiveVector& p : pts) {
    if (p[1] < prev_y) {
      area += (ref[0] - p[0]) * (prev_y - p[1]);
      prev_y = p[1];
    }
  }
  return area;
}

// The 2-D front of the points seen so far (x ascending, so y descending) and the area it dominates up to ref.
class Staircase {
 public:
  Staircase(double rx, double ry) : rx_(rx), ry_(ry) {}
  double area() const { return area_; }

  void Insert(double x, double y) {
    auto it = front_.lower_bound(x);  // first key >= x
    double h = ry_;                   // the front's height just left of x
    if (it != front_.begin()) h = std::prev(it)->second;
    if (h <= y) return;  // a point to the left is at least as low: dominated
    if (it != front_.end() && it->first == x && it->second <= y) return;
    // p's box [x, rx] x [y, h(t)] is new where the front's height h(t) is above y: walk the points p dominates.
    double cur_x = x, added = 0;
    while (it != front_.end() && it->second >= y) {
      added += (it->first - cur_x) * (h - y);
      cur_x = it->first;
      h = it->second;
      it = front_.erase(it);
    }
    const double next_x = it == front_.end() ? rx_ : it->first;
    added += (next_x - cur_x) * (h - y);
    front_.emplace(x, y);
    area_ += added;
  }

 private:
  double rx_, ry_;
  double area_ = 0;
  std::map<double, double> front_;
};

double Volume3(std::vector<ObjectiveVector> pts, const ObjectiveVector& ref) {
  std::sort(pts.begin(), pts.end(), [](const ObjectiveVector& a, const ObjectiveVector& b) { return a[2] < b[2]; });
  Staircase s(ref[0], ref[1]);
  double volume = 0;
  for (size_t i = 0; i < pts.size(); ++i) {
    s.Insert(pts[i][0], pts[i][1]);
    const double next_z = i + 1 < pts.size() ? pts[i + 1][2] : ref[2];
    volume += s.area() * (next_z - pts[i][2]);
  }
  return volume;
}

double VolumeOf(std::vector<ObjectiveVector> pts, const ObjectiveVector& ref) {
  const size_t m = ref.size();
  if (pts.empty() || m == 0) return 0;
  if (m == 1) {
    double best = ref[0];
    for (const auto& p : pts) best = std::min(best, p[0]);
    return ref[0] - best;
  }
  if (m == 2) return Volume2(std::move(pts), ref);
  if (m == 3) return Volume3(std::move(pts), ref);
  // Slices on the last objective: between consecutive values, the (m-1)-volume of the points below.
  std::sort(pts.begin(), pts.end(), [m](const ObjectiveVector& a, const ObjectiveVector& b) { return a[m - 1] < b[m - 1]; });
  ObjectiveVector sub_ref(ref.begin(), ref.end() - 1);
  std::vector<ObjectiveVector> below;
  double volume = 0;
  for (size_t i = 0; i < pts.size(); ++i) {
    below.emplace_back(pts[i].begin(), pts[i].end() - 1);
    const double next = i + 1 < pts.size() ? pts[i + 1][m - 1] : ref[m - 1];
    if (next > pts[i][m - 1]) volume += VolumeOf(below, sub_ref) * (next - pts[i][m - 1]);
  }
  return volume;
}

}  // namespace

bool Dominates(const ObjectiveVector& a, const ObjectiveVector& b) {
  bool strictly = false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] > b[i]) return false;
    strictly = strictly || a[i] < b[i];
  }
  return strictly;
}

std::vector<int> NonDominatedRanks(const std::vector<ObjectiveVector>& points) {
  const size_t n = points.size();
  std::vector<std::vector<size_t>> dominated(n);  // dominated[i]: the points i dominates
  std::vector<size_t> count(n, 0);                 // how many points dominate i
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      if (Dominates(points[i], points[j])) {
        dominated[i].push_back(j);
        ++count[j];
      } else if (Dominates(points[j], points[i])) {
        dominated[j].push_back(i);
        ++count[i];
      }
    }
  }
  std::vector<int> rank(n, 0);
  std::vector<size_t> front;
  for (size_t i = 0; i < n; ++i) {
    if (count[i] == 0) front.push_back(i);
  }
  for (int r = 0; !front.empty(); ++r) {
    std::vector<size_t> next;
    for (size_t i : front) {
      rank[i] = r;
      for (size_t j : dominated[i]) {
        if (--count[j] == 0) next.push_back(j);
      }
    }
    front = std::move(next);
  }
  return rank;
}

std::vector<int> ConstrainedNonDominatedRanks(const std::vector<ObjectiveVector>& points,
                                              const std::vector<double>& violations) {
  std::vector<size_t> feasible, infeasible;
  for (size_t i = 0; i < points.size(); ++i) (violations[i] > 0 ? infeasible : feasible).push_back(i);
  std::vector<ObjectiveVector> fp;
  for (size_t i : feasible) fp.push_back(points[i]);
  const std::vector<int> fr = NonDominatedRanks(fp);
  std::vector<int> rank(points.size(), 0);
  int next = 0;  // the first rank after the feasible points'
  for (size_t k = 0; k < feasible.size(); ++k) {
    rank[feasible[k]] = fr[k];
    next = std::max(next, fr[k] + 1);
  }
  std::stable_sort(infeasible.begin(), infeasible.end(),
                   [&](size_t a, size_t b) { return violations[a] < violations[b]; });
  for (size_t k = 0; k < infeasible.size(); ++k) {
    if (k > 0 && violations[infeasible[k]] > violations[infeasible[k - 1]]) ++next;
    rank[infeasible[k]] = next;
  }
  return rank;
}

std::vector<std::vector<size_t>> LeadingFronts(const std::vector<const ObjectiveVector*>& points, size_t min_count) {
  std::vector<std::vector<size_t>> fronts;
  std::vector<size_t> rest(points.size());
  std::iota(rest.begin(), rest.end(), size_t{0});
  size_t taken = 0;
  while (!rest.empty() && taken < min_count) {
    std::vector<size_t> front, left;
    for (size_t i : rest) {  // front: the non-dominated among rest seen so far
      bool dominated = false;
      for (size_t k = 0; k < front.size();) {
        if (Dominates(*points[front[k]], *points[i])) {
          dominated = true;
          break;
        }
        if (Dominates(*points[i], *points[front[k]])) {
          left.push_back(front[k]);
          front.erase(front.begin() + static_cast<long>(k));
        } else {
          ++k;
        }
      }
      (dominated ? left : front).push_back(i);
    }
    std::sort(front.begin(), front.end());
    std::sort(left.begin(), left.end());
    taken += front.size();
    fronts.push_back(std::move(front));
    rest = std::move(left);
  }
  return fronts;
}

std::vector<double> CrowdingDistance(const std::vector<ObjectiveVector>& points, const std::vector<size_t>& front) {
  const size_t n = front.size();
  std::vector<double> d(n, 0.0);
  if (n == 0) return d;
  const size_t m = points[front[0]].size();
  std::vector<size_t> order(n);
  for (size_t k = 0; k < m; ++k) {
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return points[front[a]][k] < points[front[b]][k]; });
    const double lo = points[front[order.front()]][k], hi = points[front[order.back()]][k];
    d[order.front()] = d[order.back()] = std::numeric_limits<double>::infinity();
    if (hi <= lo) continue;
    for (size_t i = 1; i + 1 < n; ++i) {
      d[order[i]] += (points[front[order[i + 1]]][k] - points[front[order[i - 1]]][k]) / (hi - lo);
    }
  }
  return d;
}

double Hypervolume(const std::vector<ObjectiveVector>& points, const ObjectiveVector& ref) {
  return VolumeOf(Inside(points, ref), ref);
}

std::vector<double> HypervolumeContributions(const std::vector<ObjectiveVector>& points, const ObjectiveVector& ref) {
  const double all = Hypervolume(points, ref);
  std::vector<double> c(points.size());
  std::vector<ObjectiveVector> others;
  for (size_t i = 0; i < points.size(); ++i) {
    others.assign(points.begin(), points.end());
    others.erase(others.begin() + static_cast<long>(i));
    c[i] = std::max(0.0, all - Hypervolume(others, ref));
  }
  return c;
}

std::vector<size_t> GreedyHypervolumeSubset(const std::vector<ObjectiveVector>& points, size_t k,
                                            const ObjectiveVector& ref) {
  std::vector<size_t> chosen;
  std::vector<bool> used(points.size(), false);
  std::vector<ObjectiveVector> set;
  while (chosen.size() < std::min(k, points.size())) {
    size_t best = points.size();
    double best_volume = -1;
    for (size_t i = 0; i < points.size(); ++i) {
      if (used[i]) continue;
      set.push_back(points[i]);
      const double v = Hypervolume(set, ref);
      set.pop_back();
      if (v > best_volume) {
        best_volume = v;
        best = i;
      }
    }
    used[best] = true;
    chosen.push_back(best);
    set.push_back(points[best]);
  }
  return chosen;
}

}  // namespace ladder::search
