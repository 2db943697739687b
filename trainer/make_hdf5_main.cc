// ladder-make-hdf5: writes any ladder-train --data source (the generated climate: and cosmo: workloads, a CSV,
// synthetic:, teacher:, idx:, cifar10:) as an HDF5 file that `ladder-train --data hdf5:FILE` reads
// (trainer/hdf5_dataset.h): a float32 X [N, sample shape...] and a Y of classes (int64) or targets (float32).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "trainer/csv_dataset.h"
#include "trainer/data_sources.h"
#include "trainer/hdf5_dataset.h"

namespace {

constexpr const char* kUsage = R"(usage: ladder-make-hdf5 --data SOURCE --out FILE [options]
Writes a ladder-train data source as HDF5 for ladder-train --data hdf5:FILE[:X,Y].

  --data SOURCE        any ladder-train --data source but text: and markov: (e.g. climate:512, cosmo:512:16,
                       a CSV file)
  --out FILE           the HDF5 file to write (atomically: a temporary file renamed when complete)
  --input-shape SHAPE  give vector samples a shape first (C,H,W or C,D,H,W), as ladder-train's option
  --x NAME, --y NAME   dataset names (default x and y)
  --chunk-rows N       rows per HDF5 chunk (default 64): the unit ladder-train reads
)";

}  // namespace

int main(int argc, char** argv) {
  using namespace ladder::trainer;
  std::string data, out, shape, x = "x", y = "y";
  int64_t chunk_rows = 64;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "ladder-make-hdf5: option %s needs a value (see --help)\n", flag.c_str());
      return 2;
    }
    const std::string value = argv[++i];
    if (flag == "--data") data = value;
    else if (flag == "--out") out = value;
    else if (flag == "--input-shape") shape = value;
    else if (flag == "--x") x = value;
    else if (flag == "--y") y = value;
    else if (flag == "--chunk-rows" && std::atoll(value.c_str()) > 0) chunk_rows = std::atoll(value.c_str());
    else {
      std::fprintf(stderr, "ladder-make-hdf5: unknown option or bad value '%s %s' (see --help)\n", flag.c_str(),
                   value.c_str());
      return 2;
    }
  }
  if (data.empty() || out.empty()) {
    std::fprintf(stderr, "ladder-make-hdf5: --data and --out are needed (see --help)\n");
    return 2;
  }
  Dataset d;
  std::string error;
  if (!LoadData(data, &d, &error) || (!shape.empty() && !SetSampleShape(shape, &d, &error)) ||
      !WriteHdf5(out, d, x, y, chunk_rows, &error)) {
    std::fprintf(stderr, "ladder-make-hdf5: %s\n", error.c_str());
    return 2;
  }
  std::fprintf(stderr, "ladder-make-hdf5: wrote %lld rows of %s (task %s) to %s\n", static_cast<long long>(d.rows),
               data.c_str(), TaskName(d.task), out.c_str());
  return 0;
}
