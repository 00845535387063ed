// kernels/ggml_blocks.{h,cc} against tools/ggml_quants.py, bit for bit: the fixture
// ML_MODELS/ggml_blocks.bin (verify/make_fixtures.py random -> tools/ggml_quants.py fixture; its
// format is ggml_quants.write_fixture's doc) holds, per type, random blocks (random bytes, random
// finite binary16 scales) and blocks of the Python encoder, with NumPy's dequantized values; the
// NumPy dequantizer was checked against llama.cpp's own dequantize_row_* by hand
// (tools/tests/test_ggml_quants.py's doc). Also: the type table against the fixture's block
// sizes and against runtime/gguf.h's table of ggml ids, ggml_row_bytes, unknown ids, and that
// dequantization writes exactly n floats.
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "kernels/ggml_blocks.h"
#include "runtime/gguf.h"
#include "verify/tests/common.h"

namespace {

uint32_t u32_at(const std::string &s, size_t off) {
  REQUIRE(off + 4 <= s.size());
  return uint32_t(uint8_t(s[off])) | uint32_t(uint8_t(s[off + 1])) << 8 | uint32_t(uint8_t(s[off + 2])) << 16 |
         uint32_t(uint8_t(s[off + 3])) << 24;
}

}  // namespace

TEST_CASE("ggml block types: dequantization equals tools/ggml_quants.py bit for bit (every type)",
          "[ggml_blocks]") {
  const std::string f = test::read_file(test::models("ggml_blocks.bin"));
  REQUIRE(f.size() >= 12);
  REQUIRE(f.compare(0, 4, "GGBT") == 0);
  REQUIRE(u32_at(f, 4) == 1);
  const uint32_t ncases = u32_at(f, 8);
  size_t off = 12;
  std::set<uint32_t> seen;
  int64_t values = 0;
  for (uint32_t c = 0; c < ncases; ++c) {
    const uint32_t type = u32_at(f, off), elems = u32_at(f, off + 4), bytes = u32_at(f, off + 8),
                   n = u32_at(f, off + 12);
    off += 16;
    const ml::GgmlBlockInfo *info = ml::ggml_block_info(type);
    INFO("case " << c << ": type " << type << ", " << n << " elements");
    REQUIRE(info != nullptr);
    REQUIRE(ml::ggml_type_known(type));
    CHECK(uint32_t(info->block_elems) == elems);  // the C++ table = the Python one
    CHECK(uint32_t(info->block_bytes) == bytes);
    const int64_t nbytes = ml::ggml_row_bytes(type, n);
    REQUIRE(nbytes == int64_t(n) / elems * bytes);
    REQUIRE(off + size_t(nbytes) + 4 * size_t(n) <= f.size());
    // the blocks at an odd address (GGUF blocks are not aligned), the output with a guard float
    std::vector<uint8_t> raw(size_t(nbytes) + 1);
    std::memcpy(raw.data() + 1, f.data() + off, size_t(nbytes));
    std::vector<float> got(size_t(n) + 1);
    const float guard = -1234.5f;
    got[n] = guard;
    ml::ggml_dequantize_row(type, raw.data() + 1, got.data(), n);
    CHECK(std::memcmp(&got[n], &guard, 4) == 0);
    const char *want = f.data() + off + nbytes;
    int64_t bad = 0, first = -1;
    for (uint32_t i = 0; i < n; ++i) {
      if (std::memcmp(&got[i], want + 4 * size_t(i), 4) != 0) {
        if (first < 0) first = i;
        ++bad;
      }
    }
    uint32_t g = 0, w = 0;
    if (first >= 0) {
      std::memcpy(&g, &got[size_t(first)], 4);
      std::memcpy(&w, want + 4 * size_t(first), 4);
    }
    INFO(info->name << ": " << bad << " of " << n << " values differ; first at " << first << ": got bits 0x"
                    << std::hex << g << ", NumPy 0x" << w);
    CHECK(bad == 0);
    off += size_t(nbytes) + 4 * size_t(n);
    seen.insert(type);
    values += n;
  }
  CHECK(off == f.size());
  // every type of the table was covered (and nothing else)
  CHECK(seen.size() == sizeof(ml::kGgmlBlockTypes) / sizeof(ml::kGgmlBlockTypes[0]));
  for (const ml::GgmlBlockInfo &t : ml::kGgmlBlockTypes) CHECK(seen.count(uint32_t(t.type)) == 1);
  CHECK(values > 0);
}

TEST_CASE("ggml block types: table, unknown ids, row sizes", "[ggml_blocks]") {
  for (uint32_t id : {4u, 5u, 9u, 15u, 16u, 29u, 31u, 39u, 0xFFFFFFFFu}) {
    INFO("type id " << id);
    CHECK(!ml::ggml_type_known(id));
    CHECK(ml::ggml_block_info(id) == nullptr);
    CHECK(ml::ggml_row_bytes(id, 256) == -1);
    float y = 7.0f;
    ml::ggml_dequantize_row(id, "", &y, 1);  // writes nothing
    CHECK(y == 7.0f);
  }
  CHECK(ml::ggml_row_bytes(uint32_t(ml::GgmlBlockType::Q4_K), 4096) == 16 * 144);
  CHECK(ml::ggml_row_bytes(uint32_t(ml::GgmlBlockType::Q6_K), 256) == 210);
  CHECK(ml::ggml_row_bytes(uint32_t(ml::GgmlBlockType::Q5_1), 64) == 48);
  CHECK(ml::ggml_row_bytes(uint32_t(ml::GgmlBlockType::BF16), 3) == 6);
  CHECK(ml::ggml_row_bytes(uint32_t(ml::GgmlBlockType::Q4_K), 128) == -1);  // not a whole block
  CHECK(ml::ggml_row_bytes(uint32_t(ml::GgmlBlockType::Q8_0), -32) == -1);
  CHECK(std::string(ml::ggml_block_info(11)->name) == "Q3_K");
  uint32_t prev = 0;
  for (const ml::GgmlBlockInfo &t : ml::kGgmlBlockTypes) {  // id order; the GGUF container's table agrees
    INFO(t.name);
    CHECK((uint32_t(t.type) > prev || uint32_t(t.type) == 0));
    prev = uint32_t(t.type);
    const ml::GgmlType *g = ml::ggml_type(uint32_t(t.type));
    REQUIRE(g != nullptr);
    CHECK(std::string(g->name) == t.name);
    CHECK(g->block == uint32_t(t.block_elems));
    CHECK(g->bytes == uint32_t(t.block_bytes));
  }
}
