#include "server/predictions_file.h"

#include <fstream>
#include <sstream>

namespace ladder::server {

search::PredictionsReadResult ReadPredictionsFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    search::PredictionsReadResult r;
    r.error = path + ": cannot open the predictions file";
    return r;
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    search::PredictionsReadResult r;
    r.error = path + ": read error";
    return r;
  }
  return search::ParsePredictionsCsv(text.str(), path);
}

}  // namespace ladder::server
