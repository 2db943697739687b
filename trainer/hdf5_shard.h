#pragma once
// --data hdf5:... in ladder-train: each rank reads its own rows after the ranks have met (hdf5_dataset.h
// ReadHdf5Shard: rank r its block of the training rows, rank 0 also the validation rows), and the ranks agree on
// what the others read, with collectives every rank calls in the same order:
//   - when one rank could not read, every rank fails (each says why, or that another rank could not read);
//   - the classes are the largest over the ranks' labels, and segmentation's --class-weights auto is computed from
//     every rank's label counts (task.h ClassWeights' formula), handed back as the explicit list;
//   - at several ranks the standardization uses the training rows of every rank (their per-feature or
//     per-channel sums, allreduced); at one rank it is Standardize's, so that the run is exactly the one the same
//     rows from a CSV file give (SplitDataset, Standardize).
// Each rank says on stderr how many bytes of the file it read.
#include <string>

#include "trainer/args.h"
#include "trainer/comm/communicator.h"
#include "trainer/csv_dataset.h"

namespace ladder::trainer {

bool IsHdf5Data(const std::string& spec);  // "hdf5:..."

// The rows of `args.data` (hdf5:...) for this rank of `comm`, with --input-shape applied and standardized.
// False with *error (on every rank). `class_weights` (optional) gets the --class-weights to train with: at several
// ranks "auto" for segmentation becomes the list every rank's labels give, else args.class_weights.
bool LoadHdf5ForRank(const TrainArgs& args, comm::Communicator& comm, Dataset* train, Dataset* val,
                     std::string* error, std::string* class_weights = nullptr);

}  // namespace ladder::trainer
