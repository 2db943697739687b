#include "trainer/serve.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

namespace ladder::trainer {

std::vector<std::string> SplitRequest(std::string line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  if (line.find_first_not_of(" \t") == std::string::npos) return {};
  std::vector<std::string> fields;
  size_t start = 0;
  for (size_t tab; (tab = line.find('\t', start)) != std::string::npos; start = tab + 1) {
    fields.push_back(line.substr(start, tab - start));
  }
  fields.push_back(line.substr(start));
  return fields;
}

namespace {

std::string ReadLine(std::FILE* in, bool* eof) {
  std::string line;
  for (int c; (c = std::fgetc(in)) != EOF;) {
    if (c == '\n') return line;
    line.push_back(static_cast<char>(c));
  }
  *eof = true;
  return line;
}

void Answer(std::FILE* reply, int code) {
  std::fprintf(reply, "%d\n", code);
  std::fflush(reply);
}

// Runs one request in a forked child; returns its exit status (or 2 when it could not be started).
int RunOne(const std::vector<std::string>& fields, const std::function<int(const std::vector<std::string>&)>& run) {
  const std::string& out = fields[0];
  int err_fd = -1, out_fd = -1;
  // Says why on the server's stderr and in OUT.err (when open), closes the files, answers 2.
  auto fail = [&](const std::string& why) {
    const std::string msg = "ladder-train --serve: " + why + "\n";
    std::fputs(msg.c_str(), stderr);
    if (err_fd >= 0) {
      if (::write(err_fd, msg.data(), msg.size()) < 0) { /* nowhere else to say it */ }
      ::close(err_fd);
    }
    if (out_fd >= 0) ::close(out_fd);
    return 2;
  };
  if (out.empty()) return fail("a request's first field (the output path) is empty");
  err_fd = ::open((out + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  out_fd = ::open((out + ".out").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (err_fd < 0 || out_fd < 0) {
    return fail("cannot open " + out + (out_fd < 0 ? ".out" : ".err") + ": " + std::strerror(errno));
  }
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t server = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) return fail(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    // A run does not outlive its server (whose client may already be removing the run's files), reads nothing
    // of the requests, and ends here whatever `run` does.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != server) ::_exit(128 + SIGKILL);
    if (int null_fd = ::open("/dev/null", O_RDONLY); null_fd >= 0) ::dup2(null_fd, 0);
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    int code = 1;
    try {
      code = run(std::vector<std::string>(fields.begin() + 1, fields.end()));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ladder-train --serve: the run threw: %s\n", e.what());
    } catch (...) {
      std::fprintf(stderr, "ladder-train --serve: the run threw\n");
    }
    std::fflush(stdout);
    std::fflush(stderr);
    ::_exit(code);
  }
  ::close(out_fd);
  out_fd = -1;
  int status = 0;
  pid_t done;
  while ((done = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (done != pid) return fail("waitpid: " + std::string(std::strerror(errno)) + " (the run's outcome is unknown)");
  ::close(err_fd);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

int Serve(std::FILE* in, std::FILE* reply, const std::function<int(const std::vector<std::string>&)>& run) {
  std::signal(SIGCHLD, SIG_DFL);  // an inherited "ignore" would reap the runs before waitpid sees how they ended
  for (bool eof = false; !eof;) {
    auto fields = SplitRequest(ReadLine(in, &eof));
    if (fields.empty()) continue;
    Answer(reply, RunOne(fields, run));
  }
  return 0;
}

}  // namespace ladder::trainer
