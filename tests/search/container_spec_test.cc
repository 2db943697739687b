// The spec's `container:` (search/spec/container_section.cc): the runtime, the image and the binds read to exact
// values; each wrong field named.
#include <gtest/gtest.h>

#include <string>

#include "search/spec/spec_reader.h"

namespace ladder::search {
namespace {

std::string WithContainer(const std::string& container) {
  return "name: s\nobjective: {metric: loss, mode: min}\nbudget: {max_trials: 4}\ncommand: [train, \"{lr}\"]\n"
         "space:\n  lr: {type: float, low: 0.001, high: 0.1}\ncontainer: " + container + "\n";
}

std::string AllErrors(const ParseResult& r) {
  std::string out;
  for (const auto& e : r.errors) out += e.ToString() + "\n";
  return out;
}

TEST(ContainerSpec, ReadsTheRuntimeTheImageAndTheBinds) {
  auto r = ParseSpec(WithContainer("{runtime: charliecloud, image: /images/ladder, binds: [/lustre/code, "
                                   "'/scratch/out:/out']}"), "s.yaml");
  ASSERT_TRUE(r.ok()) << AllErrors(r);
  EXPECT_EQ(r.spec->container.runtime, ContainerRuntime::kCharliecloud);
  EXPECT_EQ(r.spec->container.image, "/images/ladder");
  EXPECT_EQ(r.spec->container.binds, (std::vector<std::string>{"/lustre/code", "/scratch/out:/out"}));
  auto podman = ParseSpec(WithContainer("{runtime: podman, image: 'localhost/ladder:1'}"), "s.yaml");
  ASSERT_TRUE(podman.ok()) << AllErrors(podman);
  EXPECT_EQ(podman.spec->container.image, "localhost/ladder:1") << "podman's images are names";
  EXPECT_EQ(ParseSpec(WithContainer("{runtime: apptainer, image: /i.sif}"), "s.yaml").spec->container.runtime,
            ContainerRuntime::kApptainer);
  EXPECT_TRUE(ParseSpec(WithContainer("{runtime: podman, image: x, binds: ['/data:/mnt/9']}"), "s.yaml").ok())
      << "only Charliecloud binds the trial directory at /mnt/9";
}

TEST(ContainerSpec, EachWrongFieldIsNamed) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{image: /i}", "container.runtime: missing required field 'runtime'"},
      {"{runtime: docker, image: /i}", "container.runtime: expected 'charliecloud', 'apptainer', or 'podman', got 'docker'"},
      {"{runtime: charliecloud}", "container.image: missing required field 'image'"},
      {"{runtime: apptainer, image: i.sif}", "container.image: must be an absolute path for apptainer, got 'i.sif'"},
      {"{runtime: podman, image: ''}", "container.image: must not be empty"},
      {"{runtime: podman, image: x, binds: /a}", "container.binds: expected a list of SRC or SRC:DST"},
      {"{runtime: podman, image: x, binds: [/a, 'b:/c']}", "container.binds[1]: expected SRC or SRC:DST"},
      {"{runtime: podman, image: x, binds: ['/a,/b']}", "container.binds[0]: expected SRC or SRC:DST"},
      {"{runtime: podman, image: x, network: host}", "container.network: unknown field 'network'"},
      // ladder binds the trial's directory there (common/container_trial_dir.h)
      {"{runtime: charliecloud, image: /i, binds: ['/data:/mnt/9']}",
       "container.binds[0]: '/data:/mnt/9': /mnt/9 is where a Charliecloud rank's trial directory is bound"},
      {"{runtime: charliecloud, image: /i, binds: [/mnt/9/x]}", "container.binds[0]: '/mnt/9/x': /mnt/9 is where"},
      {"/images/ladder", "container: expected a mapping"},
  };
  for (const auto& [text, want] : cases) {
    auto r = ParseSpec(WithContainer(text), "s.yaml");
    EXPECT_FALSE(r.ok()) << text;
    EXPECT_NE(AllErrors(r).find(want), std::string::npos) << text << "\n" << AllErrors(r);
  }
}

}  // namespace
}  // namespace ladder::search
