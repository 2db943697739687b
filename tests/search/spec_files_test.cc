// The example specs shipped in data/: every file in data/specs/ parses; every file in data/specs/bad/ fails,
// with an error on the field its first line names ("# expect-error: budget.max_trials").
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "search/samplers/sampler.h"
#include "search/spec/spec_reader.h"

namespace ladder::search {
namespace {

namespace fs = std::filesystem;

fs::path SourceDir() {
  if (const char* env = std::getenv("LADDER_SOURCE_DIR"); env != nullptr && *env != '\0') return env;
  return LADDER_TEST_SOURCE_DIR;  // the source tree this test was configured from (tests/CMakeLists.txt)
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<fs::path> YamlFiles(const fs::path& dir) {
  std::vector<fs::path> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file() && (e.path().extension() == ".yaml" || e.path().extension() == ".yml")) {
      out.push_back(e.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(SpecFilesTest, ValidExamplesParse) {
  std::vector<fs::path> files = YamlFiles(SourceDir() / "data" / "specs");
  ASSERT_GE(files.size(), 2u) << "no example specs under " << (SourceDir() / "data" / "specs");
  if (fs::exists(SourceDir() / "data" / "demo.yaml")) files.push_back(SourceDir() / "data" / "demo.yaml");
  for (const auto& f : files) {
    ParseResult r = ParseSpec(ReadFile(f), f.string());
    std::string errors;
    for (const auto& e : r.errors) errors += e.ToString() + "\n";
    EXPECT_TRUE(r.ok()) << errors;
    if (!r.ok()) continue;
    auto sampler = MakeSampler(*r.spec);
    auto params = sampler->Ask(0);
    ASSERT_TRUE(params.has_value()) << f;
    Substituted sub = SubstituteCommand(*r.spec, *params,
                                        {{"trial_id", "1"}, {"trial_number", "0"}, {"search_id", "1"},
                                         {"checkpoint_dir", "/ckpt/trial-1"}, {"nodes", "1"}, {"micro_batches", "1"}});
    EXPECT_EQ(sub.error, "") << f;
    // Words that mention an inactive conditional parameter are left out.
    EXPECT_LE(sub.argv.size(), r.spec->command.size()) << f;
    EXPECT_GE(sub.argv.size(), 1u) << f;
  }
}

TEST(SpecFilesTest, BadExamplesFailOnTheExpectedField) {
  std::vector<fs::path> files = YamlFiles(SourceDir() / "data" / "specs" / "bad");
  ASSERT_GE(files.size(), 4u) << "no bad specs under " << (SourceDir() / "data" / "specs" / "bad");
  for (const auto& f : files) {
    std::string text = ReadFile(f);
    const std::string marker = "# expect-error: ";
    ASSERT_EQ(text.rfind(marker, 0), 0u) << f << " must start with '" << marker << "<field>'";
    std::string field = text.substr(marker.size(), text.find('\n') - marker.size());
    ParseResult r = ParseSpec(text, f.string());
    ASSERT_FALSE(r.ok()) << f;
    bool found = false;
    std::string errors;
    for (const auto& e : r.errors) {
      errors += e.ToString() + "\n";
      found = found || e.field == field;
      EXPECT_GT(e.line, 1) << e.ToString();  // points into the file, past the marker line
    }
    EXPECT_TRUE(found) << f << ": no error on " << field << "; got:\n" << errors;
  }
}

}  // namespace
}  // namespace ladder::search
