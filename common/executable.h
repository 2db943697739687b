#pragma once
// Finding a trial's program the way the worker will: a name with '/' is used as is; a bare name is looked up
// in `dirs` first (the directory holding ladder's own binaries, so `ladder-train` needs no PATH), then PATH.
#include <string>
#include <vector>

namespace ladder {
// Returns the path, or "" with *error naming the command and why it was not found.
std::string ResolveExecutable(const std::string& cmd, const std::vector<std::string>& dirs, std::string* error);
// The directory of the running executable.
std::string OwnBinDir();
// Runs `command` through /bin/sh and collects its standard output in `output`. Returns its exit status (128 + the
// signal when a signal ended it), or -1 when it could not be started.
int ShellOutput(const std::string& command, std::string* output);
}  // namespace ladder
