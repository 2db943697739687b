#pragma once
// The training loop of ladder-train: an MLP classifier trained by synchronous data-parallel mini-batch
// SGD/Adam/AdamW over `comm` (one process when comm.size() == 1).
//
// Data order (DistributedSampler semantics): every rank draws the same permutation per epoch, seeded by
// (seed, epoch); global batch k is positions [k·G, (k+1)·G) of it with G = batch_size × ranks, and rank r takes
// the positions r, r+ranks, ... of that batch. So N ranks × batch b follow exactly the trajectory of 1 rank ×
// batch N·b (up to floating-point summation order). With several ranks the epoch's incomplete last global batch
// is dropped. Parameters start from rank 0's (broadcast). Only rank 0 evaluates and prints metrics.
#include "trainer/args.h"
#include "trainer/comm/communicator.h"
#include "trainer/csv_dataset.h"
#include "trainer/metrics_writer.h"

namespace ladder::trainer {

struct TrainResult {
  int exit_code = 0;  // 0 done, 3 diverged
  double final_val_loss = 0, final_val_accuracy = 0;
  std::vector<double> train_losses;  // one per logged step, for tests
};

TrainResult Train(const TrainArgs& args, const Dataset& train, const Dataset& val, MetricsWriter& metrics,
                  comm::Communicator& comm);

}  // namespace ladder::trainer
