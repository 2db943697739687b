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
  };
  for (const auto& c : cases) {
    auto p = ParseArgs(c.argv);
    EXPECT_NE(p.error.find(c.expect), std::string::npos) << p.error;
  }
}

}  // namespace
}  // namespace ladder::trainer
