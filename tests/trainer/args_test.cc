#include "trainer/args.h"

#include <gtest/gtest.h>

namespace ladder::trainer {
namespace {

TEST(TrainerArgs, DefaultsAndBothValueForms) {
  auto p = ParseArgs({});
  ASSERT_TRUE(p.error.empty());
  EXPECT_EQ(p.args.optimizer, "sgd");
  EXPECT_EQ(p.args.batch_size, 64);
  p = ParseArgs({"--lr", "0.003", "--batch-size=32", "--optimizer=adamw", "--epochs", "3", "--seed=9"});
  ASSERT_TRUE(p.error.empty()) << p.error;
  EXPECT_DOUBLE_EQ(p.args.lr, 0.003);
  EXPECT_EQ(p.args.batch_size, 32);
  EXPECT_EQ(p.args.optimizer, "adamw");
  EXPECT_EQ(p.args.epochs, 3);
  EXPECT_EQ(p.args.seed, 9u);
  EXPECT_TRUE(ParseArgs({"--help"}).help);
  EXPECT_FALSE(p.args.phase_times);
  EXPECT_TRUE(ParseArgs({"--phase-times"}).args.phase_times);
}

TEST(TrainerArgs, AccumulateMultipliesTheMicroBatches) {
  auto p = ParseArgs({"--batch-size", "512", "--micro-batches", "2", "--accumulate", "8"});
  ASSERT_TRUE(p.error.empty()) << p.error;
  EXPECT_EQ(p.args.micro_batches, 16) << "micro-batches of 32, as the sweep's 64-row batch in 2";
  EXPECT_EQ(ParseArgs({"--batch-size", "64", "--micro-batches", "2"}).args.micro_batches, 2) << "K is 1 by default";
  p = ParseArgs({"--batch-size", "100", "--micro-batches", "2", "--accumulate", "4"});
  EXPECT_NE(p.error.find("--micro-batches 2 x --accumulate 4: 8 micro-batches do not divide --batch-size 100"),
            std::string::npos)
      << p.error;
}

TEST(TrainerArgs, BadValuesNameTheFlag) {
  struct Case {
    std::vector<std::string> argv;
    std::string expect;
  };
  const Case cases[] = {
      {{"--lr", "abc"}, "--lr: invalid value 'abc'"},
      {{"--lr", "-1"}, "--lr: invalid value '-1': must be > 0"},
      {{"--val-fraction", "1"}, "--val-fraction: invalid value '1': must be > 0 and < 1"},
      {{"--lr=0"}, "--lr: invalid value '0'"},
      {{"--optimizer", "foo"}, "--optimizer: invalid value 'foo'"},
      {{"--batch-size", "0"}, "--batch-size: invalid value '0'"},
      {{"--epochs", "2.5"}, "--epochs: invalid value '2.5'"},
      {{"--bogus", "1"}, "unknown option '--bogus'"},
      {{"--lr"}, "--lr needs a value"},
      {{"--warmup-fraction", "1"}, "--warmup-fraction: invalid value '1'"},
      {{"--warmup-steps", "5", "--warmup-fraction", "0.1"}, "options --warmup-steps and --warmup-fraction: give one"},
  };
  for (const auto& c : cases) {
    auto p = ParseArgs(c.argv);
    EXPECT_NE(p.error.find(c.expect), std::string::npos) << p.error;
  }
}

}  // namespace
}  // namespace ladder::trainer
