// The static inventory format: hostlists, defaults, units, and errors that name file:line and the field.
#include "common/hostlist.h"
#include "server/scheduler/inventory.h"

#include <gtest/gtest.h>

namespace ladder::scheduler {
namespace {

std::vector<std::string> Messages(const std::vector<InventoryError>& errors) {
  std::vector<std::string> out;
  for (const auto& e : errors) out.push_back(e.ToString());
  return out;
}

TEST(InventoryTest, ParsesHostlistsDefaultsAndLabels) {
  const char* text = R"(# a small cluster
defaults cores=42 gpus=6 memory=512G
h[01-03] rack=r1 switch=s1
h[04-05,9] rack=r2 switch=s1 state=draining   # trailing comment

login1 gpus=0 cores=8 memory=16GiB label.zone=a STATE=up
)";
  std::vector<NodeSpec> nodes;
  auto errors = ParseInventory(text, "cluster.inv", &nodes);
  ASSERT_TRUE(errors.empty()) << Messages(errors)[0];
  ASSERT_EQ(nodes.size(), 7u);
  EXPECT_EQ(nodes[0].id, "h01");
  EXPECT_EQ(nodes[2].id, "h03");
  EXPECT_EQ(nodes[4].id, "h05");  // zero padding follows each part's lower bound
  EXPECT_EQ(nodes[5].id, "h9");
  EXPECT_EQ(nodes[0].resources.cores, 42);
  EXPECT_EQ(nodes[0].resources.gpus, 6);
  EXPECT_EQ(nodes[0].resources.slots, 6);  // default: one slot per GPU
  EXPECT_EQ(nodes[0].resources.memory_bytes, int64_t{512} << 30);
  EXPECT_EQ(nodes[0].labels.at("rack"), "r1");
  EXPECT_EQ(nodes[0].labels.at("switch"), "s1");
  EXPECT_EQ(nodes[0].state, NodeState::kUp);
  EXPECT_EQ(nodes[3].state, NodeState::kDraining);
  EXPECT_EQ(nodes[6].id, "login1");
  EXPECT_EQ(nodes[6].resources.gpus, 0);
  EXPECT_EQ(nodes[6].resources.slots, 8);  // no GPUs: one slot per core
  EXPECT_EQ(nodes[6].resources.memory_bytes, int64_t{16} << 30);
  EXPECT_EQ(nodes[6].labels.at("zone"), "a");
  EXPECT_EQ(nodes[6].labels.count("rack"), 0u);

  // The parsed nodes load into a cluster with their topology.
  Cluster c;
  for (auto& n : nodes) ASSERT_TRUE(c.AddNode(n).ok());
  EXPECT_EQ(c.rack_count(), 3);  // r1, r2 and the unlabelled rack
  EXPECT_EQ(c.up_count(), 4);
}

TEST(InventoryTest, ReportsEveryErrorWithFileLineAndField) {
  const char* text = R"(h[1-2] rack=r1
h3 gpus=six
h4 colour=blue
h[5-3]
h1 rack=r1
h6 memory=12X state=sleeping
slots=4
defaults slots=0
)";
  std::vector<NodeSpec> nodes;
  auto errors = ParseInventory(text, "bad.inv", &nodes);
  auto m = Messages(errors);
  ASSERT_EQ(m.size(), 8u) << ::testing::PrintToString(m);
  EXPECT_EQ(m[0], "bad.inv:2: gpus: expected a whole number between 0 and 1048576, got 'six'");
  EXPECT_EQ(m[1], "bad.inv:3: colour: unknown key; expected cores, slots, gpus, memory, rack, switch, state or label.NAME");
  EXPECT_EQ(errors[2].line, 4);
  EXPECT_EQ(errors[2].field, "name");
  EXPECT_NE(m[2].find("lo <= hi"), std::string::npos) << m[2];
  EXPECT_EQ(m[3], "bad.inv:5: name: node h1 is already defined on line 1");
  EXPECT_EQ(errors[4].line, 6);
  EXPECT_EQ(errors[4].field, "memory");
  EXPECT_NE(m[4].find("'12X'"), std::string::npos) << m[4];
  EXPECT_EQ(m[5], "bad.inv:6: state: expected up, draining, down or quarantined, got 'sleeping'");
  EXPECT_EQ(errors[6].line, 7);
  EXPECT_EQ(errors[6].field, "name");
  EXPECT_EQ(m[7], "bad.inv:8: slots: must be >= 1, got '0'");
  EXPECT_TRUE(nodes.empty());
}

TEST(InventoryTest, ExpandHostlist) {
  std::string err;
  EXPECT_EQ(ExpandHostlist("n[1-3]", &err), (std::vector<std::string>{"n1", "n2", "n3"}));
  EXPECT_EQ(ExpandHostlist("rack1-n[08-10]x", &err), (std::vector<std::string>{"rack1-n08x", "rack1-n09x", "rack1-n10x"}));
  EXPECT_EQ(ExpandHostlist("plain", &err), std::vector<std::string>{"plain"});
  EXPECT_TRUE(ExpandHostlist("n[1-3", &err).empty());
  EXPECT_FALSE(err.empty());
  err.clear();
  EXPECT_TRUE(ExpandHostlist("n[1-2][3-4]", &err).empty());
  EXPECT_FALSE(err.empty());
  err.clear();
  EXPECT_TRUE(ExpandHostlist("n[1-100]", &err, 10).empty());
  EXPECT_NE(err.find("more than 10"), std::string::npos) << err;
}

}  // namespace
}  // namespace ladder::scheduler
