// CPU feature detection for the guard. Compiled without ISA flags (CMake: ML_BASELINE sources).
//   x86-64: CPUID leaves 1 and 7, plus XGETBV: AVX-family features count only when the OS saves
//           YMM state (XCR0 bits 1-2), AVX-512 ones only when it also saves opmask/ZMM (bits 5-7).
//           Linux and Windows alike (GCC/Clang's <cpuid.h>, MSVC's <intrin.h>). The words are read
//           once into a CpuX86 and judged by cpu_x86_has(); cpu_guard_check_with() judges words a
//           test injects through the same code (verify/tests/test_portability.cc).
//   ARM:    getauxval(AT_HWCAP/AT_HWCAP2) on Linux.
//   RISC-V: getauxval(AT_HWCAP) bit 'V'.
#include "simd/cpu_guard.h"

#include <cstdio>
#include <cstring>

#include "simd/isa.h"

#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64) || defined(_M_IX86)
#define ML_GUARD_X86 1
#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>  // MSVC: __cpuid, __cpuidex, _xgetbv
#else
#include <cpuid.h>  // GCC and Clang, Linux and mingw-w64 alike
#endif
#elif defined(__linux__) && (defined(__aarch64__) || defined(__arm__) || defined(__riscv))
#include <sys/auxv.h>
#define ML_GUARD_AUXV 1
#endif

namespace ml {

namespace {

// One CPUID query (leaf, subleaf) -> eax, ebx, ecx, edx; false when the leaf is past the maximum.
#if defined(ML_GUARD_X86)
bool cpuid(unsigned leaf, unsigned sub, unsigned r[4]) {
#if defined(_MSC_VER) && !defined(__clang__)
  int v[4];
  __cpuid(v, static_cast<int>(leaf & 0x80000000u));
  if (static_cast<unsigned>(v[0]) < leaf) return false;
  __cpuidex(v, static_cast<int>(leaf), static_cast<int>(sub));
  for (int i = 0; i < 4; ++i) r[i] = static_cast<unsigned>(v[i]);
#else
  if (static_cast<unsigned>(__get_cpuid_max(leaf & 0x80000000u, nullptr)) < leaf) return false;  // int in clang's cpuid.h
  __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
#endif
  return true;
}

unsigned long long xgetbv0() {
#if defined(_MSC_VER) && !defined(__clang__)
  return _xgetbv(0);
#else
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));  // not _xgetbv: that needs -mxsave
  return (static_cast<unsigned long long>(hi) << 32) | lo;
#endif
}
#endif

bool os_avx(const CpuX86 &x) { return (x.xcr0 & 0x6) == 0x6; }
bool os_avx512(const CpuX86 &x) { return (x.xcr0 & 0xE6) == 0xE6; }

}  // namespace

CpuX86 cpu_x86_read() {
  CpuX86 x;
#if defined(ML_GUARD_X86)
  unsigned r[4];
  if (cpuid(1, 0, r)) {
    x.l1c = r[2];
    x.l1d = r[3];
  }
  if (cpuid(7, 0, r)) {
    x.l7b = r[1];
    x.l7c = r[2];
    if (cpuid(7, 1, r)) x.l71a = r[0];
  }
  if (x.l1c & (1u << 27)) x.xcr0 = xgetbv0();  // OSXSAVE: XGETBV is usable
#endif
  return x;
}

bool cpu_x86_has(const CpuX86 &x, const char *f) {
  struct Bit { const char *name; const unsigned *reg; int bit; int state; };  // state: 0 none, 1 AVX, 2 AVX-512
  const Bit bits[] = {
      {"SSE2", &x.l1d, 26, 0},      {"SSE3", &x.l1c, 0, 0},        {"SSSE3", &x.l1c, 9, 0},
      {"SSE4.1", &x.l1c, 19, 0},    {"SSE4.2", &x.l1c, 20, 0},     {"POPCNT", &x.l1c, 23, 0},
      {"AVX", &x.l1c, 28, 1},       {"FMA", &x.l1c, 12, 1},        {"F16C", &x.l1c, 29, 1},
      {"AVX2", &x.l7b, 5, 1},       {"BMI1", &x.l7b, 3, 0},        {"BMI2", &x.l7b, 8, 0},
      {"AVX512F", &x.l7b, 16, 2},   {"AVX512DQ", &x.l7b, 17, 2},   {"AVX512BW", &x.l7b, 30, 2},
      {"AVX512VL", &x.l7b, 31, 2},  {"AVX512-VNNI", &x.l7c, 11, 2}, {"AVX-VNNI", &x.l71a, 4, 1},
  };
  for (const Bit &b : bits)
    if (std::strcmp(b.name, f) == 0) {
      if (!((*b.reg >> b.bit) & 1u)) return false;
      if (b.state == 1) return os_avx(x);
      if (b.state == 2) return os_avx512(x);
      return true;
    }
  return false;
}

