#pragma once
// Data sources beyond CSV, all producing the same Dataset (features as float, integer labels):
//   idx:IMAGES,LABELS          MNIST IDX files (idx3 images, idx1 labels; plain or gzip)
//   cifar10:FILE[,FILE...]     CIFAR-10 binary batches (1 label byte + 3072 pixel bytes per record)
//   synthetic:ROWS[:FEATURES[:CLASSES]]  a Gaussian-mixture classification task with label noise, generated
//                              with a fixed seed (for large-batch experiments that need many examples)
//   anything else              a CSV file (csv_dataset.h)
// Errors name the file and what is wrong with it.
#include <string>

#include "trainer/csv_dataset.h"

namespace ladder::trainer {

bool LoadData(const std::string& spec, Dataset* out, std::string* error);
bool LoadMnistIdx(const std::string& images, const std::string& labels, Dataset* out, std::string* error);
bool LoadCifar10(const std::vector<std::string>& files, Dataset* out, std::string* error);
Dataset MakeSynthetic(int64_t rows, int64_t features, int64_t classes, uint64_t seed);

}  // namespace ladder::trainer
