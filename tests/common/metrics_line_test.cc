#include "common/metrics_line.h"

#include <gtest/gtest.h>

namespace ladder {
namespace {

TEST(MetricsLine, ParsesStepAndNumbers) {
  auto r = ParseMetricsLine(R"({"step": 120, "epoch": 2, "val_loss": 0.19, "val_accuracy": 0.953})");
  ASSERT_TRUE(r.metrics) << r.error;
  EXPECT_EQ(*r.metrics->step, 120);
  EXPECT_EQ(r.metrics->values.size(), 3u);
  EXPECT_DOUBLE_EQ(r.metrics->values.at("val_accuracy"), 0.953);
  EXPECT_DOUBLE_EQ(r.metrics->values.at("epoch"), 2.0);
}

TEST(MetricsLine, StepIsOptional) {
  auto r = ParseMetricsLine(R"(  {"loss": 1.5}  )");
  ASSERT_TRUE(r.metrics);
  EXPECT_FALSE(r.metrics->step.has_value());
  EXPECT_DOUBLE_EQ(r.metrics->values.at("loss"), 1.5);
}

TEST(MetricsLine, SkipsNonNumericAndNullFields) {
  auto r = ParseMetricsLine(R"({"step": 1, "phase": "train", "ok": true, "nested": {"a": 1}, "x": null, "y": 2})");
  ASSERT_TRUE(r.metrics);
  EXPECT_EQ(r.metrics->values.size(), 1u);
  EXPECT_DOUBLE_EQ(r.metrics->values.at("y"), 2.0);
}

TEST(MetricsLine, IntegralFloatStepAccepted) {
  auto r = ParseMetricsLine(R"({"step": 3.0, "loss": 1})");
  ASSERT_TRUE(r.metrics);
  EXPECT_EQ(*r.metrics->step, 3);
}

TEST(MetricsLine, CarriageReturnTolerated) {
  auto r = ParseMetricsLine("{\"loss\": 0.5}\r");
  ASSERT_TRUE(r.metrics);
}

TEST(MetricsLine, BlankLineIsNeitherMetricNorError) {
  auto r = ParseMetricsLine("   ");
  EXPECT_FALSE(r.metrics);
  EXPECT_TRUE(r.error.empty());
}

TEST(MetricsLine, RejectsMalformedLines) {
  struct Case {
    const char* line;
    const char* error;
  };
  const Case cases[] = {
      {"hello world", "not a JSON object"},
      {"Epoch 1/10 loss=0.3", "not a JSON object"},
      {"{\"loss\": 0.3", "malformed JSON"},
      {"{loss: 0.3}", "malformed JSON"},
      {"[1, 2, 3]", "not a JSON object"},
      {"{\"step\": -1, \"loss\": 1}", "non-negative integer"},
      {"{\"step\": 1.5, \"loss\": 1}", "non-negative integer"},
      {"{\"step\": 18446744073709551615, \"loss\": 1}", "non-negative integer"},  // found by fuzz_metrics_line
      {"{\"step\": \"7\", \"loss\": 1}", "non-negative integer"},
      {"{\"step\": 4}", "no numeric values"},
      {"{\"name\": \"x\"}", "no numeric values"},
      {"{}", "no numeric values"},
      {"{\"a\": 1} trailing", "malformed JSON"},
      {"{\"\\u001b[2Jloss\": 1}", "a field name must be printable text"},
      {"{\"lo\\u202ess\": 1}", "a field name must be printable text"},
  };
  for (const auto& c : cases) {
    auto r = ParseMetricsLine(c.line);
    EXPECT_FALSE(r.metrics) << c.line;
    EXPECT_NE(r.error.find(c.error), std::string::npos) << c.line << " -> " << r.error;
  }
}

TEST(MetricsLine, RejectsOverlongLine) {
  std::string line = "{\"a\": 1, \"pad\": \"" + std::string(kMaxMetricsLineBytes, 'x') + "\"}";
  auto r = ParseMetricsLine(line);
  EXPECT_FALSE(r.metrics);
  EXPECT_NE(r.error.find("64 KiB"), std::string::npos);
}

// Python's json.dumps writes NaN, Infinity and -Infinity: the line is still read, the non-finite fields skipped
// and named; a string that spells NaN is a string.
TEST(MetricsLine, NonFiniteTokensAreSkippedAndNamed) {
  auto r = ParseMetricsLine(R"({"step": 3, "loss": NaN, "grad": Infinity, "low": -Infinity, "acc": 0.5, "note": "NaN"})");
  ASSERT_TRUE(r.metrics) << r.error;
  EXPECT_EQ(*r.metrics->step, 3);
  EXPECT_EQ(r.metrics->values.size(), 1u);
  EXPECT_DOUBLE_EQ(r.metrics->values.at("acc"), 0.5);
  EXPECT_EQ(r.metrics->non_finite, (std::vector<std::string>{"grad", "loss", "low"}));
  // A number too large for a double is not JSON the parser accepts: the line is malformed, not a metric.
  EXPECT_EQ(ParseMetricsLine(R"({"loss": 1e999, "acc": 1})").error, "malformed JSON");
  auto only = ParseMetricsLine(R"({"step": 1, "loss": NaN})");
  EXPECT_FALSE(only.metrics);
  EXPECT_NE(only.error.find("'loss' is NaN or infinite"), std::string::npos) << only.error;
  EXPECT_FALSE(ParseMetricsLine(R"({"loss": NaNa})").metrics);
}

// Bytes that are not UTF-8, inside or outside a string, make a line malformed, never a metric name.
TEST(MetricsLine, InvalidUtf8IsMalformed) {
  for (std::string line : {std::string("{\"lo\xffss\": 1}"), std::string("{\"loss\": 1}\xfe"),
                           std::string("{\"a\": 1, \"\xc0\xaf\": 2}")}) {
    auto r = ParseMetricsLine(line);
    EXPECT_FALSE(r.metrics) << line;
    EXPECT_EQ(r.error, "malformed JSON") << line;
  }
}

// A 10 MB line is refused by its length before any parsing (the worker never buffers more than 64 KiB of it).
TEST(MetricsLine, FieldNamesAreBounded) {
  EXPECT_TRUE(ParseMetricsLine("{\"" + std::string(kMaxMetricNameBytes, 'a') + "\": 1}").metrics);
  auto r = ParseMetricsLine("{\"" + std::string(kMaxMetricNameBytes + 1, 'a') + "\": 1}");
  EXPECT_FALSE(r.metrics);
  EXPECT_NE(r.error.find("at most 256 bytes"), std::string::npos) << r.error;
  EXPECT_LT(r.error.size(), 200u);
}

TEST(MetricsLine, TenMegabyteLineIsRefusedByLength) {
  std::string line = "{\"loss\": [" + std::string(10 << 20, '1') + "]}";
  auto r = ParseMetricsLine(line);
  EXPECT_FALSE(r.metrics);
  EXPECT_NE(r.error.find("64 KiB"), std::string::npos);
}

}  // namespace
}  // namespace ladder
