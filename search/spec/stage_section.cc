#include "search/spec/stage_section.h"

#include <set>

namespace ladder::search::internal {

namespace {

// An absolute path (a trailing slash dropped when `dir_ok`), or nullopt with the error reported.
std::optional<std::string> ReadPath(ErrorSink& sink, const YAML::Node& node, const std::string& field, bool dir_ok) {
  auto v = ReadString(sink, node, field);
  if (!v) return std::nullopt;
  if (v->empty() || v->front() != '/') {
    sink.At(node, field, "must be an absolute path, got '" + *v + "'");
    return std::nullopt;
  }
  if (!dir_ok && v->back() == '/') {
    sink.At(node, field,
            "must name a file (a directory: stage it as an archive with extract: true, or its files with "
            "shard: node), got '" + *v + "'");
    return std::nullopt;
  }
  while (v->size() > 1 && v->back() == '/') v->pop_back();
  return v;
}

// `from`: a path; with shard: node also a list of shard files (f->shards).
bool ReadFrom(ErrorSink& sink, const YAML::Node& value, const std::string& field, StageFile* f) {
  if (!value.IsSequence()) {
    auto v = ReadPath(sink, value, field, f->shard_node);
    if (v) f->from = *v;
    return v.has_value();
  }
  if (!f->shard_node) {
    sink.At(value, field, "a list of files needs shard: node (each node gets its share); got " + Describe(value));
    return false;
  }
  if (value.size() == 0) {
    sink.At(value, field, "expected at least one file");
    return false;
  }
  bool ok = true;
  std::set<std::string> names;
  for (size_t k = 0; k < value.size(); ++k) {
    const std::string at = field + "[" + std::to_string(k) + "]";
    auto v = ReadPath(sink, value[k], at, false);
    if (!v) {
      ok = false;
    } else if (!names.insert(v->substr(v->rfind('/') + 1)).second) {
      sink.At(value[k], at, "a second shard named '" + v->substr(v->rfind('/') + 1) + "' (they land in one directory)");
      ok = false;
    } else {
      f->shards.push_back(*v);
    }
  }
  return ok;
}

// extract and shard, read before `from` (which they change).
bool ReadModes(ErrorSink& sink, const YAML::Node& entry, const MapEntries& m, const std::string& field,
               StageFile* f) {
  bool ok = true;
  if (const MapEntry* e = Find(m, "extract")) {
    auto v = ReadBool(sink, e->value, JoinField(field, "extract"));
    ok = ok && v.has_value();
    f->extract = v.value_or(false);
  }
  if (const MapEntry* e = Find(m, "shard")) {
    auto v = ReadEnum(sink, e->value, JoinField(field, "shard"), {"node"});
    ok = ok && v.has_value();
    f->shard_node = v.has_value();
  }
  if (f->extract && f->shard_node) {
    sink.At(entry, field, "extract and shard cannot be combined (shard the archive's files, or extract one archive)");
    return false;
  }
  return ok;
}

std::optional<StageFile> ReadEntry(ErrorSink& sink, const YAML::Node& entry, const std::string& field) {
  auto m = ReadMapping(sink, entry, field, {"from", "to", "extract", "shard"});
  if (!m) return std::nullopt;
  StageFile f;
  bool ok = ReadModes(sink, entry, *m, field, &f);
  for (const char* key : {"from", "to"}) {
    const MapEntry* e = Find(*m, key);
    if (e == nullptr) {
      sink.At(entry, JoinField(field, key), std::string("missing required field '") + key + "'");
      ok = false;
    } else if (std::string(key) == "from") {
      ok = ReadFrom(sink, e->value, JoinField(field, key), &f) && ok;
    } else if (auto v = ReadPath(sink, e->value, JoinField(field, key), true)) {
      f.to = *v;
    } else {
      ok = false;
    }
  }
  if (ok && f.extract && StagedName(f).empty()) {
    sink.At(Find(*m, "from")->value, JoinField(field, "from"),
            "extract: true needs an archive (.tar, .tar.gz, .tgz, .tar.bz2, .tar.xz, .tar.zst or .zip), got '" +
                f.from + "'");
    ok = false;
  }
  if (!ok) return std::nullopt;
  return f;
}

}  // namespace

void ReadStageSection(ErrorSink& sink, const YAML::Node& node, std::vector<StageFile>* out) {
  if (!node.IsSequence()) {
    sink.At(node, "stage", "expected a list of {from: FILE, to: DIR}, got " + Describe(node));
    return;
  }
  std::set<std::string> targets;  // what each entry makes under its `to`: two entries may not stage onto one
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string field = "stage[" + std::to_string(i) + "]";
    auto f = ReadEntry(sink, node[i], field);
    if (!f) continue;
    const std::string target = f->to + "/" + StagedName(*f);
    if (!targets.insert(target).second) {
      sink.At(node[i], field, "stages onto " + target + " like an earlier entry");
      continue;
    }
    out->push_back(std::move(*f));
  }
}

}  // namespace ladder::search::internal
