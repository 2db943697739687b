// ladder-allreduce-bench: run under mpirun. Times (a) the trainer's bucketed gradient allreduce — the
// GradientReducer's gradients are views of flat buffers that autograd accumulates into, cut into buckets of the
// cap (the first 1 MiB), so what a step costs the reducer is: parameters marked ready in backward order (as the
// accumulator hooks do), each bucket's allreduce launched on the MPI backend as soon as it is complete,
// Finish() waiting for all — against (b) raw MPI_Allreduce of the same bytes (the reducer's own gradient
// buffer) from the calling thread, three ways: one call, cap-sized chunks, and the reducer's own bucket sizes;
// the fastest (by median) counts. Diagnostics (not baselines): (c) the reducer's pieces sent through the MPI
// backend without the reducer; (d) raw MPI of the same pieces of a second buffer of the same size.
//
// The variants run interleaved, one iteration of each per round, so that a change of load during the run
// hits all of them alike. Untimed before each timed iteration: the gradients are zeroed and filled with
// constants in the same way and the ranks meet at a barrier. Prints one JSON line from rank 0 with the
// medians, the quartiles, and the median of the per-round ratios ladder / best raw.
#include <mpi.h>
#include <sys/resource.h>

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

double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}
double Median(const std::vector<double>& v) { return Quantile(v, 0.5); }

