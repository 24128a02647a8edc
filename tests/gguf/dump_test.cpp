// gguf::dump, the listing behind `pagoda inspect`.
#include "gguf/dump.h"

#include <gtest/gtest.h>

#include "gguf/writer.h"
#include "gguf_test_util.h"

namespace pagoda::gguf {
namespace {

TEST(Dump, ListsHeaderMetadataAndTensors) {
  Writer writer;
  ASSERT_TRUE(writer.set_string("general.architecture", "llama").ok());
  ASSERT_TRUE(writer.set_u32("llama.block_count", 5).ok());
  ASSERT_TRUE(writer.set_f32("llama.rope.freq_base", 10000.0f).ok());
  ASSERT_TRUE(
      writer.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a\nb"}).ok());
  ASSERT_TRUE(writer.set_string("tokenizer.chat_template", std::string(200, 'x')).ok());
  ASSERT_TRUE(
      writer.add_tensor("token_embd.weight", DType::F32, {4, 3}, testing::bytes_of(48)).ok());
  ASSERT_TRUE(
      writer.add_tensor("blk.0.attn_q.weight", DType::Q8_0, {32, 2}, testing::bytes_of(68)).ok());
  const std::vector<uint8_t> bytes = writer.serialize();
  const Expected<Reader> reader = Reader::parse(bytes, "tiny.gguf");
  ASSERT_TRUE(reader.ok()) << reader.status().message();

  const std::string expected =
      "file:        tiny.gguf (768 bytes)\n"
      "version:     3\n"
      "alignment:   32\n"
      "data offset: 608\n"  // 24 header + 454 metadata + 116 tensor infos, padded
      "metadata:    5 keys\n"
      "  1  general.architecture     string   'llama'\n"
      "  2  llama.block_count        uint32   5\n"
      "  3  llama.rope.freq_base     float32  10000\n"
      "  4  tokenizer.ggml.tokens    array    [array of 4 string] ['<unk>', '<s>', ...]\n"
      "  5  tokenizer.chat_template  string   'xxxxxxxxxx'... (200 bytes)\n"
      "tensors:     2 (116 bytes of data)\n"
      "  #  name                 type  shape    offset  bytes\n"
      "  0  token_embd.weight    f32   [4, 3]        0     48\n"
      "  1  blk.0.attn_q.weight  q8_0  [32, 2]      64     68\n";
  EXPECT_EQ(dump(*reader, {.max_array_items = 2, .max_string_bytes = 10}), expected);
}

TEST(Dump, ShowsEveryItemWhenAsked) {
  Writer writer;
  ASSERT_TRUE(writer.set_string_array("tokens", {"a", "b", "c"}).ok());
  const std::vector<uint8_t> bytes = writer.serialize();
  const Expected<Reader> reader = Reader::parse(bytes, "tokens.gguf");
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  const std::string expected =
      "file:        tokens.gguf (81 bytes)\n"
      "version:     3\n"
      "alignment:   32\n"
      "data offset: 81\n"  // no tensors: no padding
      "metadata:    1 key\n"
      "  1  tokens  array    [array of 3 string] ['a', 'b', 'c']\n"
      "tensors:     0 (0 bytes of data)\n";
  EXPECT_EQ(dump(*reader), expected);
}

TEST(Dump, EscapesUnprintableNames) {
  Writer writer;
  ASSERT_TRUE(writer.set_u32("bad\tkey", 1).ok());
  ASSERT_TRUE(writer.add_tensor("t\x01", DType::I8, {1}, testing::bytes_of(1)).ok());
  const std::vector<uint8_t> bytes = writer.serialize();
  const Expected<Reader> reader = Reader::parse(bytes, "odd\nname.gguf");
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  const std::string text = dump(*reader);
  EXPECT_NE(text.find("file:        'odd\\nname.gguf' ("), std::string::npos) << text;
  EXPECT_NE(text.find("  1  'bad\\tkey'  uint32   1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  0  't\\x01'  i8    [1]         0      1\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace pagoda::gguf
