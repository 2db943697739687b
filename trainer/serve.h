#pragma once
// ladder-train --serve: many trainings from one process, for sweeps of short runs (bench/extrapolation) whose
// cost would otherwise be dominated by LibTorch's start-up (about 0.5 s: Debian's libtorch_cpu loads 285
// shared libraries). The server loads everything once and forks one child per run; a child is a fresh
// ladder-train in all but the loading, and a crash or an exit in one run cannot touch the next.
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace ladder::trainer {

// Reads requests from `in`, one per line: OUT<TAB>arg<TAB>arg... For each, forks a child whose stdout goes to
// OUT.out and stderr to OUT.err (both truncated), runs `run(args)` there and exits with its return value; the
// server waits for the child and writes its exit status to `reply` as one line ("0", "3", 128 + signal for a
// child killed by a signal; 1 when `run` threw), flushed, so that the client can read the files. A request it
// cannot carry out (no OUT, an output file it cannot open, fork or waitpid failing) is answered "2" with the
// reason on the server's stderr and in OUT.err when that opened. Empty lines are skipped. Returns 0 at the end
// of `in`. A child reads /dev/null, not the requests, and is killed when the server dies.
// The server itself must not have run LibTorch (no threads yet), so that every child starts single-threaded.
int Serve(std::FILE* in, std::FILE* reply, const std::function<int(const std::vector<std::string>&)>& run);

// Splits one request line at tabs (a trailing '\n' or "\r\n" dropped); a line of only whitespace gives none.
std::vector<std::string> SplitRequest(std::string line);

}  // namespace ladder::trainer
