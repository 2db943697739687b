// ListTrials a page at a time: every trial once, in id order, whatever the page size; a page size past the limit
// is refused with the limit.
#include <gtest/gtest.h>

#include "tests/server/coordinator_fixture.h"

namespace ladder::server {
namespace {

constexpr const char* kSeven = R"(
name: seven
objective: {metric: score, mode: max}
budget: {max_trials: 7, parallelism: 7}
command: [run]
space:
  x: {type: float, low: 0.0, high: 1.0}
)";

TEST_F(CoordinatorTest, ListTrialsPagesThroughEveryTrialOnceInIdOrder) {
  Open();
  const int64_t sid = CreateSearch(kSeven);
  auto link = Connect("n1", 7);
  Drain();
  v1::ListTrialsRequest all;
  all.set_search_id(sid);
  v1::ListTrialsResponse whole;
  ASSERT_TRUE(coord_->ListTrials(all, &whole).ok());
  ASSERT_EQ(whole.trials_size(), 7);
  EXPECT_EQ(whole.next_page_token(), 0) << "everything fits in the default page";
  for (int size : {1, 3, 7, 50}) {
    std::vector<int64_t> seen;
    v1::ListTrialsRequest req;
    req.set_search_id(sid);
    req.set_page_size(size);
    int pages = 0;
    do {
      v1::ListTrialsResponse resp;
      ASSERT_TRUE(coord_->ListTrials(req, &resp).ok());
      ASSERT_LE(resp.trials_size(), size);
      for (const auto& t : resp.trials()) seen.push_back(t.id());
      req.set_page_token(resp.next_page_token());
      ++pages;
    } while (req.page_token() != 0 && pages < 100);
    std::vector<int64_t> want;
    for (const auto& t : whole.trials()) want.push_back(t.id());
    EXPECT_EQ(seen, want) << "page size " << size;
    EXPECT_EQ(pages, (7 + size - 1) / size) << "page size " << size;
  }
  v1::ListTrialsRequest huge = all;
  huge.set_page_size(static_cast<int32_t>(kMaxTrialsPage) + 1);
  v1::ListTrialsResponse refused;
  const grpc::Status st = coord_->ListTrials(huge, &refused);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(st.error_message().find("at most 50000"), std::string::npos) << st.error_message();
}

// GetTrial's metric points are bounded (Store::LoadMetricsView: StoreTest.MetricsView...): a bound past the limit
// is refused with the limit.
TEST_F(CoordinatorTest, GetTrialRefusesAMetricPointBoundPastItsLimit) {
  Open();
  const int64_t sid = CreateSearch(kSeven);
  auto link = Connect("n1", 7);
  Drain();
  v1::ListTrialsRequest all;
  all.set_search_id(sid);
  v1::ListTrialsResponse whole;
  ASSERT_TRUE(coord_->ListTrials(all, &whole).ok());
  ASSERT_GT(whole.trials_size(), 0);
  v1::GetTrialRequest req;
  req.set_trial_id(whole.trials(0).id());
  req.set_include_metrics(true);
  v1::GetTrialResponse ok;
  ASSERT_TRUE(coord_->GetTrial(req, &ok).ok());
  EXPECT_EQ(ok.metrics_step_stride(), 0);
  req.set_max_metric_points(kMaxMetricPoints + 1);
  v1::GetTrialResponse refused;
  const grpc::Status st = coord_->GetTrial(req, &refused);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(st.error_message().find("at most 100000"), std::string::npos) << st.error_message();
}

}  // namespace
}  // namespace ladder::server
