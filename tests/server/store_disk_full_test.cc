// The store's flush on a real full disk: the database on a small tmpfs of its own (root only; skipped otherwise),
// filled up by another file. The commit that needs a new page fails with SQLITE_FULL, SQLite rolls the batch back,
// and Flush() says so (SqliteError) instead of passing an empty commit off as success; what was committed before
// is intact after a reopen, and nothing of the failed batch is.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "server/store/store.h"

namespace ladder::store {
namespace {

// A tmpfs of `kib` KiB at `dir`, unmounted and removed on destruction.
struct SmallFilesystem {
  std::filesystem::path dir;
  std::string why_not;  // empty when mounted
  explicit SmallFilesystem(int kib) {
    dir = std::filesystem::temp_directory_path() / ("ladder-store-full-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    const std::string opts = "size=" + std::to_string(kib) + "k";
    if (geteuid() != 0) {
      why_not = "mounting a small filesystem needs root";
    } else if (mount("ladder-test", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, opts.c_str()) != 0) {
      why_not = "mount -t tmpfs -o " + opts + " " + dir.string() + ": " + std::strerror(errno);
    }
  }
  ~SmallFilesystem() {
    if (why_not.empty()) umount2(dir.c_str(), MNT_DETACH);
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

// Appends to `path` until the filesystem has no room left.
void FillUp(const std::filesystem::path& path) {
  std::ofstream out(path, std::ios::binary | std::ios::app);
  const std::string block(4096, 'x');
  while (out.write(block.data(), static_cast<std::streamsize>(block.size()))) out.flush();
}

constexpr int kPointsPerBatch = 2000;

void AppendBatch(Store& st, int64_t trial_id, int batch) {
  for (int i = 0; i < kPointsPerBatch; ++i) {
    v1::MetricPoint p;
    p.set_step(static_cast<int64_t>(batch) * kPointsPerBatch + i);
    p.set_time_unix(1.7e9 + i);
    (*p.mutable_values())["loss"] = 1.0 / (i + 1);
    st.AppendMetrics(trial_id, p);
  }
}

TEST(StoreDiskFullTest, AFlushOnAFullDiskThrowsAndKeepsOnlyWhatWasCommitted) {
  SmallFilesystem fs(2048);
  if (!fs.why_not.empty()) GTEST_SKIP() << fs.why_not;
  const std::string db = (fs.dir / "ladder.db").string();
  int64_t trial_id = 0;
  int committed = 0;
  std::string error;
  {
    Store st(db);
    v1::Search s;
    s.set_name("full");
    s.set_state(v1::SEARCH_RUNNING);
    s.set_spec_yaml("name: full");
    s.set_objective_metric("loss");
    s.set_direction(v1::MINIMIZE);
    st.InsertSearch(&s);
    v1::Trial t;
    t.set_search_id(s.id());
    t.set_state(v1::TRIAL_RUNNING);
    st.InsertTrial(&t);
    trial_id = t.id();
    AppendBatch(st, trial_id, committed);
    st.Flush();
    ++committed;
    FillUp(fs.dir / "filler");
    // Batches until one no longer fits: its commit (or a write that spills the page cache) fails.
    for (int batch = committed; batch < 50 && error.empty(); ++batch) {
      try {
        AppendBatch(st, trial_id, batch);
        st.Flush();
        ++committed;
      } catch (const SqliteError& e) {
        error = e.what();
      }
    }
    ASSERT_FALSE(error.empty()) << "50 batches fitted on a full filesystem";
    // A second flush does not pass the lost batch off as committed either.
    EXPECT_THROW(
        {
          st.Flush();
          st.Flush();
        },
        SqliteError);
    st.Abandon();
  }
  EXPECT_TRUE(error.find("full") != std::string::npos || error.find("rolled back") != std::string::npos) << error;
  std::filesystem::remove(fs.dir / "filler");
  Store st(db);
  EXPECT_EQ(st.LoadMetrics(trial_id).size(), static_cast<size_t>(committed) * kPointsPerBatch)
      << "every committed batch, nothing of the failed one";
  EXPECT_FALSE(st.IntegrityProblem()) << *st.IntegrityProblem();
}

}  // namespace
}  // namespace ladder::store
