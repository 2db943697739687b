// libFuzzer: the node inventory parser (server/scheduler/inventory.h) and its hostlists.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "common/hostlist.h"
#include "server/scheduler/inventory.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<ladder::scheduler::NodeSpec> nodes;
  auto errors = ladder::scheduler::ParseInventory(text, "fuzz.inv", &nodes);
  if (!errors.empty() && !nodes.empty()) std::abort();
  for (const auto& e : errors) {
    if (e.ToString().find('\n') != std::string::npos) std::abort();
  }
  std::string error;
  auto names = ladder::ExpandHostlist(text.substr(0, 256), &error, 4096);
  if (names.size() > 4096) std::abort();
  return 0;
}
