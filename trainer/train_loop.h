#pragma once
// The training loop of ladder-train: an MLP classifier trained by mini-batch SGD/Adam/AdamW on one process.
// Per-epoch shuffling is seeded by (seed, epoch), so a run is reproducible bit for bit on the same machine.
#include "trainer/args.h"
#include "trainer/csv_dataset.h"
#include "trainer/metrics_writer.h"

namespace ladder::trainer {

struct TrainResult {
  int exit_code = 0;  // 0 done, 3 diverged
  double final_val_loss = 0, final_val_accuracy = 0;
  std::vector<double> train_losses;  // one per logged step, for tests
};

TrainResult Train(const TrainArgs& args, const Dataset& train, const Dataset& val, MetricsWriter& metrics);

}  // namespace ladder::trainer
