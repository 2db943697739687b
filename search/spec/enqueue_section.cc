#include "search/spec/enqueue_section.h"

#include <map>

#include "search/core/point.h"

namespace ladder::search::internal {

void ReadEnqueueSection(ErrorSink& sink, const YAML::Node& node, const SearchSpace& space, std::vector<Params>* out) {
  if (!node.IsSequence()) {
    sink.At(node, "enqueue", "expected a list of points like {lr: 0.1, batch_size: 256}, got " + Describe(node));
    return;
  }
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string field = "enqueue[" + std::to_string(i) + "]";
    const YAML::Node item = node[i];
    if (!item.IsMap()) {
      sink.At(item, field, "expected a mapping of parameter name to value, got " + Describe(item));
      continue;
    }
    std::vector<std::pair<std::string, std::string>> values;
    std::map<std::string, YAML::Node> where;  // a parameter's value node, for its error's position
    bool shape_ok = true;
    for (auto it = item.begin(); it != item.end(); ++it) {
      const YAML::Node key = it->first;
      const YAML::Node value = it->second;
      sink.NoteKey(value, key);
      if (!key.IsScalar()) {
        sink.At(key, field, "expected a parameter name, got " + Describe(key));
        shape_ok = false;
        continue;
      }
      if (!value.IsScalar()) {
        sink.At(value, field + "." + key.Scalar(), "expected a single value, got " + Describe(value));
        shape_ok = false;
        continue;
      }
      values.emplace_back(key.Scalar(), value.Scalar());
      where.emplace(key.Scalar(), value);
    }
    PointResult point = ParsePoint(space, values);
    for (const PointError& e : point.errors) {
      auto w = where.find(e.param);
      sink.At(w != where.end() ? w->second : item, field + "." + e.param, e.message);
    }
    if (shape_ok && point.ok()) out->push_back(std::move(point.params));
  }
}

}  // namespace ladder::search::internal
