// ladder watch's Pareto and timeline views (cli/watch_views.h): what each glyph stands for is checked against the
// trials the model holds.
#include "cli/watch_views.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace ladder::cli {
namespace {

int Count(const std::vector<std::string>& lines, char c, size_t from = 1) {
  int n = 0;
  for (size_t i = from; i < lines.size(); ++i) {
    // Only the plot's cells (after the axis bar), never the labels or the legend.
    const size_t bar = lines[i].find('|');
    if (bar != std::string::npos) n += static_cast<int>(std::count(lines[i].begin() + static_cast<long>(bar) + 1, lines[i].end(), c));
  }
  return n;
}

v1::Trial& AddTrial(WatchModel& m, int64_t id, v1::TrialState state) {
  v1::Trial& t = m.trials[id];
  t.set_id(id), t.set_search_id(1), t.set_number(static_cast<int>(id) - 1), t.set_state(state);
  return t;
}

WatchModel TwoObjectives() {
  WatchModel m;
  v1::Search& s = m.searches[1];
  s.set_id(1);
  auto* a = s.add_objectives();
  a->set_metric("val_loss"), a->set_direction(v1::MINIMIZE);
  auto* b = s.add_objectives();
  b->set_metric("node_hours"), b->set_direction(v1::MINIMIZE);
  // (loss, cost): three on the front, two dominated, one failed (no values).
  const double v[][2] = {{0.1, 5}, {0.2, 2}, {0.4, 1}, {0.3, 4}, {0.5, 3}};
  for (int i = 0; i < 5; ++i) {
    v1::Trial& t = AddTrial(m, i + 1, v1::TRIAL_COMPLETED);
    t.add_objectives(v[i][0]), t.add_objectives(v[i][1]);
    if (i < 3) s.add_pareto_front(i + 1);
    t.set_pareto(i >= 3);  // a trial's own mark is as of its message: the view reads the search's front
  }
  AddTrial(m, 6, v1::TRIAL_FAILED);
  return m;
}

TEST(WatchViews, TheParetoViewMarksTheFrontTheDominatedAndTheSelectedTrial) {
  const WatchModel m = TwoObjectives();
  auto lines = ParetoView(m, 1, 0, 14, 90);
  ASSERT_GE(lines.size(), 12u);
  EXPECT_NE(lines[0].find("node_hours (min) against val_loss (min), 3 of 5 on the front"), std::string::npos) << lines[0];
  EXPECT_EQ(Count(lines, 'o'), 3);
  EXPECT_EQ(Count(lines, '.'), 2);
  // The best loss (0.1) is the leftmost column and the highest cost (5) the top row: trial 1 sits top left.
  const size_t bar = lines[1].find('|');
  EXPECT_EQ(lines[1][bar + 1], 'o') << lines[1];
  // The selected trial (4, dominated) is drawn '@' in place of its dot.
  lines = ParetoView(m, 1, 4, 14, 90);
  EXPECT_EQ(Count(lines, '@'), 1);
  EXPECT_EQ(Count(lines, '.'), 1);
  for (const auto& l : ParetoView(m, 1, 4, 14, 40)) EXPECT_LE(l.size(), 40u) << l;
}

// With constraints, an infeasible trial is drawn 'x' (never on the front), even where it would dominate it.
TEST(WatchViews, TheParetoViewMarksInfeasibleTrials) {
  WatchModel m = TwoObjectives();
  m.searches[1].add_constraints()->set_metric("mem");
  v1::Trial& t = AddTrial(m, 7, v1::TRIAL_COMPLETED);
  t.add_objectives(0.05), t.add_objectives(0.5);
  t.set_infeasible(true);
  const auto lines = ParetoView(m, 1, 0, 14, 90);
  EXPECT_NE(lines[0].find("3 of 6 on the front"), std::string::npos) << lines[0];
  EXPECT_EQ(Count(lines, 'x'), 1);
  EXPECT_EQ(Count(lines, 'o'), 3);
  EXPECT_EQ(Count(lines, '.'), 2);
  EXPECT_NE(lines.back().find("x infeasible"), std::string::npos) << lines.back();
}

TEST(WatchViews, WithOneObjectiveTheParetoViewSaysSo) {
  WatchModel m;
  m.searches[1].set_id(1);
  AddTrial(m, 1, v1::TRIAL_COMPLETED).set_objective(0.5);
  const auto lines = ParetoView(m, 1, 1, 14, 80);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[1].find("one objective"), std::string::npos);
}

TEST(WatchViews, TheTimelineGivesOverlappingTrialsOnANodeLanesOfTheirOwn) {
  WatchModel m;
  m.searches[1].set_id(1);
  auto place = [](v1::Trial& t, const char* node, double start, double end) {
    t.add_placement()->set_node_id(node);
    t.set_started_unix(start), t.set_finished_unix(end);
  };
  // n1: trials 1 then 2 one after the other (one lane), trial 3 beside them (a second lane); n2: trial 4, a
  // straggler (100 s against a median of 20 s), and trial 5, requeued and running until now.
  place(AddTrial(m, 1, v1::TRIAL_COMPLETED), "n1", 1000, 1020);
  place(AddTrial(m, 2, v1::TRIAL_COMPLETED), "n1", 1020, 1040);
  place(AddTrial(m, 3, v1::TRIAL_FAILED), "n1", 1010, 1030);
  place(AddTrial(m, 4, v1::TRIAL_COMPLETED), "n2", 1000, 1100);
  v1::Trial& r = AddTrial(m, 5, v1::TRIAL_RUNNING);
  r.add_placement()->set_node_id("n2");
  r.set_started_unix(1050), r.set_attempt(1);
  const auto lines = TimelineView(m, 1, 1200, 12, 115);  // 100 columns of bars over 200 s: 2 s a column
  ASSERT_GE(lines.size(), 6u);
  std::vector<std::string> rows;  // each line's bars, after the axis
  for (const auto& l : lines) rows.push_back(l.find('|') == std::string::npos ? "" : l.substr(l.find('|') + 1));
  auto row = [&](size_t i) -> const std::string& { return rows[i]; };
  EXPECT_EQ(lines[1].substr(0, 4), " n1 ") << lines[1];
  EXPECT_NE(lines[2].find("/2"), std::string::npos) << lines[2];
  EXPECT_EQ(lines[3].substr(0, 4), " n2 ") << lines[3];
  // Trials 1 and 2 share n1's first lane: 10 columns each, each starting with '['; trial 3 (failed) the second.
  EXPECT_EQ(row(1).substr(0, 21), "[=========[========= ") << row(1);
  EXPECT_EQ(row(2).substr(0, 16), "     [FFFFFFFFF ") << row(2);
  // n2: the straggler ends in '!'; trial 5 overlaps it, so it takes the second lane, '~' up to now's column.
  EXPECT_NE(row(3).find("=!"), std::string::npos) << row(3);
  EXPECT_EQ(lines[4].find("/2"), 11u) << lines[4];
  EXPECT_EQ(row(4).find("[~"), 25u) << row(4);
  EXPECT_EQ(row(4).back(), '>') << row(4);
  EXPECT_NE(lines.back().find("! straggler"), std::string::npos);
}

}  // namespace
}  // namespace ladder::cli
