// The GradientReducer over the MPI backend, run as 2 and 4 processes (mpirun): bitwise the sums of raw
// MPI_Allreduce over the same bucket cuts (see mpi_reducer_check.cc).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tests/support/process.h"

namespace ladder::trainer {
namespace {

std::string Check() {
  const char* dir = std::getenv("LADDER_BIN_DIR");
  return std::string(dir && *dir ? dir : LADDER_TEST_BIN_DIR) + "/ladder-mpi-reducer-check";
}

bool HaveMpirun() { return std::system("command -v mpirun > /dev/null 2>&1") == 0; }

void RunRanks(int ranks) {
  if (!HaveMpirun()) GTEST_SKIP() << "mpirun is not installed";
  testing::TempDir dir("mpi-reducer");
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 1);
  auto r = testing::RunCommand(
      {"/usr/bin/env", "mpirun", "-n", std::to_string(ranks), "--oversubscribe", Check()}, dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ok ranks=" + std::to_string(ranks)), std::string::npos) << r.out << r.err;
}

TEST(MpiReducer, TwoRanksGetBitwiseTheSumsOfRawMpiAllreduce) { RunRanks(2); }
TEST(MpiReducer, FourRanksGetBitwiseTheSumsOfRawMpiAllreduce) { RunRanks(4); }

}  // namespace
}  // namespace ladder::trainer
