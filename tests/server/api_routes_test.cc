// The dashboard's JSON routes as a pure function of the path and query: which call or read each makes, and the
// 404 / 400 answers (the calls themselves are the coordinator's, covered by its own tests and the dashboard's).
#include <gtest/gtest.h>

#include "server/http/api_routes.h"

namespace ladder::server {
namespace {

TEST(ApiRoutes, EachPathMakesItsCallOrSaysWhyNot) {
  for (const char* path : {"/api/server", "/api/searches", "/api/searches/3", "/api/searches/3/trials", "/api/trials/7"}) {
    const ApiRoute r = GetRoute(path, "");
    EXPECT_EQ(r.kind, ApiRoute::kCall) << path;
    ASSERT_TRUE(r.make) << path;
    EXPECT_NE(r.make(), nullptr) << path;
  }
  EXPECT_EQ(GetRoute("/api/trials/7", "").make()->GetTypeName(), "ladder.v1.GetTrialResponse");
  EXPECT_EQ(GetRoute("/api/searches/3/trials", "view=table").make()->GetTypeName(), "ladder.v1.ListTrialsResponse");
  ApiRoute r = GetRoute("/api/nothing/here", "");
  EXPECT_EQ(r.kind, ApiRoute::kNotFound);
  EXPECT_EQ(r.error, "no such API path: /api/nothing/here");
  EXPECT_EQ(GetRoute("/api/searches/x", "").kind, ApiRoute::kNotFound) << "an id is digits";
  EXPECT_EQ(PostRoute("/api/searches/5/cancel").kind, ApiRoute::kCall);
  EXPECT_EQ(PostRoute("/api/searches/5/cancel").make()->GetTypeName(), "ladder.v1.CancelSearchResponse");
  EXPECT_EQ(PostRoute("/api/searches//cancel").kind, ApiRoute::kNotFound);
  EXPECT_EQ(PostRoute("/api/searches").kind, ApiRoute::kNotFound);
}

TEST(ApiRoutes, CurvesAreReadHereWithTheirQueryChecked) {
  ApiRoute r = GetRoute("/api/searches/3/curves", "metric=loss&per_trial=50&rung_metric=step&rungs=1,3,9");
  ASSERT_EQ(r.kind, ApiRoute::kCurves) << r.error;
  EXPECT_EQ(r.search_id, 3);
  EXPECT_EQ(r.metric, "loss");
  EXPECT_EQ(r.per_trial, 50);
  EXPECT_EQ(r.marks.metric, "step");
  EXPECT_EQ(r.marks.rungs, (std::vector<double>{1, 3, 9}));
  r = GetRoute("/api/searches/3/curves", "");
  EXPECT_EQ(r.kind, ApiRoute::kBadRequest);
  EXPECT_EQ(r.error, "curves: ?metric=NAME is required");
  r = GetRoute("/api/searches/3/curves", "metric=loss&rungs=3,1");
  EXPECT_EQ(r.kind, ApiRoute::kBadRequest);
  EXPECT_NE(r.error.find("ascending"), std::string::npos);
}

}  // namespace
}  // namespace ladder::server
