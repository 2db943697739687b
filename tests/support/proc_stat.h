#pragma once
// A process's /proc/PID/stat: its state, parent and process group (tests that check how a trial was started).
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace ladder::testing {

struct ProcStat {
  char state = '?';  // '?' when the process is gone
  int ppid = 0, pgrp = 0;
};

inline ProcStat ReadProcStat(int pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ProcStat s;
  const auto close_paren = all.rfind(')');  // the command name may hold spaces and parentheses
  if (close_paren == std::string::npos) return s;
  std::istringstream rest(all.substr(close_paren + 2));
  rest >> s.state >> s.ppid >> s.pgrp;
  return s;
}

}  // namespace ladder::testing
