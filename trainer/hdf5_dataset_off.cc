// hdf5_dataset.h when ladder-train is built without the HDF5 library (libhdf5-dev not found by CMake): every
// entry point says so.
#include "trainer/hdf5_dataset.h"

namespace ladder::trainer {

namespace {

bool NotBuilt(std::string* error) {
  *error = "--data hdf5: this ladder-train was built without HDF5 (install libhdf5-dev and rebuild)";
  return false;
}

}  // namespace

bool ParseHdf5Spec(const std::string&, Hdf5Spec*, std::string* error) { return NotBuilt(error); }

std::unique_ptr<Hdf5Reader> Hdf5Reader::Open(const Hdf5Spec&, std::string* error) {
  NotBuilt(error);
  return nullptr;
}

bool LoadHdf5Spec(const std::string&, Dataset*, std::string* error) { return NotBuilt(error); }

bool ReadHdf5Shard(const Hdf5Spec&, double, uint64_t, int, int, Dataset*, Dataset*, Hdf5ReadStats*,
                   std::string* error) {
  return NotBuilt(error);
}

bool WriteHdf5(const std::string&, const Dataset&, const std::string&, const std::string&, int64_t,
               std::string* error) {
  return NotBuilt(error);
}

}  // namespace ladder::trainer
