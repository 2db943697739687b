#include "common/token.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "tests/support/process.h"

namespace ladder {
namespace {


TEST(Token, GeneratedTokensAreHexAndDistinct) {
  auto a = GenerateToken(), b = GenerateToken();
  EXPECT_EQ(a.size(), 64u);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST(Token, EnsureCreatesOwnerOnlyFileAndReusesIt) {
  testing::TempDir dir("token");  // removed at the end of the test
  auto path = (dir / "t1.token").string();
  std::filesystem::remove(path);
  EXPECT_FALSE(ReadTokenFile(path).has_value());
  auto t = EnsureTokenFile(path);
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(EnsureTokenFile(path), t);
  EXPECT_EQ(*ReadTokenFile(path), t);
}

TEST(Token, EmptyFileIsAnError) {
  testing::TempDir dir("token");
  auto path = (dir / "empty.token").string();
  WriteFileAtomically(path, "", 0600);
  EXPECT_THROW(ReadTokenFile(path), std::runtime_error);
}

}  // namespace
}  // namespace ladder
