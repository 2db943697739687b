#include "common/printable.h"

#include <gtest/gtest.h>

namespace ladder {
namespace {

TEST(Printable, KeepsPrintableUtf8) {
  EXPECT_EQ(Printable("lr=0.1 café 学习率 ✓"), "lr=0.1 café 学习率 ✓");
  EXPECT_EQ(Printable("C:\\path"), "C:\\path");
}

TEST(Printable, EscapesControlAndInvalidBytes) {
  EXPECT_EQ(Printable(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(Printable("tab\there\nnew\rline"), "tab\\there\\nnew\\rline");
  EXPECT_EQ(Printable("\x1b[31mred\x7f"), "\\x1b[31mred\\x7f");
  EXPECT_EQ(Printable("caf\xe9"), "caf\\xe9");          // Latin-1, not UTF-8
  EXPECT_EQ(Printable("\xc0\xaf"), "\\xc0\\xaf");         // overlong '/'
  EXPECT_EQ(Printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(Printable("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
  EXPECT_EQ(Printable("\xe2\x82"), "\\xe2\\x82");          // cut short
}

TEST(Printable, EscapesInvisibleFormatCharacters) {
  EXPECT_EQ(Printable("abc\u202etxt.exe"), "abc\\u202etxt.exe");  // right-to-left override
  EXPECT_EQ(Printable("a\u200bb\u2028c\ufeff"), "a\\u200bb\\u2028c\\ufeff");
  EXPECT_EQ(Printable("\u0085"), "\\u0085");  // a C1 control
}

TEST(Printable, BoundsItsOutput) {
  std::string big(10 << 20, 'x');
  std::string out = Printable(big, 80);
  EXPECT_EQ(out, std::string(80, 'x') + "... (10485760 bytes)");
  EXPECT_EQ(Printable(std::string(300, '\xff'), 10).size(), 40u + std::string("... (300 bytes)").size());
}

TEST(Printable, IsIdempotent) {
  const std::string once = Printable("a\x01\xff\u202e b");
  EXPECT_EQ(Printable(once), once);
  EXPECT_TRUE(IsValidUtf8(once));
}

TEST(IsValidUtf8, AcceptsUtf8AndRejectsTheRest) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ✓ 𝄞"));
  EXPECT_FALSE(IsValidUtf8("\xff"));
  EXPECT_FALSE(IsValidUtf8("\xc0\x80"));
  EXPECT_FALSE(IsValidUtf8("\xed\xbf\xbf"));
}

}  // namespace
}  // namespace ladder
