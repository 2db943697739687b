#pragma once
// ladder-train --zygote: the warm process from which ladder-worker forks its ladder-train trials
// (worker/warm_start.h), so that a trial does not pay LibTorch's start-up (about 0.5 s: 285 shared libraries)
// each time. Protocol: trainer/zygote_protocol.h, on fd 3.
//
// What the zygote holds, and why forking it gives a child that is a cold ladder-train in all but the loading:
// * the loaded libraries and their static initialisation (LibTorch's operator registry, c10, Gloo, Open MPI's
//   library — not MPI_Init), and TuneAllocator's malloc thresholds, which a cold start sets the same way;
// * what its warm-up bound and initialised: a tiny one-thread training of each MLP path (trainer/zygote_hooks.h);
//   no LibTorch thread pool (one thread: no OpenMP or pthreadpool worker is started), so intra-op and inter-op
//   pools are first made in the child, after its environment is set and `--threads` is applied;
// * the datasets its trials train on, loaded once (trainer/data_cache.h);
// * no OpenBLAS thread pool: OpenBLAS's pthread build starts one in its library constructor and in each child
//   of a fork; the zygote shuts it down and sizes it to none before serving (the child's --threads grows it), and
//   refuses to fork while it has any thread but its own — fork copies only the calling thread, so a child of a
//   multi-threaded process can inherit a lock some other thread held;
// * no CUDA context (CUDA is first touched in the child; a CUDA context does not survive fork);
// * the environment it was started with. What a library reads from the environment when it is LOADED — the
//   dynamic loader (LD_*), glibc's malloc (GLIBC_TUNABLES, MALLOC_*), libgomp (OMP_*, GOMP_*: parsed in its
//   constructor), the BLAS (OPENBLAS_*, GOTO_*, BLIS_*, MKL_*) — is fixed in the zygote, so the worker keeps a
//   zygote per distinct set of those variables (worker/warm_start.cc: LoadTimeEnvironment). Everything else is
//   read at run time, and the child's environment is replaced by the request's before the training starts.
// Each child: its own process group (setpgid by child and zygote, so the group exists when "started" is sent),
// SIGKILL when the zygote dies (PR_SET_PDEATHSIG; the zygote itself dies with the worker's launching thread),
// every signal disposition at its default and none blocked, stdin /dev/null, stdout/stderr the descriptors the
// client sent, the request's working directory and environment, and no other descriptor of the zygote's.
// Not the same as a cold start: /proc/PID/environ and /proc/PID/cmdline show the zygote's (they are the memory
// the kernel set up at exec), and the child's parent is the zygote, not the worker.
#include <functional>
#include <string>
#include <vector>

namespace ladder::trainer {

struct ZygoteHooks {
  // One training (args without argv[0]), in the child; the child exits with its return value.
  std::function<int(const std::vector<std::string>&)> run;
  // Once, before the zygote serves: whatever first use costs every child otherwise (LibTorch's and the BLAS's
  // lazily initialised state, the dynamic linker's lazy symbol binding). It must leave no thread running.
  std::function<void()> warm_up;
  // In the zygote before each fork, in the request's working directory: loads what the child will need and
  // can find in the memory it inherits (trainer/data_cache.h). Best effort: what it cannot do, the child does
  // (and reports) itself.
  std::function<void(const std::vector<std::string>& args, const std::vector<std::string>& env)> prepare;
};

// Serves spawn requests on `sock` until the client closes it, then returns 0 (its children then die with it).
// Returns 1 when it cannot serve at all (the reason on stderr). Call it before anything has started a thread
// except OpenBLAS's.
int RunZygote(int sock, const ZygoteHooks& hooks);

}  // namespace ladder::trainer
