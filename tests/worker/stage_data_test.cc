// Staging an archive (extract: true; worker/stage.h): unpacked once per node and reused while it is unchanged, its
// entries kept inside the directory, a delivery by sbcast unpacked only when its CRC-32 matches, a node too small
// named with the sizes, the ranks of a node taking turns.
#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "tests/support/process.h"
#include "worker/stage.h"

namespace ladder::worker {
namespace {

namespace fs = std::filesystem;

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void SetMtime(const fs::path& path, time_t mtime) {
  struct timespec t[2] = {{mtime, 0}, {mtime, 0}};
  ::utimensat(AT_FDCWD, path.c_str(), t, 0);
}

// An archive of `entries` (a name ending in '/' is a directory; "@link" a symbolic link named by the content),
// gzip'd when the name ends in .gz.
void MakeArchive(const fs::path& path, const std::vector<std::pair<std::string, std::string>>& entries,
                 time_t mtime = 1700000000) {
  struct archive* a = archive_write_new();
  if (path.extension() == ".gz") archive_write_add_filter_gzip(a);
  archive_write_set_format_pax_restricted(a);
  ASSERT_EQ(archive_write_open_filename(a, path.c_str()), ARCHIVE_OK) << archive_error_string(a);
  for (const auto& [name, content] : entries) {
    struct archive_entry* e = archive_entry_new();
    if (name == "@link") {
      archive_entry_set_pathname(e, content.c_str());
      archive_entry_set_filetype(e, AE_IFLNK);
      archive_entry_set_symlink(e, "/etc/passwd");
    } else if (name.back() == '/') {
      archive_entry_set_pathname(e, name.c_str());
      archive_entry_set_filetype(e, AE_IFDIR);
      archive_entry_set_perm(e, 0755);
    } else {
      archive_entry_set_pathname(e, name.c_str());
      archive_entry_set_filetype(e, AE_IFREG);
      archive_entry_set_perm(e, 0644);
      archive_entry_set_size(e, static_cast<la_int64_t>(content.size()));
    }
    ASSERT_EQ(archive_write_header(a, e), ARCHIVE_OK) << archive_error_string(a);
    if (name != "@link" && name.back() != '/') archive_write_data(a, content.data(), content.size());
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
  SetMtime(path, mtime);
}

// The regular files under `dir`, relative, with their contents.
std::map<std::string, std::string> Tree(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) out[fs::relative(e.path(), dir).string()] = Slurp(e.path());
  }
  return out;
}

class StageArchiveTest : public ::testing::Test {
 protected:
  testing::TempDir dir_{"stage-archive"};
  std::string archive_ = (dir_ / "shared" / "data.tar.gz").string();
  std::string local_ = (dir_ / "local").string();
  StageOptions opt_{"n7", nullptr};
  void SetUp() override { fs::create_directories(dir_ / "shared"); }
  std::string Extract(std::string* note) { return EnsureExtracted(archive_, local_, opt_, note); }
};

TEST_F(StageArchiveTest, UnpacksOnceAndReusesWhileTheArchiveIsUnchanged) {
  MakeArchive(archive_, {{"./data/", ""}, {"./data/a.txt", "alpha"}, {"data/sub/b.bin", std::string(3 << 20, 'b')},
                         {"top.csv", "x,y\n"}});
  std::string note;
  ASSERT_EQ(Extract(&note), "");
  EXPECT_NE(note.find(local_ + "/data/: extracted from " + archive_ + " (3 files"), std::string::npos) << note;
  const std::map<std::string, std::string> want = {
      {"data/a.txt", "alpha"}, {"data/sub/b.bin", std::string(3 << 20, 'b')}, {"top.csv", "x,y\n"}};
  EXPECT_EQ(Tree(local_ + "/data"), want);
  ASSERT_EQ(Extract(&note), "");
  EXPECT_NE(note.find("reused (3 files"), std::string::npos) << note;
  // Reuse reads nothing of the archive (a stat): rewritten as garbage of the same size and mtime, it still reuses.
  const auto size = fs::file_size(archive_);
  std::ofstream(archive_, std::ios::binary | std::ios::trunc) << std::string(size, '?');
  SetMtime(archive_, 1700000000);
  ASSERT_EQ(Extract(&note), "");
  EXPECT_NE(note.find("reused (3 files"), std::string::npos) << note;
  MakeArchive(archive_, {{"./data/", ""}, {"./data/a.txt", "alpha"}, {"data/sub/b.bin", std::string(3 << 20, 'b')},
                         {"top.csv", "x,y\n"}});
  // A file of the node's copy lost: the count no longer matches, so it is unpacked again.
  fs::remove(local_ + "/data/top.csv");
  ASSERT_EQ(Extract(&note), "");
  EXPECT_NE(note.find("extracted from"), std::string::npos) << note;
  EXPECT_EQ(Tree(local_ + "/data"), want);
  // A new version of the archive (its mtime moved) replaces the old content entirely.
  MakeArchive(archive_, {{"only.txt", "new"}}, 1700000100);
  ASSERT_EQ(Extract(&note), "");
  EXPECT_NE(note.find("extracted from"), std::string::npos) << note;
  EXPECT_EQ(Tree(local_ + "/data"), (std::map<std::string, std::string>{{"only.txt", "new"}}));
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(local_)) names.insert(e.path().filename().string());
  EXPECT_EQ(names, (std::set<std::string>{".data.ladder-stage", ".data.lock", "data"})) << "no temporary left";
}

