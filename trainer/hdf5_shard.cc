#include "trainer/hdf5_shard.h"

#include <cmath>
#include <cstdio>

#include "trainer/hdf5_dataset.h"

namespace ladder::trainer {

namespace {

constexpr uint64_t kSplitSeed = 20261122;  // main.cc's split seed: the same split as every other source

// Where the collectives' tensors live: CUDA for nccl, else the CPU.
torch::Device CollectiveDevice(comm::Communicator& comm) {
  if (comm.backend().rfind("nccl", 0) != 0) return torch::kCPU;
  const auto n = static_cast<int>(torch::cuda::device_count());
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(comm.local_rank() % std::max(1, n)));
}

// `values` summed over the ranks (float64).
std::vector<double> SumOverRanks(comm::Communicator& comm, const std::vector<double>& values) {
  auto t = torch::tensor(values, torch::kFloat64).to(CollectiveDevice(comm));
  comm.AllreduceSum(t)->Wait();
  const auto back = t.to(torch::kCPU).contiguous();
  return std::vector<double>(back.data_ptr<double>(), back.data_ptr<double>() + back.numel());
}

// Standardize's transform with the statistics of every rank's training rows: per channel for images and
// volumes, per feature for vectors.
void StandardizeOverRanks(comm::Communicator& comm, Dataset* train, Dataset* val) {
  const bool channels = train->shape.size() >= 3;
  const auto groups = static_cast<size_t>(channels ? train->shape[0] : train->features);
  const auto per_group = static_cast<size_t>(train->features) / groups;
  std::vector<double> sums(2 * groups + 1, 0);
  for (size_t r = 0; r < static_cast<size_t>(train->rows); ++r) {
    for (size_t g = 0; g < groups; ++g) {
      for (size_t j = 0; j < per_group; ++j) {
        const double v = channels ? train->x[(r * groups + g) * per_group + j] : train->x[r * groups + g];
        sums[g] += v;
        sums[groups + g] += v * v;
      }
    }
  }
  sums[2 * groups] = static_cast<double>(train->rows * static_cast<int64_t>(per_group));
  sums = SumOverRanks(comm, sums);
  const double n = std::max(1.0, sums[2 * groups]);
  for (Dataset* d : {train, val}) {
    for (size_t r = 0; r < static_cast<size_t>(d->rows); ++r) {
      for (size_t g = 0; g < groups; ++g) {
        const double mean = sums[g] / n, sd = std::sqrt(std::max(0.0, sums[groups + g] / n - mean * mean));
        for (size_t j = 0; j < per_group; ++j) {
          float& x = channels ? d->x[(r * groups + g) * per_group + j] : d->x[r * groups + g];
          x = sd > 1e-12 ? static_cast<float>((x - mean) / sd) : 0.0f;
        }
      }
    }
  }
}

// --class-weights auto over every rank's labels: ClassWeights' inverse square root of each class's frequency,
// normalized so that the frequency-weighted mean weight is 1, as a comma list with every digit of the doubles.
std::string AutoClassWeightsOverRanks(comm::Communicator& comm, const Dataset& train) {
  std::vector<double> count(static_cast<size_t>(train.classes), 0);
  for (int64_t label : train.y) count[static_cast<size_t>(label)] += 1;
  count = SumOverRanks(comm, count);
  double total = 0, norm = 0;
  for (double c : count) total += c;
  std::vector<double> w(count.size());
  for (size_t k = 0; k < count.size(); ++k) {
    const double f = std::max(count[k], 1.0) / total;
    w[k] = 1.0 / std::sqrt(f);
    norm += f * w[k];
  }
  std::string list;
  for (double x : w) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", x / norm);
    list += (list.empty() ? "" : ",") + std::string(buf);
  }
  return list;
}

}  // namespace

bool IsHdf5Data(const std::string& spec) { return spec.rfind("hdf5:", 0) == 0; }

bool LoadHdf5ForRank(const TrainArgs& args, comm::Communicator& comm, Dataset* train, Dataset* val,
                     std::string* error, std::string* class_weights) {
  const int rank = comm.rank(), world = comm.size();
  Hdf5Spec spec;
  Hdf5ReadStats stats;
  bool ok = ParseHdf5Spec(args.data.substr(5), &spec, error) &&
            ReadHdf5Shard(spec, args.val_fraction, kSplitSeed, rank, world, train, val, &stats, error) &&
            (args.input_shape.empty() ||
             (SetSampleShape(args.input_shape, train, error) && SetSampleShape(args.input_shape, val, error)));
  if (world > 1) {
    // Whether every rank read its rows, and the largest label: one sum each.
    const auto agreed = SumOverRanks(comm, {ok ? 0.0 : 1.0});
    if (ok && agreed[0] > 0) *error = "another rank could not read " + spec.file;
    if (agreed[0] > 0) return false;
    std::vector<double> classes(static_cast<size_t>(world), 0);
    classes[static_cast<size_t>(rank)] = static_cast<double>(train->classes);
    int64_t most = 0;
    for (double c : SumOverRanks(comm, classes)) most = std::max(most, static_cast<int64_t>(c));
    train->classes = val->classes = most;
  }
  if (!ok) return false;
  if (class_weights) *class_weights = args.class_weights;
  if (world > 1 && train->task == Task::kSegment && args.class_weights == "auto" && class_weights) {
    *class_weights = AutoClassWeightsOverRanks(comm, *train);
  }
  if (world > 1) {
    StandardizeOverRanks(comm, train, val);
  } else {
    Standardize(train, val);
  }
  std::fprintf(stderr,
               "ladder-train: rank %d read %lld bytes of %s (%lld training, %lld validation rows) in %lld reads\n",
               rank, static_cast<long long>(stats.bytes), spec.file.c_str(), static_cast<long long>(train->rows),
               static_cast<long long>(val->rows), static_cast<long long>(stats.reads));
  return true;
}

}  // namespace ladder::trainer
