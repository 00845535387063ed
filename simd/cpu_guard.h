// The CPU guard: checks that this machine has every feature the build's ISA row lists
// (simd/isa_table.h) before any ISA-compiled code runs. This header and cpu_guard.cc are compiled
// WITHOUT ISA flags, and so is each executable's main (native/guarded_main.cc), which calls the
// guard first and only then enters ISA-compiled code.
#pragma once
#include <cstddef>

namespace ml {

// Returns true when the CPU (and OS, for AVX/AVX-512 register state) supports the build's ISA.
// Otherwise writes one line (no program name, no newline) to msg, e.g.
//   "this build (avx512vnni) needs AVX512-VNNI, which this CPU lacks; use the avx2 build"
bool cpu_guard_check(char *msg, size_t cap);

// True when the CPU has the named feature (a word of the features column). Unknown names: false.
bool cpu_has_feature(const char *name);

// Best ISA of this machine's architecture that the CPU supports: the last supported row of the
// table for host_arch() (rows are ordered from oldest to newest within an architecture).
const char *cpu_best_isa();
const char *host_arch();  // the architecture this file was compiled for, in the table's words

// x86 CPUID/XGETBV words the guard reads: leaf 1 ECX/EDX, leaf 7.0 EBX/ECX, leaf 7.1 EAX, XCR0.
// cpu_guard_check and cpu_has_feature read the real CPU through cpu_x86_read(); the *_with forms
// take the words from the caller, so a test can present a CPU that lacks a feature (Wine and real
// hardware cannot hide one). Every architecture has these (non-x86 builds: cpu_x86_read() gives
// zeros and the *_with forms still judge the x86 rows' features).
struct CpuX86 {
  unsigned l1c = 0, l1d = 0, l7b = 0, l7c = 0, l71a = 0;
  unsigned long long xcr0 = 0;
};
CpuX86 cpu_x86_read();
bool cpu_x86_has(const CpuX86 &cpu, const char *name);
// cpu_guard_check for the build ISA named isa, on the given CPU words (x86 feature names only).
bool cpu_guard_check_with(const CpuX86 &cpu, const char *isa, char *msg, size_t cap);

}  // namespace ml
