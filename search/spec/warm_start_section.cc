#include "search/spec/warm_start_section.h"

namespace ladder::search::internal {

void ReadWarmStartSection(ErrorSink& sink, const YAML::Node& node, WarmStartOptions* out) {
  auto m = ReadMapping(sink, node, "warm_start", {"search", "db"});
  if (!m) return;
  const MapEntry* search = Find(*m, "search");
  if (search == nullptr) {
    sink.At(node, "warm_start.search", "missing required field 'search' (the earlier search's id)");
    return;
  }
  auto id = ReadInt(sink, search->value, "warm_start.search", 1, INT64_MAX);
  std::string db;
  if (const MapEntry* e = Find(*m, "db")) {
    auto path = ReadString(sink, e->value, "warm_start.db");
    if (!path) return;
    if (path->empty()) {
      sink.At(e->value, "warm_start.db", "must not be empty (leave db out for the coordinator's own database)");
      return;
    }
    db = *path;
  }
  if (!id) return;
  out->search_id = *id;
  out->db = std::move(db);
}

}  // namespace ladder::search::internal
