// The coordinator's lease on its database, in the store (server/store/store_lease.cc): who is refused, what is taken
// over and said, and a lease lost between batches or outlived inside one.
#include "server/store/store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <thread>

#include "common/wall_clock.h"

namespace ladder::store {
namespace {

using std::chrono::milliseconds;

class StoreLeaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ladder-store-lease-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "ladder.db").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  // Writes the lease row as another coordinator would have: `host`, `pid`, its heartbeat `age_s` ago.
  void WriteHolder(const std::string& host, int64_t pid, double age_s, double timeout_s) {
    Store st(path_);  // migrated
    Db raw(path_, false);
    auto& ins = raw.Prepare(
        "INSERT OR REPLACE INTO coordinator_lease(id, holder, host, pid, started_at, heartbeat_at, timeout_s) "
        "VALUES(1, 'other', ?, ?, ?, ?, ?)");
    ins.Bind(1, host).Bind(2, pid).Bind(3, WallNow() - 100).Bind(4, WallNow() - age_s).Bind(5, timeout_s);
    ins.Run();
  }
  static std::string ThisHost() {
    char name[HOST_NAME_MAX + 1] = {};
    ::gethostname(name, sizeof name - 1);
    return name;
  }
  static v1::Search Search() {
    v1::Search s;
    s.set_name("s");
    s.set_spec_yaml("name: s\n");
    s.mutable_group()->set_nodes(1);
    return s;
  }
  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(StoreLeaseTest, ALiveHolderIsRefusedNamingItsHostPidAndTheWait) {
  // pid 1 is alive on this host; on another host the pid is not looked at.
  for (const std::string host : {ThisHost(), std::string("login7")}) {
    WriteHolder(host, 1, 2, 30);
    Store st(path_);
    try {
      st.TakeLease(milliseconds(30000));
      FAIL() << "a live holder's lease was taken (" << host << ")";
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("the database " + path_ + " is held by the coordinator on host " + host + ", pid 1, since "),
                std::string::npos)
          << what;
      EXPECT_NE(what.find(" (heartbeat 2"), std::string::npos) << what;  // 2 s and what this test took
      EXPECT_NE(what.find("stop it first, or wait 2"), std::string::npos) << what;  // 28 s, less what it took
      EXPECT_NE(what.find(" s for its lease to expire if it crashed"), std::string::npos) << what;
    }
    EXPECT_FALSE(st.holds_lease());
  }
}

TEST_F(StoreLeaseTest, AStaleLeaseIsTakenOverAndTheRowIsOurs) {
  WriteHolder("login7", 1, 31, 30);
  Store st(path_);
  st.TakeLease(milliseconds(30000));
  EXPECT_TRUE(st.holds_lease());
  Db raw(path_, false);
  auto& row = raw.Prepare("SELECT host, pid, timeout_s FROM coordinator_lease");
  ASSERT_TRUE(row.Step());
  EXPECT_EQ(row.Text(0), ThisHost());
  EXPECT_EQ(row.Int(1), ::getpid());
  EXPECT_EQ(row.Real(2), 30.0);
}

TEST_F(StoreLeaseTest, ACoordinatorWhoseLeaseWasTakenBetweenBatchesStopsAtItsNextWrite) {
  Store first(path_);
  first.TakeLease(milliseconds(30000));
  auto s = Search();
  first.InsertSearch(&s);
  first.Flush();
  {
    Store second(path_);  // of this process: the first's lease is taken over at once (the file lock keeps them apart)
    second.TakeLease(milliseconds(30000));
  }
  EXPECT_THROW(
      {
        try {
          first.InsertSearch(&s);
        } catch (const LeaseLost& e) {
          EXPECT_NE(std::string(e.what()).find("is held by the coordinator on host " + ThisHost() + ", pid " +
                                                std::to_string(::getpid()) + ", since "),
                    std::string::npos)
              << e.what();
          throw;
        }
      },
      LeaseLost);
  EXPECT_FALSE(first.holds_lease());
  first.Abandon();
  Db raw(path_, false);
  auto& n = raw.Prepare("SELECT COUNT(*) FROM searches");
  ASSERT_TRUE(n.Step());
  EXPECT_EQ(n.Int(0), 1) << "the write after the lease was lost was stored";
}

TEST_F(StoreLeaseTest, ABatchHeldUpPastHalfTheLeaseIsNotCommitted) {
  Store st(path_);
  st.TakeLease(milliseconds(200));
  auto s = Search();
  st.InsertSearch(&s);
  std::this_thread::sleep_for(milliseconds(150));  // the time itself is what is tested: past half of 200 ms
  EXPECT_THROW(st.Flush(), LeaseLost);
  st.Abandon();
  Db raw(path_, false);
  auto& n = raw.Prepare("SELECT COUNT(*) FROM searches");
  ASSERT_TRUE(n.Step());
  EXPECT_EQ(n.Int(0), 0);
}

TEST_F(StoreLeaseTest, ACleanReleaseLeavesNoRowAndAReadOnlyOpenTakesNone) {
  {
    Store st(path_);
    st.TakeLease(milliseconds(30000));
    st.ReleaseLease();
    EXPECT_FALSE(st.holds_lease());
  }
  Store ro(path_, OpenMode::kReadOnly);
  EXPECT_FALSE(ro.holds_lease());
  Db raw(path_, false);
  auto& n = raw.Prepare("SELECT COUNT(*) FROM coordinator_lease");
  ASSERT_TRUE(n.Step());
  EXPECT_EQ(n.Int(0), 0);
}

}  // namespace
}  // namespace ladder::store