// Minor page faults of this process so far (all threads: the MPI thread's too).
double MinorFaults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_minflt);
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
  if (bytes < 4 || iters < 1 || bucket_mb <= 0) {
    std::fprintf(stderr, "ladder-allreduce-bench: --bytes >= 4, --iters >= 1, --bucket-cap-mb > 0\n");
    return 2;
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
  // Parameters shaped like a network's: large matrices (16 MiB) and small vectors between them, `bytes` in all.
  std::vector<torch::Tensor> params;
  int64_t left = bytes / 4;
  int64_t k = 0;
  while (left > 0) {
    int64_t n = std::min<int64_t>(left, (k % 4 == 3) ? 4096 : (4 << 20));
    params.push_back(torch::zeros({n}).requires_grad_(true));
    left -= n;
    ++k;
  }
  const int64_t cap_bytes = static_cast<int64_t>(bucket_mb * 1024 * 1024);
  ladder::trainer::GradientReducer reducer(params, *comm, cap_bytes);
  // Raw MPI's ways to cut the same elements: one call, cap-sized chunks, the reducer's buckets.
  const int64_t elems = bytes / 4;
  std::vector<std::vector<int64_t>> cuts(3);
  cuts[0] = {elems};
  for (int64_t off = 0; off < elems; off += cap_bytes / 4) cuts[1].push_back(std::min(cap_bytes / 4, elems - off));
  for (int64_t b : reducer.bucket_bytes()) cuts[2].push_back(b / 4);
  // Raw MPI reduces the very same bytes: the reducer's gradient buffer. Two 256 MiB buffers of one process
  // need not be equally fast (on this VM the one allocated first was 10-15% slower for MPI, whichever side it
  // belonged to), so a baseline on a buffer of its own would compare memory, not the reducer.
  if (reducer.buffers().size() != 1 || reducer.buffers()[0].numel() != elems) {
    std::fprintf(stderr, "ladder-allreduce-bench: expected one gradient buffer of %lld floats\n",
                 static_cast<long long>(elems));
    return 1;
  }
  float* grad = reducer.buffers()[0].data_ptr<float>();
  auto other = torch::zeros({elems});  // diagnostic only: a second buffer of the same size
  // Every variant starts from the gradients as a backward pass leaves them in the buffer (untimed: autograd's
  // work, not the reducer's; zeroing is the optimizer's zero_grad of any trainer) and a barrier.
  auto prepare = [&] {
    reducer.ZeroGrad();
    for (auto& p : params) p.mutable_grad().fill_(0.5f);
    comm->Barrier();
  };
  auto raw = [&](float* data, const std::vector<int64_t>& cut) {
    int64_t off = 0;
    for (int64_t piece : cut) {
      MPI_Allreduce(MPI_IN_PLACE, data + off, static_cast<int>(piece), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      off += piece;
    }
  };
  std::vector<double> t_ladder, f_ladder;  // seconds and page faults per timed iteration
  std::vector<double> t_thread;  // diagnostic: the reducer's bucket pieces through the communicator alone
  std::vector<double> t_other;   // diagnostic: raw, the reducer's bucket pieces of a second buffer
  std::vector<std::vector<double>> t_raw(cuts.size()), f_raw(cuts.size());
  for (int i = 0; i < iters + 1; ++i) {  // the first round is warm-up
    // (a) The reducer: parameters marked ready in backward order, Finish() waits for every bucket.
    prepare();
    double f0 = MinorFaults(), t0 = Now();
    reducer.Prepare();
    for (size_t j = params.size(); j-- > 0;) reducer.MarkReady(j);
    reducer.Finish();
    double t = Now() - t0;
    if (i) {
      t_ladder.push_back(t);
      f_ladder.push_back(MinorFaults() - f0);
    }
    // (b) raw MPI_Allreduce of the same buffer, each way of cutting.
    for (size_t c = 0; c < cuts.size(); ++c) {
      prepare();
      f0 = MinorFaults();
      t0 = Now();
      raw(grad, cuts[c]);
      t = Now() - t0;
      if (i) {
        t_raw[c].push_back(t);
        f_raw[c].push_back(MinorFaults() - f0);
      }
    }
    // (c) Diagnostic, not a baseline: the reducer's bucket pieces queued on the communicator without the
    // reducer, i.e. what the backend's threading costs by itself.
    std::vector<torch::Tensor> pieces;
    for (int64_t off = 0; int64_t e : cuts[2]) {
      pieces.push_back(reducer.buffers()[0].narrow(0, off, e));
      off += e;
    }
    prepare();
    t0 = Now();
    std::vector<std::unique_ptr<ladder::trainer::comm::Work>> works;
    for (auto& piece : pieces) works.push_back(comm->AllreduceSum(piece));
    for (auto& w : works) w->Wait();
    if (i) t_thread.push_back(Now() - t0);
    // (d) Diagnostic, not a baseline: raw, the same cuts of a second buffer (what memory placement alone does).
    prepare();
    other.fill_(0.5f);
    comm->Barrier();
    t0 = Now();
    raw(other.data_ptr<float>(), cuts[2]);
    if (i) t_other.push_back(Now() - t0);
  }
  if (comm->rank() == 0) {
    const int n = comm->size();
    const double b = static_cast<double>(elems * 4);
    size_t best = 0;
    for (size_t c = 1; c < cuts.size(); ++c) {
      if (Median(t_raw[c]) < Median(t_raw[best])) best = c;
    }
    static const char* kCutNames[] = {"one call", "cap chunks", "reducer buckets"};
    std::vector<double> ratios;
    for (size_t i = 0; i < t_ladder.size(); ++i) ratios.push_back(t_ladder[i] / t_raw[best][i]);
    const double ladder_s = Median(t_ladder), mpi_s = Median(t_raw[best]);
    auto busbw = [&](double secs) { return b / secs * 2.0 * (n - 1) / n / 1e9; };
    std::string buckets;
    for (int64_t bb : cuts[2]) buckets += (buckets.empty() ? "" : ",") + std::to_string(bb * 4);
    std::printf(
        "{\"bytes\": %.0f, \"ranks\": %d, \"iters\": %d, \"tensors\": %zu, \"buckets\": [%s], "
        "\"ladder_s\": %.6f, \"ladder_s_q1\": %.6f, \"ladder_s_q3\": %.6f, "
        "\"mpi_s\": %.6f, \"mpi_s_q1\": %.6f, \"mpi_s_q3\": %.6f, \"mpi_best\": \"%s\", "
        "\"mpi_one_call_s\": %.6f, \"mpi_cap_chunks_s\": %.6f, \"mpi_bucket_chunks_s\": %.6f, "
        "\"ladder_busbw_gbps\": %.3f, \"mpi_busbw_gbps\": %.3f, \"overhead\": %.4f, "
        "\"paired_overhead\": %.4f, \"paired_overhead_q1\": %.4f, \"paired_overhead_q3\": %.4f, "
        "\"ladder_faults\": %.0f, \"mpi_faults\": %.0f, \"mpi_thread_bucket_chunks_s\": %.6f, "
        "\"mpi_other_buffer_bucket_chunks_s\": %.6f}\n",
        b, n, iters, params.size(), buckets.c_str(), ladder_s, Quantile(t_ladder, 0.25), Quantile(t_ladder, 0.75),
        mpi_s, Quantile(t_raw[best], 0.25), Quantile(t_raw[best], 0.75), kCutNames[best], Median(t_raw[0]),
        Median(t_raw[1]), Median(t_raw[2]), busbw(ladder_s), busbw(mpi_s), ladder_s / mpi_s - 1.0,
        Median(ratios) - 1.0, Quantile(ratios, 0.25) - 1.0, Quantile(ratios, 0.75) - 1.0, Median(f_ladder),
        Median(f_raw[best]), Median(t_thread), Median(t_other));
  }
  comm.reset();
  MPI_Finalize();
  return 0;
}
