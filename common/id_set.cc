#include "common/id_set.h"

#include <algorithm>

namespace ladder {

std::string FormatIdSet(std::vector<int> ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::string out;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(ids[i]);
    if (j > i) out += '-' + std::to_string(ids[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace ladder
