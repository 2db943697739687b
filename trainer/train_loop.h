#pragma once
// The training loop of ladder-train: a network (models.h) trained on a task (task.h) by synchronous
// data-parallel mini-batch SGD/Adam/AdamW/LARS/LARC/LAMB over `comm` (one process when comm.size() == 1).
//
// Data order (DistributedSampler semantics): every rank draws the same permutation per epoch, seeded by
// (seed, epoch); global batch k is positions [k·G, (k+1)·G) of it with G = batch_size × ranks, and rank r takes
// the positions r, r+ranks, ... of that batch. So N ranks × batch b follow exactly the trajectory of 1 rank ×
// batch N·b (up to floating-point summation order). With several ranks the epoch's incomplete last global batch
// is dropped. A sharded training set (Dataset::shard_world > 1: HDF5 at several ranks, hdf5_shard.h) holds only
// this rank's rows, as many on every rank: each rank walks its own SampleStream over them and takes the next
// global/world samples per step (every rank the same permutation of positions, over different rows). Batches are assembled ahead on a background thread (batch_prefetcher.h). Parameters and buffers
// start from rank 0's (broadcast); gradients are averaged by the bucketed, overlapped allreduce of grad_reducer.h. Only
// rank 0 evaluates and prints metrics; after each evaluation every rank sends it its own step time (one small
// allreduce, called by every rank at the same point) for the line's step_time_s/rankR fields.
#include "trainer/args.h"
#include "trainer/comm/communicator.h"
#include "trainer/csv_dataset.h"
#include "trainer/metrics_writer.h"

namespace ladder::trainer {

struct TrainResult {
  int exit_code = 0;  // 0 done, 1 runtime failure (checkpoint), 2 bad arguments for this data, 3 diverged,
                      // 128 + signal: stopped by SIGTERM/SIGUSR1 after saving the checkpoint (stop_request.h)
  double final_val_loss = 0, final_val_accuracy = 0;
  std::vector<double> train_losses;  // one per logged step, for tests
};

TrainResult Train(const TrainArgs& args, const Dataset& train, const Dataset& val, MetricsWriter& metrics,
                  comm::Communicator& comm);

}  // namespace ladder::trainer
