#include "search/spec/container_section.h"

#include "common/container_trial_dir.h"

namespace ladder::search::internal {

namespace {

// One bind: "SRC" or "SRC:DST", both absolute, no comma (apptainer and podman would split on it).
bool ReadBind(ErrorSink& sink, const YAML::Node& node, const std::string& field, std::string* out) {
  auto v = ReadString(sink, node, field);
  if (!v) return false;
  const size_t colon = v->find(':');
  const std::string src = v->substr(0, colon), dst = colon == std::string::npos ? src : v->substr(colon + 1);
  if (src.empty() || src.front() != '/' || dst.empty() || dst.front() != '/' || dst.find(':') != std::string::npos ||
      v->find(',') != std::string::npos) {
    sink.At(node, field, "expected SRC or SRC:DST, absolute paths without ',' , got '" + *v + "'");
    return false;
  }
  *out = *v;
  return true;
}

}  // namespace

void ReadContainerSection(ErrorSink& sink, const YAML::Node& node, ContainerOptions* out) {
  auto m = ReadMapping(sink, node, "container", {"runtime", "image", "binds"});
  if (!m) return;
  ContainerOptions c;
  bool ok = true;
  const MapEntry* runtime = Find(*m, "runtime");
  const MapEntry* image = Find(*m, "image");
  for (auto [e, key] : {std::pair{runtime, "runtime"}, std::pair{image, "image"}}) {
    if (e == nullptr) {
      sink.At(node, JoinField("container", key), std::string("missing required field '") + key + "'");
      ok = false;
    }
  }
  if (runtime != nullptr) {
    auto v = ReadEnum(sink, runtime->value, "container.runtime", {"charliecloud", "apptainer", "podman"});
    if (!v) ok = false;
    c.runtime = !v ? ContainerRuntime::kNone
                : *v == "charliecloud" ? ContainerRuntime::kCharliecloud
                : *v == "apptainer"   ? ContainerRuntime::kApptainer
                                      : ContainerRuntime::kPodman;
  }
  if (image != nullptr) {
    auto v = ReadString(sink, image->value, "container.image");
    if (!v || v->empty()) {
      if (v) sink.At(image->value, "container.image", "must not be empty");
      ok = false;
    } else if (v->front() != '/' && c.runtime != ContainerRuntime::kPodman && c.runtime != ContainerRuntime::kNone) {
      sink.At(image->value, "container.image",
              std::string("must be an absolute path for ") + ContainerRuntimeName(c.runtime) + ", got '" + *v + "'");
      ok = false;
    } else {
      c.image = *v;
    }
  }
  if (const MapEntry* e = Find(*m, "binds")) {
    if (!e->value.IsSequence()) {
      sink.At(e->value, "container.binds", "expected a list of SRC or SRC:DST, got " + Describe(e->value));
      ok = false;
    } else {
      for (size_t i = 0; i < e->value.size(); ++i) {
        std::string bind;
        const std::string field = "container.binds[" + std::to_string(i) + "]";
        if (!ReadBind(sink, e->value[i], field, &bind)) {
          ok = false;
          continue;
        }
        const std::string dst = bind.substr(bind.find(':') == std::string::npos ? 0 : bind.find(':') + 1);
        const std::string taken = kCharliecloudTrialDir;
        if (c.runtime == ContainerRuntime::kCharliecloud && (dst == taken || dst.rfind(taken + "/", 0) == 0)) {
          sink.At(e->value[i], field, "'" + bind + "': " + taken + " is where a Charliecloud rank's trial directory "
                                      "is bound (LADDER_TRIAL_DIR): bind elsewhere, such as /mnt/0");
          ok = false;
          continue;
        }
        c.binds.push_back(bind);
      }
    }
  }
  if (ok) *out = std::move(c);
}

}  // namespace ladder::search::internal
