// ladder watch's trial detail: the sections a person reads (runs, journal, log tail) from a GetTrial answer, the
// rung label, and a running trial's node-hours counted on from when the coordinator sent it.
#include "cli/watch_detail.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace ladder::cli {
namespace {

bool HasLine(const std::vector<std::string>& lines, const std::string& want) {
  return std::find(lines.begin(), lines.end(), want) != lines.end();
}

TEST(WatchDetail, ShowsTheRunsTheJournalAndTheLogTail) {
  v1::Trial t;
  t.set_id(7);
  t.set_state(v1::TRIAL_COMPLETED);
  t.set_node_seconds(7200);
  auto* a = t.add_attempts();
  a->set_attempt(0);
  a->add_nodes("a"), a->add_nodes("b");
  a->set_started_unix(1000), a->set_ended_unix(1090);
  a->set_outcome("lost");
  auto* j = t.add_history();
  j->set_kind("trial_requeued");
  j->set_detail("node b lost");
  t.set_log_tail("loading\nepoch 3 done");
  const auto lines = TrialDetailLines(t, nullptr, 2000);
  auto has = [&](const std::string& part) {
    return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(part) != std::string::npos; });
  };
  EXPECT_TRUE(has("attempt 1 ")) << lines.size();
  EXPECT_TRUE(has("on a,b  lost"));
  EXPECT_TRUE(has("trial_requeued: node b lost"));
  EXPECT_TRUE(HasLine(lines, "   loading"));
  EXPECT_TRUE(HasLine(lines, "   epoch 3 done"));
  EXPECT_TRUE(HasLine(lines, " node-hours    2.00"));
  EXPECT_EQ(FormatNodeHours(18), "0.01");
  EXPECT_EQ(FormatNodeHours(3600 * 1234.4), "1234");
}

TEST(WatchDetail, SaysWhatItHasNotGot) {
  const auto lines = TrialDetailLines(v1::Trial(), nullptr, 0);
  EXPECT_TRUE(HasLine(lines, "   (none yet)"));
  EXPECT_TRUE(HasLine(lines, "   (nothing yet)"));
  EXPECT_TRUE(HasLine(lines, "   (empty)"));
}

TEST(WatchDetail, RungLabelsAndRunningNodeSeconds) {
  v1::Trial t;
  EXPECT_EQ(RungLabel(t, nullptr), "-");
  t.set_rung(2);
  v1::Search asha;
  asha.add_rungs(1), asha.add_rungs(3);
  EXPECT_EQ(RungLabel(t, &asha), "rung 2");
  EXPECT_EQ(RungLabel(t, &v1::Search::default_instance()), "gen 2") << "pbt: a generation";
  t.set_state(v1::TRIAL_RUNNING);
  t.set_started_unix(100);
  t.add_placement(), t.add_placement();
  t.set_node_seconds(10);  // as sent at 105: ended runs and this one's first 5 s on 2 nodes... counted from then
  EXPECT_DOUBLE_EQ(NodeSecondsAt(t, 105, 115), 10 + 2 * 10);
  t.set_state(v1::TRIAL_COMPLETED);
  EXPECT_DOUBLE_EQ(NodeSecondsAt(t, 105, 115), 10) << "an ended trial costs no more";
}

}  // namespace
}  // namespace ladder::cli
