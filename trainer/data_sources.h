#pragma once
// Data sources beyond CSV, all producing the same Dataset (features as float, integer labels):
//   idx:IMAGES,LABELS          MNIST IDX files (idx3 images, idx1 labels; plain or gzip)
//   cifar10:FILE[,FILE...]     CIFAR-10 binary batches (1 label byte + 3072 pixel bytes per record)
//   synthetic:ROWS[:FEATURES[:CLASSES]]  a Gaussian-mixture classification task with label noise, generated
//                              with a fixed seed (for large-batch experiments that need many examples)
//   climate:ROWS[:SIZE]        16-channel SIZE×SIZE climate-like fields with cyclones and atmospheric rivers,
//                              per-pixel labels (segmentation; climate_data.cc; SIZE default 32)
//   teacher:ROWS[:FEATURES[:CLASSES[:LABEL_NOISE[:RANK]]]]  a fixed random teacher MLP labels Gaussian inputs
//                              (teacher_data.cc); LABEL_NOISE (default 0) the fraction of labels replaced by
//                              another class, RANK (default FEATURES) the inputs' effective rank; defaults 32:10
//   cosmo:ROWS[:SIZE]          1×SIZE³ log-normal density volumes of Gaussian random fields; regression of the
//                              power spectrum's amplitude and slope (cosmo_data.cc; SIZE default 16)
//   markov:ROWS[:SEQ[:VOCAB]]  token sequences from a sparse second-order Markov chain (language model)
//   text:PATH                  a text file's bytes as tokens (vocabulary 256) in windows of --seq-len
//   hdf5:FILE[:X,Y]            datasets X and Y (default x, y) of an HDF5 file, read whole here (hdf5_dataset.h;
//                              ladder-train at several ranks reads each rank's rows only: hdf5_shard.h)
//   anything else              a CSV file (csv_dataset.h)
// Sample shapes: MNIST (1,H,W), CIFAR-10 (3,32,32), climate (16,SIZE,SIZE), cosmo (1,SIZE,SIZE,SIZE), tokens
// (SEQ), HDF5 as its X dataset's; CSV rows are vectors
// (ladder-train --input-shape gives them an image shape).
// Errors name the file and what is wrong with it.
#include <string>
#include <vector>

#include "trainer/csv_dataset.h"

namespace ladder::trainer {

struct DataOptions {
  int64_t seq_len = 64;  // tokens per sample for text: and the default of markov:
};

bool LoadData(const std::string& spec, const DataOptions& options, Dataset* out, std::string* error);
// The files LoadData(spec) reads, as the spec names them (relative paths stay relative); none for generated data.
std::vector<std::string> DataFiles(const std::string& spec);
inline bool LoadData(const std::string& spec, Dataset* out, std::string* error) {
  return LoadData(spec, DataOptions{}, out, error);
}
bool LoadMnistIdx(const std::string& images, const std::string& labels, Dataset* out, std::string* error);
bool LoadCifar10(const std::vector<std::string>& files, Dataset* out, std::string* error);
Dataset MakeSynthetic(int64_t rows, int64_t features, int64_t classes, uint64_t seed);
struct TeacherOptions {
  int64_t rows = 0, features = 32, classes = 10;
  double label_noise = 0;  // fraction of labels replaced by a different class, in [0, 1)
  int64_t rank = 0;        // effective rank of the inputs, 1..features (0: features)
};
// `teacher_labels` (optional): the teacher's own labels, before the label noise.
Dataset MakeTeacher(const TeacherOptions& options, uint64_t seed, std::vector<int64_t>* teacher_labels = nullptr);
// Parses what follows "teacher:"; false with *error naming the field and its value.
bool ParseTeacher(const std::string& rest, TeacherOptions* out, std::string* error);
Dataset MakeClimate(int64_t rows, int64_t size, uint64_t seed);
Dataset MakeCosmo(int64_t rows, int64_t size, uint64_t seed);
bool LoadText(const std::string& path, int64_t seq_len, Dataset* out, std::string* error);
Dataset MakeMarkovText(int64_t rows, int64_t seq_len, int64_t vocab, uint64_t seed);

}  // namespace ladder::trainer
