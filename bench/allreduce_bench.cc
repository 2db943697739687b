// ladder-allreduce-bench: run under mpirun. Times (a) the trainer's bucketed gradient allreduce — a backward
// pass whose per-parameter hooks fill 25 MiB buckets and launch their allreduces, then the averaged gradients
// written back — against (b) one raw MPI_Allreduce of the same bytes, and (c) the backward pass alone, so the
// trainer's figure can be given without the compute. Prints one JSON line from rank 0.
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
  auto backward = [&] {
    torch::Tensor loss = torch::zeros({1});
    for (auto& p : params) loss = loss + p.sum();
    loss.backward();
  };
  // (c) backward alone.
  std::vector<double> t_back, t_ladder, t_mpi;
  for (int i = 0; i < iters + 1; ++i) {
    for (auto& p : params) {
      if (p.grad().defined()) p.mutable_grad().zero_();
    }
    comm->Barrier();
    double t0 = Now();
    backward();
    double t = Now() - t0;
    if (i) t_back.push_back(t);
  }
  // (a) backward + bucketed allreduce through the GradientReducer.
  {
    ladder::trainer::GradientReducer reducer(params, *comm, static_cast<int64_t>(bucket_mb * 1024 * 1024));
    for (int i = 0; i < iters + 1; ++i) {
      for (auto& p : params) p.mutable_grad().zero_();
      comm->Barrier();
      double t0 = Now();
      reducer.Prepare();
      backward();
      reducer.Finish();
      double t = Now() - t0;
      if (i) t_ladder.push_back(t);
    }
  }
  // (b) one raw MPI_Allreduce of the same bytes.
  auto flat = torch::randn({bytes / 4});
  for (int i = 0; i < iters + 1; ++i) {
    comm->Barrier();
    double t0 = Now();
    MPI_Allreduce(MPI_IN_PLACE, flat.data_ptr<float>(), static_cast<int>(flat.numel()), MPI_FLOAT, MPI_SUM,
                  MPI_COMM_WORLD);
    double t = Now() - t0;
    if (i) t_mpi.push_back(t);
  }
  if (comm->rank() == 0) {
    const int n = comm->size();
    const double b = static_cast<double>((bytes / 4) * 4);
    const double ladder_comm = std::max(1e-9, Median(t_ladder) - Median(t_back));
    const double mpi = Median(t_mpi);
    auto busbw = [&](double secs) { return b / secs * 2.0 * (n - 1) / n / 1e9; };
    std::printf(
        "{\"bytes\": %.0f, \"ranks\": %d, \"tensors\": %zu, \"backward_s\": %.6f, \"ladder_total_s\": %.6f, "
        "\"ladder_s\": %.6f, \"mpi_s\": %.6f, \"ladder_busbw_gbps\": %.3f, \"mpi_busbw_gbps\": %.3f, "
        "\"overhead\": %.4f}\n",
        b, n, params.size(), Median(t_back), Median(t_ladder), ladder_comm, mpi, busbw(ladder_comm), busbw(mpi),
        ladder_comm / mpi - 1.0);
  }
  return 0;
}
