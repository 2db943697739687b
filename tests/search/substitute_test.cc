// FormatValue and SubstituteCommand.
#include <gtest/gtest.h>

#include <charconv>

#include "search/spec/spec_reader.h"

namespace ladder::search {
namespace {

TEST(FormatValueTest, ShortestRoundTripFloats) {
  EXPECT_EQ(FormatValue(0.001), "0.001");
  EXPECT_EQ(FormatValue(1e-5), "1e-05");
  EXPECT_EQ(FormatValue(0.1), "0.1");
  EXPECT_EQ(FormatValue(2.0), "2");
  EXPECT_EQ(FormatValue(int64_t{128}), "128");
  EXPECT_EQ(FormatValue(int64_t{-3}), "-3");
  EXPECT_EQ(FormatValue(std::string("adam")), "adam");
  for (double d : {0.1 + 0.2, 1.0 / 3, 6.02214076e23, 1e-300, 0.012345678901234567, -2.5e-7}) {
    std::string s = FormatValue(d);
    double back = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), back);
    ASSERT_EQ(ec, std::errc()) << s;
    EXPECT_EQ(ptr, s.data() + s.size()) << s;
    EXPECT_EQ(back, d) << s;
    EXPECT_EQ(std::strtod(s.c_str(), nullptr), d) << s;  // what a trainer's argument parser would do
  }
}

SearchSpec Spec(std::vector<std::string> command, std::map<std::string, std::string> env = {}) {
  SearchSpec s;
  s.command = std::move(command);
  s.env = std::move(env);
  return s;
}

const std::map<std::string, std::string> kBuiltins = {{"trial_id", "41"}, {"trial_number", "7"}, {"search_id", "3"}};

TEST(SubstituteTest, FillsParamsAndBuiltins) {
  SearchSpec s = Spec({"ladder-train", "--lr", "{lr}", "--bs={batch_size}", "--opt", "{opt}", "--seed", "{trial_number}",
                       "--out=runs/{search_id}/{trial_id}"},
                      {{"OMP_NUM_THREADS", "1"}, {"TAG", "{opt}-{trial_number}"}});
  Params p = {{"lr", 1e-5}, {"batch_size", int64_t{64}}, {"opt", std::string("adam")}};
  Substituted r = SubstituteCommand(s, p, kBuiltins);
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.argv, (std::vector<std::string>{"ladder-train", "--lr", "1e-05", "--bs=64", "--opt", "adam", "--seed",
                                              "7", "--out=runs/3/41"}));
  EXPECT_EQ(r.env, (std::map<std::string, std::string>{{"OMP_NUM_THREADS", "1"}, {"TAG", "adam-7"}}));
}

TEST(SubstituteTest, DoubledBracesAreLiteral) {
  Substituted r = SubstituteCommand(Spec({"echo", "{{\"lr\": {lr}}}", "{{lr}}", "}}{{"}), {{"lr", 0.5}}, kBuiltins);
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.argv, (std::vector<std::string>{"echo", "{\"lr\": 0.5}", "{lr}", "}{"}));
}

TEST(SubstituteTest, UnknownPlaceholderIsAnError) {
  Substituted r = SubstituteCommand(Spec({"t", "--lr", "{lrr}"}), {{"lr", 0.5}}, kBuiltins);
  EXPECT_NE(r.error.find("command[2]"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("unknown placeholder {lrr}"), std::string::npos) << r.error;
  Substituted e = SubstituteCommand(Spec({"t"}, {{"X", "{nope}"}}), {}, kBuiltins);
  EXPECT_NE(e.error.find("env.X"), std::string::npos) << e.error;
  Substituted b = SubstituteCommand(Spec({"t", "{"}), {}, kBuiltins);
  EXPECT_NE(b.error.find("command[1]"), std::string::npos) << b.error;
}

TEST(SubstituteTest, ParsedSpecSubstitutesEndToEnd) {
  ParseResult r = ParseSpec(R"(name: e2e
objective: {metric: loss, mode: min}
budget: {max_trials: 1}
command: ladder-train --lr {lr} --name "trial {trial_number}"
env: {RUN: "{search_id}"}
space:
  lr: {type: float, low: 0.001, high: 0.1}
)", "e2e.yaml");
  ASSERT_TRUE(r.ok()) << r.errors[0].ToString();
  Substituted sub = SubstituteCommand(*r.spec, {{"lr", 0.01}}, kBuiltins);
  ASSERT_EQ(sub.error, "");
  EXPECT_EQ(sub.argv, (std::vector<std::string>{"ladder-train", "--lr", "0.01", "--name", "trial 7"}));
  EXPECT_EQ(sub.env.at("RUN"), "3");
}

}  // namespace
}  // namespace ladder::search
