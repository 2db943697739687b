#pragma once
// A run's options for its parts, read from the command line (args.h): the optimizer's, the LR schedule's (a
// --warmup-fraction becomes steps of this run), the model's, and the device (--device).
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/args.h"
#include "trainer/csv_dataset.h"
#include "trainer/models.h"
#include "trainer/optim.h"
#include "trainer/schedule.h"

namespace ladder::trainer {

// `no_decay`: per parameter, true where weight decay does not apply (biases and norm parameters).
OptimizerOptions OptimizerOptionsFrom(const TrainArgs& a, std::vector<bool> no_decay);
ScheduleOptions ScheduleFrom(const TrainArgs& a, int64_t total_steps);
ModelOptions ModelOptionsFrom(const TrainArgs& a, const Dataset& d);
// --device: cuda:LOCAL_RANK (modulo the GPUs there are) when asked for or, with auto, when one is there.
bool PickDevice(const std::string& want, int local_rank, torch::Device* out, std::string* error);

}  // namespace ladder::trainer
