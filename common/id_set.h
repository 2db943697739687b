#pragma once
// Compact id-sets in the style of Flux's R_lite: {0,1,2,5,7,8} prints as "0-2,5,7-8".
#include <string>
#include <vector>

namespace ladder {
std::string FormatIdSet(std::vector<int> ids);
}
