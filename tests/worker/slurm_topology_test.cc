// Slurm's switch tree as ladder's rack and switch labels (what `scontrol show topology` prints for topology/tree).
#include "worker/slurm_topology.h"

#include <gtest/gtest.h>

namespace ladder::worker {
namespace {

TEST(SlurmTopology, ANodesRackIsItsLeafSwitchAndItsSwitchTheOneAbove) {
  // As Slurm 22.05 prints it: upper switches list every node below them too.
  const std::string text =
      "SwitchName=leaf1 Level=0 LinkSpeed=1 Nodes=n[1-2]\n"
      "SwitchName=leaf2 Level=0 LinkSpeed=1 Nodes=n[3-4],m7\n"
      "SwitchName=top Level=1 LinkSpeed=1 Nodes=n[1-4],m7 Switches=leaf[1-2]\n";
  std::string error;
  auto labels = ParseSlurmTopology(text, &error);
  EXPECT_EQ(error, "");
  ASSERT_EQ(labels.size(), 5u);
  EXPECT_EQ(labels["n1"].rack, "leaf1");
  EXPECT_EQ(labels["n1"].sw, "top");
  EXPECT_EQ(labels["n4"].rack, "leaf2");
  EXPECT_EQ(labels["m7"].rack, "leaf2");
  EXPECT_EQ(labels["m7"].sw, "top");
}

TEST(SlurmTopology, OneLevelHasNoSwitchAboveAndABadListIsNamed) {
  std::string error;
  auto labels = ParseSlurmTopology("SwitchName=s1 Level=0 LinkSpeed=1 Nodes=a,b\n"
                                   "SwitchName=s2 Level=0 LinkSpeed=1 Nodes=c[3-1]\n",
                                   &error);
  EXPECT_EQ(labels["a"].rack, "s1");
  EXPECT_EQ(labels["a"].sw, "");
  EXPECT_EQ(labels.count("c3"), 0u);
  EXPECT_NE(error.find("c[3-1]"), std::string::npos) << error;
  EXPECT_TRUE(ParseSlurmTopology("scontrol: error: No topology information available\n", &error).empty());
}

}  // namespace
}  // namespace ladder::worker
