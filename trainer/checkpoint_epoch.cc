#include "trainer/checkpoint_epoch.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ladder::trainer {

namespace {

std::string DirOf(const std::string& path) {
  const std::filesystem::path p(path);
  return p.has_parent_path() ? p.parent_path().string() : ".";
}

// Writes `text` to `path` atomically: a temp file beside it, fsync, rename.
bool WriteAtomically(const std::string& path, const std::string& text, std::string* error) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  bool ok = fd >= 0 && write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && fsync(fd) == 0;
  const int err = errno;
  if (fd >= 0 && close(fd) != 0) ok = false;
  if (ok && rename(tmp.c_str(), path.c_str()) == 0) return true;
  *error = "cannot write '" + path + "': " + std::strerror(ok ? errno : err);
  unlink(tmp.c_str());
  return false;
}

}  // namespace

int64_t RunEpochFromEnvironment(std::string* error) {
  const char* e = std::getenv("LADDER_ASSIGNMENT_EPOCH");
  if (!e || !*e) return 0;
  char* end = nullptr;
  errno = 0;
  const long long epoch = std::strtoll(e, &end, 10);
  if (*end != '\0' || epoch < 0 || errno != 0) {
    *error = "LADDER_ASSIGNMENT_EPOCH='" + std::string(e).substr(0, 40) + "' is not an assignment epoch";
    return -1;
  }
  return epoch;
}

std::string CheckpointEpochPath(const std::string& path) { return path + ".epoch"; }

int64_t RecordedCheckpointEpoch(const std::string& path, std::string* error) {
  const std::string file = CheckpointEpochPath(path);
  std::ifstream in(file);
  if (!in) return 0;
  std::stringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  int64_t epoch = 0;
  size_t used = 0;
  try {
    epoch = std::stoll(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (s.empty() || used != s.size() || epoch < 0) {
    *error = "cannot read the run epoch in '" + file + "': '" + s.substr(0, 40) + "' is not an epoch";
    return -1;
  }
  return epoch;
}

bool ReplaceCheckpoint(const std::string& tmp, const std::string& path, int64_t run_epoch, std::string* error) {
  const std::string dir = DirOf(path);
  const int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  auto fail = [&](const std::string& why) {
    *error = why;
    unlink(tmp.c_str());
    if (dfd >= 0) close(dfd);  // releases the lock
    return false;
  };
  if (dfd < 0) return fail("cannot open the checkpoint directory '" + dir + "': " + std::strerror(errno));
  if (run_epoch > 0) {
    // Two runs of one trial may save at once (on two nodes): the check and the rename are one step for each.
    int rc;
    while ((rc = flock(dfd, LOCK_EX)) != 0 && errno == EINTR) {
    }
    if (rc != 0) return fail("cannot lock the checkpoint directory '" + dir + "': " + std::strerror(errno));
    std::string why;
    const int64_t recorded = RecordedCheckpointEpoch(path, &why);
    if (recorded < 0) return fail(why);
    if (recorded > run_epoch) {
      return fail("checkpoint '" + path + "' was saved by a newer run of this trial (assignment epoch " +
                  std::to_string(recorded) + "; this run's is " + std::to_string(run_epoch) +
                  ", LADDER_ASSIGNMENT_EPOCH): not replaced");
    }
    if (recorded < run_epoch && !WriteAtomically(CheckpointEpochPath(path), std::to_string(run_epoch) + "\n", &why)) {
      return fail(why);
    }
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    return fail("cannot write checkpoint '" + path + "': " + std::strerror(errno));
  }
  fsync(dfd);  // the renames are durable once the directory is synced too
  close(dfd);
  return true;
}

}  // namespace ladder::trainer