TEST_F(StageArchiveTest, AnEntryOutsideTheDirectoryOrALinkIsRefusedAndNothingIsLeft) {
  const std::vector<std::pair<std::vector<std::pair<std::string, std::string>>, std::string>> cases = {
      {{{"ok.txt", "1"}, {"../escape.txt", "x"}}, "entry '../escape.txt' climbs out of the directory"},
      {{{"/abs.txt", "x"}}, "has an absolute path"},
      {{{"ok.txt", "1"}, {"@link", "passwd"}}, "entry 'passwd' is a symbolic link"},
  };
  for (const auto& [entries, want] : cases) {
    MakeArchive(archive_, entries);
    std::string note;
    const std::string error = Extract(&note);
    EXPECT_NE(error.find(want), std::string::npos) << error;
    EXPECT_FALSE(fs::exists(local_ + "/data")) << want;
    EXPECT_FALSE(fs::exists(dir_ / "escape.txt"));
    for (const auto& e : fs::directory_iterator(local_)) {
      EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
    }
  }
  // A directory, not an archive.
  fs::remove(archive_);
  fs::create_directories(archive_);
  std::string dir_note;
  EXPECT_NE(Extract(&dir_note).find(archive_ + ": not a regular file"), std::string::npos);
  fs::remove(archive_);
  // Not an archive at all.
  std::ofstream(archive_, std::ios::trunc) << "this is not gzip";
  std::string note;
  EXPECT_NE(Extract(&note).find("cannot read " + archive_ + " as an archive"), std::string::npos);
}

TEST_F(StageArchiveTest, ANodeTooSmallIsNamedWithTheSizes) {
  MakeArchive(archive_, {{"a.bin", std::string(1 << 20, 'a')}, {"b.bin", std::string(2 << 20, 'b')}});
  opt_.free_bytes = [](const std::string&) { return std::optional<uint64_t>(2 << 20); };
  std::string note;
  const std::string error = Extract(&note);
  EXPECT_NE(error.find("not enough space to extract data.tar.gz into " + local_ + " on node n7: its files need "
                       "more than 3.0 MiB (1.0 MiB extracted, then 'b.bin' of 2.0 MiB), 2.0 MiB free"),
            std::string::npos)
      << error;
  EXPECT_FALSE(fs::exists(local_ + "/data"));
}

TEST_F(StageArchiveTest, AnSbcastDeliveryIsUnpackedOnlyWhenItsCrcMatches) {
  MakeArchive(archive_, {{"a.txt", "from the shared file"}});
  uint64_t size = 0;
  int64_t mtime = 0;
  ASSERT_TRUE(StatFile(archive_, &size, &mtime));
  std::string error;
  const auto crc = FileCrc32(archive_, &size, &error);
  ASSERT_TRUE(crc) << error;
  fs::create_directories(local_);
  // A damaged delivery (another archive under the manifest of the source): unpacked, found wrong, replaced.
  MakeArchive(local_ + "/.data.tar.gz.sbcast", {{"a.txt", "damaged on the way!"}});
  std::ofstream(local_ + "/.data.tar.gz.sbcast.json") << StageManifest(archive_, size, mtime, *crc);
  std::string note;
  ASSERT_EQ(Extract(&note), "");
  EXPECT_NE(note.find("extracted from " + archive_), std::string::npos) << note;
  EXPECT_EQ(Slurp(local_ + "/data/a.txt"), "from the shared file");
  EXPECT_FALSE(fs::exists(local_ + "/.data.tar.gz.sbcast"));
  // A good delivery of a new version: the node unpacks it and never reads the shared file.
  MakeArchive(archive_, {{"a.txt", "version 2"}}, 1700000300);
  ASSERT_TRUE(StatFile(archive_, &size, &mtime));
  fs::copy_file(archive_, local_ + "/.data.tar.gz.sbcast");
  const auto crc2 = FileCrc32(archive_, &size, &error);
  std::ofstream(local_ + "/.data.tar.gz.sbcast.json") << StageManifest(archive_, size, mtime, *crc2);
  ASSERT_EQ(Extract(&note), "");
  EXPECT_NE(note.find("extracted from the sbcast delivery of data.tar.gz"), std::string::npos) << note;
  EXPECT_EQ(Slurp(local_ + "/data/a.txt"), "version 2");
}

TEST_F(StageArchiveTest, TheRanksOfANodeTakeTurnsAndOneUnpacks) {
  std::vector<std::pair<std::string, std::string>> entries;
  for (int i = 0; i < 200; ++i) entries.emplace_back("f/" + std::to_string(i), std::string(1000 + i, 'q'));
  MakeArchive(archive_, entries);
  std::vector<std::string> notes(4), errors(4);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 4; ++r) ranks.emplace_back([&, r] { errors[r] = Extract(&notes[r]); });
  for (auto& t : ranks) t.join();
  int extracted = 0, reused = 0;
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(errors[r], "") << r;
    extracted += notes[r].find("extracted from") != std::string::npos;
    reused += notes[r].find("reused (200 files") != std::string::npos;
  }
  EXPECT_EQ(extracted, 1);
  EXPECT_EQ(reused, 3);
}

}  // namespace
}  // namespace ladder::worker
