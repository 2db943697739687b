#pragma once
// What ladder-train --zygote does besides forking (trainer/zygote.h): its warm-up before serving, and the data
// it loads for a trial before forking it (trainer/data_cache.h).
#include <string>
#include <vector>

namespace ladder::trainer {

// Trains a tiny MLP for one epoch on each path (the fused SGD step; autograd with dropout and Adam) with one
// thread, so that each child finds LibTorch's and the BLAS's lazily initialised state (symbol bindings, kernels'
// first-call set-up, the BLAS's buffers) made, and LibTorch's pthreadpool sized to one thread (a child then
// starts no pool thread unless its --threads asks). Leaves no thread running; a trial seeds its own RNG.
void WarmUpForForking();

// For a spawn request's arguments (without argv[0]) and environment: loads the dataset the trial will train on
// into the zygote's cache, relative to the working directory. Silent: a trial whose arguments or data are bad
// reports that itself.
void PrepareTrialData(const std::vector<std::string>& args, const std::vector<std::string>& env);

}  // namespace ladder::trainer
