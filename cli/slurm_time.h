#pragma once
// Slurm's job time limits as `sbatch --time` reads them, and the time-limit warning ladder asks for
// (--signal=B:USR1@LEAD): a warning no earlier than the job's start.
#include <optional>
#include <string>

namespace ladder::cli {

// Seconds of a --time value in Slurm's forms: MINUTES, MINUTES:SECONDS, HOURS:MINUTES:SECONDS, DAYS-HOURS,
// DAYS-HOURS:MINUTES, DAYS-HOURS:MINUTES:SECONDS; 0 for no limit (UNLIMITED, INFINITE, -1). nullopt (and *error
// saying why) for anything else.
std::optional<long> ParseSlurmTime(const std::string& text, std::string* error);

// Slurm keeps a time limit in whole minutes, rounded up (0:01:30 runs for 2:00).
long SlurmRoundedLimit(long seconds);

// H:MM:SS, or D-HH:MM:SS from a day on.
std::string FormatSlurmTime(long seconds);

// What `time` and a warning `lead_s` seconds before its end come to. ok: submit with `lead_s` (perhaps shortened,
// when the lead was ladder's default); otherwise `error` says why not. `notes`: what the user should hear (the
// rounding to whole minutes, a shortened lead), one per line.
struct TimeLimitCheck {
  bool ok = false;
  int lead_s = 0;
  std::string error, notes;
};
TimeLimitCheck CheckTimeLimit(const std::string& time, int lead_s, bool lead_given);

}  // namespace ladder::cli
