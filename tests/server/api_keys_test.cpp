#include "server/service/api_keys.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "server/service/api_keys_sha256.h"

namespace pagoda::server {
namespace {

std::string hex(const Sha256Digest& d) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (uint8_t b : d) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

// A file under the test's temporary directory, removed at the end of its scope.
class TempFile {
 public:
  explicit TempFile(const std::string& text)
      : path_(std::filesystem::temp_directory_path() /
              ("pagoda_keys_" + std::to_string(getpid()) + "_" + std::to_string(counter_++))) {
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

TEST(ApiKeysSha256, MatchesFipsVectors) {
  EXPECT_EQ(hex(sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex(sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(hex(sha256(std::string(1000000, 'a'))),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // Lengths around the padding boundary, checked against coreutils' sha256sum.
  const std::pair<size_t, const char*> boundary[] = {
      {55, "d5e285683cd4efc02d021a5c62014694958901005d6f71e89e0989fac77e4072"},
      {56, "04c26261370ee7541549d16dee320c723e3fd14671e66a099afe0a377c16888e"},
      {63, "75220b47218278e656f2013bb8f0c455a25eaf01e86c64924e9d48d89776d6f2"},
      {64, "7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b5393c"},
      {119, "000b48d4edf0fa7bee3c6236ecd2785baa5db4eeb8bb54341b029e0d9fa5fb0c"},
      {120, "13f05a0b594787f5ecd315edc96141bd3243203d1b7d4f0836f37308b276ba98"}};
  for (const auto& [length, expected] : boundary) {
    EXPECT_EQ(hex(sha256(std::string(length, 'x'))), expected) << length;
  }
}

TEST(ApiKeys, ParsesBearerTokens) {
  EXPECT_EQ(bearer_token("Bearer sk-abc"), "sk-abc");
  EXPECT_EQ(bearer_token("bearer   sk-abc  "), "sk-abc");
  EXPECT_EQ(bearer_token("BEARER\tsk-abc"), "sk-abc");
  EXPECT_EQ(bearer_token("Bearer"), "");
  EXPECT_EQ(bearer_token("Bearer "), "");
  EXPECT_EQ(bearer_token("Bearersk-abc"), "");
  EXPECT_EQ(bearer_token("Basic dXNlcjpwYXNz"), "");
  EXPECT_EQ(bearer_token("sk-abc"), "");
  EXPECT_EQ(bearer_token(""), "");
}

TEST(ApiKeys, NoKeysMeansAuthOff) {
  const Expected<ApiKeys> keys = ApiKeys::load({}, "");
  ASSERT_TRUE(keys.ok());
  EXPECT_FALSE(keys->enabled());
  EXPECT_EQ(keys->size(), 0u);
  EXPECT_FALSE(keys->check("Bearer anything").has_value());
}

TEST(ApiKeys, ChecksEachKeyAndReportsWhich) {
  const Expected<ApiKeys> keys = ApiKeys::load({"sk-first", "sk-second", "sk-first"}, "");
  ASSERT_TRUE(keys.ok()) << keys.status().message();
  EXPECT_TRUE(keys->enabled());
  EXPECT_EQ(keys->size(), 2u);  // the duplicate counts once
  EXPECT_EQ(keys->check("Bearer sk-first"), std::optional<size_t>(0));
  EXPECT_EQ(keys->check("Bearer sk-second"), std::optional<size_t>(1));
  EXPECT_EQ(keys->check("bearer sk-second "), std::optional<size_t>(1));
  EXPECT_FALSE(keys->check("Bearer sk-secon").has_value());   // a prefix
  EXPECT_FALSE(keys->check("Bearer sk-second2").has_value());  // longer
  EXPECT_FALSE(keys->check("Bearer SK-FIRST").has_value());    // keys are case-sensitive
  EXPECT_FALSE(keys->check("sk-first").has_value());           // no scheme
  EXPECT_FALSE(keys->check("Basic sk-first").has_value());
  EXPECT_FALSE(keys->check("").has_value());
}

TEST(ApiKeys, ReadsAKeyFile) {
  TempFile file("# team keys\n\nsk-file-1\n   sk-file-2\r\n  # indented comment\nsk-list\n");
  const Expected<ApiKeys> keys = ApiKeys::load({"sk-list"}, file.path());
  ASSERT_TRUE(keys.ok()) << keys.status().message();
  EXPECT_EQ(keys->size(), 3u);
  EXPECT_EQ(keys->check("Bearer sk-list"), std::optional<size_t>(0));
  EXPECT_EQ(keys->check("Bearer sk-file-1"), std::optional<size_t>(1));
  EXPECT_EQ(keys->check("Bearer sk-file-2"), std::optional<size_t>(2));
  EXPECT_FALSE(keys->check("Bearer # team keys").has_value());
}

TEST(ApiKeys, ParsesKeyFileText) {
  const auto keys = ApiKeys::parse_key_file("a\n#b\n\n c \n", "keys.txt");
  ASSERT_TRUE(keys.ok());
  EXPECT_EQ(*keys, (std::vector<std::string>{"a", "c"}));
  const auto empty = ApiKeys::parse_key_file("# nothing here\n\n", "keys.txt");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(ApiKeys, RejectsUnusableKeysWithoutShowingThem) {
  const Expected<ApiKeys> empty = ApiKeys::load({"ok", ""}, "");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().message(), "api key 2 is empty");

  const Expected<ApiKeys> spaced = ApiKeys::load({"secret value"}, "");
  ASSERT_FALSE(spaced.ok());
  EXPECT_EQ(spaced.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(spaced.status().message().find("secret"), std::string::npos);
  EXPECT_NE(spaced.status().message().find("api key 1"), std::string::npos);

  TempFile file("good\nbad key here\n");
  const Expected<ApiKeys> from_file = ApiKeys::load({}, file.path());
  ASSERT_FALSE(from_file.ok());
  EXPECT_NE(from_file.status().message().find(file.path() + "', line 2"), std::string::npos)
      << from_file.status().message();
  EXPECT_EQ(from_file.status().message().find("bad key"), std::string::npos);

  const Expected<ApiKeys> missing = ApiKeys::load({}, "/nonexistent/keys.txt");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kIo);
  EXPECT_NE(missing.status().message().find("/nonexistent/keys.txt"), std::string::npos);
}

TEST(ApiKeys, ComparesEveryKeyWhicheverMatches) {
  // Many keys sharing a long prefix: the answer must be the exact one whatever its
  // position, and near misses (one byte off at the start or the end) never match.
  std::vector<std::string> list;
  for (int i = 0; i < 64; ++i) list.push_back("sk-shared-prefix-" + std::to_string(1000 + i));
  const Expected<ApiKeys> keys = ApiKeys::load(list, "");
  ASSERT_TRUE(keys.ok());
  for (size_t i = 0; i < list.size(); ++i) {
    EXPECT_EQ(keys->check("Bearer " + list[i]), std::optional<size_t>(i));
    std::string first_off = list[i];
    first_off[0] = 'S';
    std::string last_off = list[i];
    last_off.back() = 'x';
    EXPECT_FALSE(keys->check("Bearer " + first_off).has_value());
    EXPECT_FALSE(keys->check("Bearer " + last_off).has_value());
  }
}

}  // namespace
}  // namespace pagoda::server