namespace {

#if defined(ML_GUARD_X86)
bool has(const char *f) {
  static const CpuX86 x = cpu_x86_read();  // plain data, compiled without ISA flags
  return cpu_x86_has(x, f);
}
#elif defined(ML_GUARD_AUXV)
bool has(const char *f) {
  const unsigned long hw = getauxval(AT_HWCAP);
#if defined(__aarch64__) || defined(__arm__)
  // Feature words are the kernel's /proc/cpuinfo names; bits from Linux's uapi <asm/hwcap.h>
  // (arch/arm64, arch/arm); word 1 = AT_HWCAP, word 2 = AT_HWCAP2.
  struct Bit { const char *name; int word; int bit; };
#if defined(__aarch64__)
  static const Bit bits[] = {
      {"FP", 1, 0},       {"ASIMD", 1, 1},     {"CRC32", 1, 7},    {"ATOMICS", 1, 8}, {"FPHP", 1, 9},
      {"ASIMDHP", 1, 10}, {"ASIMDRDM", 1, 12}, {"ASIMDDP", 1, 20}, {"SVE", 1, 22},    {"SVE2", 2, 1},
      {"I8MM", 2, 13},    {"BF16", 2, 14},
  };
#else
  static const Bit bits[] = {
      {"VFP", 1, 6},   {"NEON", 1, 12},  {"VFPv3", 1, 13}, {"VFPv4", 1, 16},
      {"IDIVA", 1, 17}, {"VFPD32", 1, 19},
  };
#endif
  for (const Bit &b : bits)
    if (!std::strcmp(b.name, f)) return ((b.word == 1 ? hw : getauxval(AT_HWCAP2)) >> b.bit) & 1ul;
#elif defined(__riscv)
  if (!std::strcmp(f, "V")) return hw & (1ul << ('V' - 'A'));
#endif
  return false;
}
#else
bool has(const char *) { return false; }  // no detection: only feature-free rows pass
#endif

// Calls f(word) for each space-separated word of list; stops when f returns false.
template <class F>
bool each_word(const char *list, F f) {
  char w[32];
  while (*list) {
    while (*list == ' ') ++list;
    size_t n = 0;
    while (list[n] && list[n] != ' ') ++n;
    if (n == 0) break;
    if (n >= sizeof w) n = sizeof w - 1;
    std::memcpy(w, list, n);
    w[n] = '\0';
    if (!f(w)) return false;
    list += n;
  }
  return true;
}

template <class Has>
bool supports(const IsaRow &row, Has has_f) {
  return each_word(row.features, [&](const char *w) { return has_f(w); });
}

// Last row of `arch` (or `any`) whose features has_f grants.
template <class Has>
const char *best_isa(const char *arch, Has has_f) {
  const char *best = nullptr;
  for (const IsaRow &r : kIsaTable)
    if ((std::strcmp(r.arch, arch) == 0 || std::strcmp(r.arch, "any") == 0) && supports(r, has_f)) best = r.name;
  return best;
}

// The guard's judgement of one row on one CPU (has_f), with best as the suggestion.
template <class Has>
bool check_row(const IsaRow &row, Has has_f, const char *arch, char *msg, size_t cap) {
  char missing[256] = "";
  each_word(row.features, [&](const char *w) {
    if (!has_f(w)) {
      if (missing[0]) std::strncat(missing, ", ", sizeof missing - std::strlen(missing) - 1);
      std::strncat(missing, w, sizeof missing - std::strlen(missing) - 1);
    }
    return true;
  });
  if (!missing[0]) return true;
  const char *best = best_isa(arch, has_f);
  std::snprintf(msg, cap, "this build (%s) needs %s, which this CPU lacks; use the %s build", row.name, missing,
                best ? best : "scalar");
  return false;
}

}  // namespace

bool cpu_has_feature(const char *name) { return has(name); }

const char *host_arch() {
#if defined(__x86_64__) || defined(_M_X64)
  return "x86_64";
#elif defined(__aarch64__) || defined(_M_ARM64)
  return "aarch64";
#elif defined(__arm__)
  return "armv7";
#elif defined(__riscv) && __riscv_xlen == 64
  return "riscv64";
#elif defined(__wasm__)
  return "wasm32";
#else
  return "any";
#endif
}

const char *cpu_best_isa() { return best_isa(host_arch(), [](const char *w) { return has(w); }); }

bool cpu_guard_check(char *msg, size_t cap) {
  return check_row(isa_row(kBuildIsa), [](const char *w) { return has(w); }, host_arch(), msg, cap);
}

bool cpu_guard_check_with(const CpuX86 &cpu, const char *isa, char *msg, size_t cap) {
  for (const IsaRow &r : kIsaTable)
    if (std::strcmp(r.name, isa) == 0)
      return check_row(r, [&](const char *w) { return cpu_x86_has(cpu, w); }, "x86_64", msg, cap);
  std::snprintf(msg, cap, "no ISA named %s in simd/isa_table.h", isa);
  return false;
}

}  // namespace ml
