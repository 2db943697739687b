#include "cli/slurm_time.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <vector>

namespace ladder::cli {

namespace {

// The numbers of `text` between `sep`; nullopt when a part is not a plain non-negative number.
std::optional<std::vector<long>> Numbers(const std::string& text, char sep) {
  std::vector<long> out;
  size_t start = 0;
  for (;;) {
    const size_t end = text.find(sep, start);
    const std::string part = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (part.empty() || part.size() > 9 ||
        !std::all_of(part.begin(), part.end(), [](unsigned char c) { return std::isdigit(c); })) {
      return std::nullopt;
    }
    out.push_back(std::stol(part));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

}  // namespace

std::optional<long> ParseSlurmTime(const std::string& text, std::string* error) {
  std::string upper;
  for (char c : text) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper == "UNLIMITED" || upper == "INFINITE" || upper == "-1") return 0;
  const auto bad = [&] {
    *error = "'" + text + "' is not a Slurm time limit (MINUTES, MINUTES:SECONDS, HOURS:MINUTES:SECONDS, DAYS-HOURS, "
             "DAYS-HOURS:MINUTES or DAYS-HOURS:MINUTES:SECONDS)";
    return std::nullopt;
  };
  const size_t dash = text.find('-');
  if (dash != std::string::npos) {  // DAYS-HOURS[:MINUTES[:SECONDS]]
    auto days = Numbers(text.substr(0, dash), ':');
    auto rest = Numbers(text.substr(dash + 1), ':');
    if (!days || days->size() != 1 || !rest || rest->size() > 3) return bad();
    rest->resize(3, 0);
    return (*days)[0] * 86400 + (*rest)[0] * 3600 + (*rest)[1] * 60 + (*rest)[2];
  }
  auto parts = Numbers(text, ':');
  if (!parts || parts->size() > 3) return bad();
  const auto& p = *parts;
  if (p.size() == 1) return p[0] * 60;
  if (p.size() == 2) return p[0] * 60 + p[1];
  return p[0] * 3600 + p[1] * 60 + p[2];
}

long SlurmRoundedLimit(long seconds) { return (seconds + 59) / 60 * 60; }

std::string FormatSlurmTime(long seconds) {
  char buf[48];
  const long d = seconds / 86400, h = seconds / 3600 % 24, m = seconds / 60 % 60, s = seconds % 60;
  if (d > 0) {
    std::snprintf(buf, sizeof buf, "%ld-%02ld:%02ld:%02ld", d, h, m, s);
  } else {
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", h, m, s);
  }
  return buf;
}

TimeLimitCheck CheckTimeLimit(const std::string& time, int lead_s, bool lead_given) {
  TimeLimitCheck c;
  c.lead_s = lead_s;
  const auto seconds = ParseSlurmTime(time, &c.error);
  if (!seconds) {
    c.error = "--time " + c.error;
    return c;
  }
  if (*seconds == 0) {  // no time limit: the warning never comes, whatever its lead
    c.ok = true;
    return c;
  }
  const long limit = SlurmRoundedLimit(*seconds);
  if (limit != *seconds) {
    c.notes += "note: Slurm rounds time limits up to whole minutes: --time " + time + " runs for " +
               FormatSlurmTime(limit) + "\n";
  }
  if (lead_s < limit) {
    c.ok = true;
    return c;
  }
  const std::string why = "a warning " + std::to_string(lead_s) + " s before the end of a job of " +
                          FormatSlurmTime(limit) + " would come at its start, and the job would checkpoint and "
                          "resubmit itself before any work";
  if (lead_given) {
    c.error = "--signal-lead " + std::to_string(lead_s) + ": " + why + "; give a --signal-lead shorter than the time "
              "limit, or a longer --time";
    return c;
  }
  c.lead_s = static_cast<int>(limit / 2);
  c.notes += "note: the default --signal-lead " + std::to_string(lead_s) + " s is not shorter than the time limit (" +
             why + "): the warning comes " + std::to_string(c.lead_s) + " s before the end instead (--signal-lead "
             "sets it)\n";
  c.ok = true;
  return c;
}

}  // namespace ladder::cli
