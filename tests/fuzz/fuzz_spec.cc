// libFuzzer: the YAML spec reader and validator (search::ParseSpec), as `ladder search validate` and
// CreateSearch run it. Every input must end in a spec or in errors that are printable, one line each, with a
// position when the text had one; never a crash, a leak, or a pass that is not linear in the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "common/printable.h"
#include "search/spec/spec_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = ladder::search::ParseSpec(text, "fuzz.yaml");
  if (r.ok() != r.spec.has_value()) std::abort();
  for (const auto& e : r.errors) {
    const std::string line = e.ToString();
    if (line.find('\n') != std::string::npos || !ladder::IsValidUtf8(line)) std::abort();
  }
  if (r.spec) {
    // A valid spec's commands substitute with every parameter at its low end / first choice.
    ladder::search::Params params;
    for (const auto& p : r.spec->space.params) {
      if (p.kind == ladder::search::ParamKind::kCategorical) {
        params[p.name] = p.choices.front();
      } else if (p.kind == ladder::search::ParamKind::kInt) {
        params[p.name] = static_cast<int64_t>(p.low);
      } else {
        params[p.name] = p.low;
      }
    }
    ladder::search::SubstituteCommand(*r.spec, params, {{"trial_id", "1"}, {"trial_number", "0"},
                                                        {"search_id", "1"}, {"checkpoint_dir", "/tmp/c"},
                                                        {"nodes", "1"}});
  }
  return 0;
}
