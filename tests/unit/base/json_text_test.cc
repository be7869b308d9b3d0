#include "base/json_text.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace natsfleet::base {
namespace {

TEST(JsonText, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(json_string(""), R"("")");
  EXPECT_EQ(json_string("plain"), R"("plain")");
  EXPECT_EQ(json_string("a\"b\\c"), R"("a\"b\\c")");
  EXPECT_EQ(json_string("l1\nl2\r\t"), R"("l1\nl2\r\t")");
  EXPECT_EQ(json_string(std::string("nul\0x\x1f", 6)), R"("nul\u0000x\u001f")");
}

TEST(JsonText, KeepsValidUtf8AndReplacesBadBytes) {
  EXPECT_EQ(json_string("caf\xc3\xa9 \xf0\x9f\x9a\x80"), "\"caf\xc3\xa9 \xf0\x9f\x9a\x80\"");
  EXPECT_EQ(json_string("a\xff"
                        "b"),
            "\"a\xef\xbf\xbd"
            "b\"");
  EXPECT_EQ(json_string("\xe2\x82"), "\"\xef\xbf\xbd\xef\xbf\xbd\"") << "truncated sequence";
}

TEST(JsonText, AnyBytesMakeALiteralThatParsesBack) {
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  std::string line;
  append_json_string(line, all);
  const auto parsed = nlohmann::json::parse(line, nullptr, false);
  ASSERT_TRUE(parsed.is_string()) << line;
  EXPECT_EQ(parsed.get<std::string>().substr(0, 128), all.substr(0, 128));
}

TEST(JsonText, AcceptsStrictUtf8Only) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8(std::string("nul\0inside", 10)));
  EXPECT_TRUE(is_valid_utf8("\xc2\x80"));           // U+0080
  EXPECT_TRUE(is_valid_utf8("\xed\x9f\xbf"));       // U+D7FF, last before surrogates
  EXPECT_TRUE(is_valid_utf8("\xf4\x8f\xbf\xbf"));   // U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(is_valid_utf8("\xe0\x80\xaf"));      // overlong 3-byte
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));      // U+D800 surrogate
  EXPECT_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // U+110000
  EXPECT_FALSE(is_valid_utf8("\x80"));              // lone continuation
  EXPECT_FALSE(is_valid_utf8("\xe2\x82"));          // truncated
}

TEST(JsonText, LongTextIsJudgedAndEscapedWhereverTheOddByteFalls) {
  // Long ASCII is taken in runs (and eight bytes at a time by the UTF-8 check): the byte that
  // ends a run may sit at any offset.
  for (size_t at = 0; at < 40; ++at) {
    std::string text(40, 'a');
    text[at] = '\xff';
    EXPECT_FALSE(is_valid_utf8(text)) << at;
    text[at] = '"';
    EXPECT_TRUE(is_valid_utf8(text)) << at;
    EXPECT_EQ(json_string(text),
              "\"" + std::string(at, 'a') + "\\\"" + std::string(39 - at, 'a') + "\"")
        << at;
  }
  std::string tail(64, 'b');
  tail += "\xc3\xa9";
  EXPECT_TRUE(is_valid_utf8(tail));
  tail.pop_back();
  EXPECT_FALSE(is_valid_utf8(tail)) << "truncated after 64 ASCII bytes";
}

}  // namespace
}  // namespace natsfleet::base
