#pragma once
// HeroBand: a hero run's predicted validation-loss band (ladder promote's plan, stored with the search) and the
// rule that watches a run against it. A value type: no I/O; the search acts on its verdicts.
//
// The band is read as common/loss_band.h reads it (ladder search show says where a run stands the same way).
// A run is judged from the band's first step on, by its val_loss. Only a change is reported: leaving the band,
// or coming back inside it (once each, per trial). With stop_outside_band (ladder promote --stop-outside-band)
// a run that leaves it above the band (worse than predicted) is to be stopped; one below it is only noted.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/loss_band.h"
#include "ladder/v1/ladder.pb.h"

namespace ladder::server {

class HeroBand {
 public:
  struct Verdict {
    bool outside = false;  // the run left the band (else it came back inside)
    bool stop = false;     // stop the run: above the band, and the plan says to stop
    std::string message;   // "val_loss 0.52 at step 300 is above the predicted band [0.3, 0.4]"
  };

  // Reads the plan's "loss_band" and "stop_outside_band"; an error names the problem (the band is then empty).
  std::string Load(const std::string& plan_json);
  bool empty() const { return band_.empty(); }
  // Judges the trial's point; nullopt when nothing changed (or the point says nothing about the band).
  std::optional<Verdict> Check(int64_t trial_id, const v1::MetricPoint& point);

 private:
  LossBand band_;
  std::map<int64_t, bool> outside_;  // by trial: outside the band at its last judged point
};

}  // namespace ladder::server
