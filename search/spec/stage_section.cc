#include "search/spec/stage_section.h"

#include <set>

namespace ladder::search::internal {

void ReadStageSection(ErrorSink& sink, const YAML::Node& node, std::vector<StageFile>* out) {
  if (!node.IsSequence()) {
    sink.At(node, "stage", "expected a list of {from: FILE, to: DIR}, got " + Describe(node));
    return;
  }
  std::set<std::string> targets;  // to/basename(from): two entries may not stage onto one file
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string field = "stage[" + std::to_string(i) + "]";
    auto m = ReadMapping(sink, node[i], field, {"from", "to"});
    if (!m) continue;
    StageFile f;
    bool ok = true;
    for (const char* key : {"from", "to"}) {
      const MapEntry* e = Find(*m, key);
      if (e == nullptr) {
        sink.At(node[i], JoinField(field, key), std::string("missing required field '") + key + "'");
        ok = false;
        continue;
      }
      auto v = ReadString(sink, e->value, JoinField(field, key));
      if (!v) {
        ok = false;
      } else if (v->empty() || v->front() != '/') {
        sink.At(e->value, JoinField(field, key), "must be an absolute path, got '" + *v + "'");
        ok = false;
      } else if (std::string(key) == "from" && v->back() == '/') {
        sink.At(e->value, JoinField(field, key),
                "must name a file (stage a directory as one archive, e.g. a .tar), got '" + *v + "'");
        ok = false;
      } else {
        (std::string(key) == "from" ? f.from : f.to) = *v;
      }
    }
    if (!ok) continue;
    while (f.to.size() > 1 && f.to.back() == '/') f.to.pop_back();
    if (!targets.insert(f.to + "/" + StagedName(f)).second) {
      sink.At(node[i], field, "stages onto " + f.to + "/" + StagedName(f) + " like an earlier entry");
      continue;
    }
    out->push_back(std::move(f));
  }
}

}  // namespace ladder::search::internal
