// Portability cases that run on every build, Linux and Windows (under Wine) alike:
//  - the CPU guard's refusal on a CPU presented by injected CPUID/XGETBV words (Wine and real
//    machines cannot hide a feature; qemu's CPU models test the real path on Linux, cmake/tests/x86.cmake);
//  - a model opened through a UTF-8 path with non-ASCII characters (Windows: converted to UTF-16
//    for CreateFileW, runtime/file_map.cc).
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "runtime/file_map.h"
#include "runtime/ml.h"
#include "simd/cpu_guard.h"
#include "simd/isa.h"
#include "verify/tests/common.h"

namespace {

// CPUID bits (Intel SDM vol. 2A, CPUID): written out here, independent of simd/cpu_guard.cc's table.
constexpr unsigned kL1dSse2 = 1u << 26;
constexpr unsigned kL1cSse3 = 1u << 0, kL1cSsse3 = 1u << 9, kL1cFma = 1u << 12, kL1cSse41 = 1u << 19,
                   kL1cSse42 = 1u << 20, kL1cPopcnt = 1u << 23, kL1cOsxsave = 1u << 27, kL1cAvx = 1u << 28,
                   kL1cF16c = 1u << 29;
constexpr unsigned kL7bBmi1 = 1u << 3, kL7bAvx2 = 1u << 5, kL7bBmi2 = 1u << 8, kL7bAvx512f = 1u << 16,
                   kL7bAvx512dq = 1u << 17, kL7bAvx512bw = 1u << 30, kL7bAvx512vl = 1u << 31;
constexpr unsigned kL7cAvx512vnni = 1u << 11, kL71aAvxVnni = 1u << 4;
constexpr unsigned long long kXcr0Avx = 0x7, kXcr0Avx512 = 0xE7;

ml::CpuX86 qemu64() {  // SSE2 + SSE3: the x86-64 v1 floor
  ml::CpuX86 c;
  c.l1d = kL1dSse2;
  c.l1c = kL1cSse3;
  return c;
}
ml::CpuX86 haswell() {  // AVX2 + FMA, no AVX-512, no AVX-VNNI; the OS saves YMM state
  ml::CpuX86 c = qemu64();
  c.l1c |= kL1cSsse3 | kL1cFma | kL1cSse41 | kL1cSse42 | kL1cPopcnt | kL1cOsxsave | kL1cAvx | kL1cF16c;
  c.l7b = kL7bBmi1 | kL7bAvx2 | kL7bBmi2;
  c.xcr0 = kXcr0Avx;
  return c;
}
ml::CpuX86 cascade_lake() {
  ml::CpuX86 c = haswell();
  c.l7b |= kL7bAvx512f | kL7bAvx512dq | kL7bAvx512bw | kL7bAvx512vl;
  c.l7c = kL7cAvx512vnni;
  c.xcr0 = kXcr0Avx512;
  return c;
}

std::string refusal(const ml::CpuX86 &cpu, const char *isa) {
  char msg[512] = "";
  return ml::cpu_guard_check_with(cpu, isa, msg, sizeof msg) ? std::string("accepted") : std::string(msg);
}

}  // namespace

TEST_CASE("guard: injected CPUID results lacking a feature are refused with one line", "[portability]") {
  CHECK(refusal(qemu64(), "sse2") == "accepted");
  CHECK(refusal(qemu64(), "scalar") == "accepted");
  CHECK(refusal(qemu64(), "avx2") ==
        "this build (avx2) needs SSSE3, SSE4.1, SSE4.2, POPCNT, AVX, AVX2, FMA, BMI1, BMI2, F16C, which this CPU "
        "lacks; use the sse2 build");
  CHECK(refusal(haswell(), "avx2") == "accepted");
  CHECK(refusal(haswell(), "avx512vnni") ==
        "this build (avx512vnni) needs AVX512F, AVX512BW, AVX512DQ, AVX512VL, AVX512-VNNI, which this CPU lacks; "
        "use the avx2 build");
  CHECK(refusal(haswell(), "avxvnni") == "this build (avxvnni) needs AVX-VNNI, which this CPU lacks; use the avx2 build");
  CHECK(refusal(cascade_lake(), "avx512vnni") == "accepted");
  ml::CpuX86 alder = haswell();
  alder.l71a = kL71aAvxVnni;
  CHECK(refusal(alder, "avxvnni") == "accepted");
  // The CPU has the bits but the OS does not save the wider registers: refused all the same.
  ml::CpuX86 no_ymm = haswell();
  no_ymm.xcr0 = 0x3;
  CHECK(refusal(no_ymm, "avx2") ==
        "this build (avx2) needs AVX, AVX2, FMA, F16C, which this CPU lacks; use the sse41 build");
  ml::CpuX86 no_zmm = cascade_lake();
  no_zmm.xcr0 = kXcr0Avx;
  CHECK(refusal(no_zmm, "avx512vnni").rfind("this build (avx512vnni) needs AVX512F, AVX512BW", 0) == 0);
}

TEST_CASE("guard: the real check is the injected check on this CPU's own words", "[portability]") {
  char a[512] = "", b[512] = "";
  const bool real = ml::cpu_guard_check(a, sizeof a);
  CHECK(real);  // this process is running: the guard let it
  if (std::strcmp(ml::host_arch(), "x86_64") == 0) {
    const char *isa = ml::isa_row(ml::kBuildIsa).name;
    CHECK(ml::cpu_guard_check_with(ml::cpu_x86_read(), isa, b, sizeof b) == real);
    CHECK(ml::cpu_guard_check_with(ml::cpu_x86_read(), ml::cpu_best_isa(), b, sizeof b));
    for (const char *f : {"SSE2", "AVX2", "AVX512F", "AVX-VNNI"})
      CHECK(ml::cpu_has_feature(f) == ml::cpu_x86_has(ml::cpu_x86_read(), f));
  }
}

TEST_CASE("a model opens through a UTF-8 path with non-ASCII characters", "[portability]") {
  namespace fs = std::filesystem;
  // "modèles ünï 模型 Ω/tiny ß.mlb": Latin-1, CJK and Greek letters, a space.
  const std::string dir = test::models("mod\xC3\xA8les \xC3\xBCn\xC3\xAF \xE6\xA8\xA1\xE5\x9E\x8B \xCE\xA9");
  const std::string path = dir + "/tiny \xC3\x9F.mlb";
  fs::create_directories(fs::u8path(dir));
  const std::string bytes = test::read_file(test::models("tiny_q8_0.mlb"));
  std::FILE *f = ml::fopen_utf8(path.c_str(), "wb");  // the programs' output path (runtime/file_map.h)
  REQUIRE(f != nullptr);
  REQUIRE(std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size());
  REQUIRE(std::fclose(f) == 0);
  ml_ctx *ctx = nullptr;
  INFO(ml_last_error());
  REQUIRE(ml_open(&ctx, path.c_str(), nullptr, nullptr) == ML_OK);
  ml_close(ctx);
  ctx = nullptr;
  const std::string missing = dir + "/absent \xC3\x9F.mlb";
  CHECK(ml_open(&ctx, missing.c_str(), nullptr, nullptr) == ML_E_IO);
  CHECK(std::string(ml_last_error()).find(missing) != std::string::npos);  // named as given, in UTF-8
}
