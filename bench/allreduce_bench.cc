// ladder-allreduce-bench: run under mpirun. Times (a) the trainer's bucketed gradient allreduce — the
// GradientReducer's gradients are views of 25 MiB buckets that autograd accumulates into, so what a step costs
// the reducer is: parameters marked ready in backward order (as the accumulator hooks do), each bucket's
// allreduce launched on the communicator's thread as soon as it is complete, Finish() waiting for all —
// against (b) raw MPI_Allreduce of the same bytes (one call, or bucket-sized chunks: the faster).
// Prints one JSON line from rank 0.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "trainer/comm/communicator.h"
#include "trainer/grad_reducer.h"

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int64_t bytes = 64ll << 20;
  int iters = 10;
  double bucket_mb = 25;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string f = argv[i];
    if (f == "--bytes") bytes = std::atoll(argv[i + 1]);
    else if (f == "--iters") iters = std::atoi(argv[i + 1]);
    else if (f == "--bucket-cap-mb") bucket_mb = std::atof(argv[i + 1]);
  }
  // The raw baseline calls MPI from this thread while the communicator calls it from its own.
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  std::string error;
  auto comm = ladder::trainer::comm::MakeCommunicator("mpi", &error);
  if (!comm) {
    std::fprintf(stderr, "ladder-allreduce-bench: %s\n", error.c_str());
    return 2;
  }
  torch::set_num_threads(1);
  // Parameters shaped like a network's: a few large matrices and many small vectors, `bytes` in all.
  std::vector<torch::Tensor> params;
  int64_t left = bytes / 4;
  int64_t k = 0;
  while (left > 0) {
    int64_t n = std::min<int64_t>(left, (k % 4 == 3) ? 4096 : (4 << 20));
    params.push_back(torch::randn({n}).requires_grad_(true));
    left -= n;
    ++k;
  }
  std::vector<double> t_ladder, t_mpi;
  {
    ladder::trainer::GradientReducer reducer(params, *comm, static_cast<int64_t>(bucket_mb * 1024 * 1024));
    for (int i = 0; i < iters + 1; ++i) {
      // The gradients as a backward pass leaves them in the buckets (untimed: autograd's work, not the
      // reducer's; zeroing is the optimizer's zero_grad of any trainer).
      reducer.ZeroGrad();
      for (auto& p : params) p.mutable_grad().normal_();
      comm->Barrier();
      double t0 = Now();
      reducer.Prepare();
      for (size_t k = params.size(); k-- > 0;) reducer.MarkReady(k);
      reducer.Finish();
      double t = Now() - t0;
      if (i) t_ladder.push_back(t);
    }
  }
  // (b) raw MPI_Allreduce of the same bytes, as one call and as chunks of the bucket size; the faster counts.
  auto flat = torch::randn({bytes / 4});
  const int64_t chunk = std::max<int64_t>(1, static_cast<int64_t>(bucket_mb * 1024 * 1024 / 4));
  for (int64_t piece : {flat.numel(), chunk}) {
    std::vector<double> times;
    for (int i = 0; i < iters + 1; ++i) {
      comm->Barrier();
      double t0 = Now();
      for (int64_t off = 0; off < flat.numel(); off += piece) {
        MPI_Allreduce(MPI_IN_PLACE, flat.data_ptr<float>() + off, static_cast<int>(std::min(piece, flat.numel() - off)),
                      MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      }
      double t = Now() - t0;
      if (i) times.push_back(t);
    }
    if (t_mpi.empty() || Median(times) < Median(t_mpi)) t_mpi = times;
  }
  if (comm->rank() == 0) {
    const int n = comm->size();
    const double b = static_cast<double>((bytes / 4) * 4);
    const double ladder_comm = Median(t_ladder);
    const double mpi = Median(t_mpi);
    auto busbw = [&](double secs) { return b / secs * 2.0 * (n - 1) / n / 1e9; };
    std::printf(
        "{\"bytes\": %.0f, \"ranks\": %d, \"tensors\": %zu, \"ladder_s\": %.6f, \"mpi_s\": %.6f, "
        "\"ladder_busbw_gbps\": %.3f, \"mpi_busbw_gbps\": %.3f, \"overhead\": %.4f}\n",
        b, n, params.size(), ladder_comm, mpi, busbw(ladder_comm), busbw(mpi), ladder_comm / mpi - 1.0);
  }
  comm.reset();
  MPI_Finalize();
  return 0;
}
