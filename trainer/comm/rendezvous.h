#pragma once
// Rendezvous of torchrun-style ranks (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT): reads and
// checks the variables and joins the store at MASTER_ADDR:MASTER_PORT (bound_store.h: rank 0 serves it on that
// address only, admitting connections that bring LADDER_RENDEZVOUS_SECRET when it is set), or, when LADDER_RENDEZVOUS_FILE is set (a worker that starts every rank of a trial on its node),
// a c10d FileStore in that file: nothing listens. Shared by the Gloo and NCCL backends.
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <stdexcept>
#include <string>

namespace ladder::trainer::comm {

struct Rendezvous {
  int rank = 0, size = 1, local_rank = 0;  // local_rank: LOCAL_RANK, else rank
  std::string addr, port;
  c10::intrusive_ptr<c10d::Store> store;
};

// Thrown by JoinRendezvous when rank 0 cannot serve the store because another process holds MASTER_PORT: the
// run is not at fault, another port would do. ladder-train exits kExitRendezvousPortInUse (common/trial_exit_codes.h).
class RendezvousPortInUse : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// false with *error ("<backend> backend: environment variable RANK is not set ...", "... rendezvous at A:P
// failed: ...") otherwise; throws RendezvousPortInUse (its message as *error's would be) when rank 0's port is
// taken.
bool JoinRendezvous(const std::string& backend, std::chrono::milliseconds timeout, Rendezvous* out,
                    std::string* error);

}  // namespace ladder::trainer::comm
