#!/usr/bin/python3
"""The CPU guard checks every feature the build's flags let the compiler use.

  flags_test.py FEATURES -- COMPILER FLAGS...

Asks the compiler which ISA macros its flags define (-dM -E), maps them to the feature words of
simd/isa_table.h, and compares with FEATURES (the ISA's features column): a feature the compiler
may use but the guard does not check would let the binary die of SIGILL on a CPU without it; a
checked feature the flags do not enable would refuse CPUs that could run the build. Features every
CPU of the architecture has (x86-64's SSE2, AArch64's ASIMD when the flags say nothing) are the
baseline and need no check.
"""
import subprocess
import sys

MACROS = {  # predefined macro -> feature word (simd/cpu_guard.cc's names)
    "__SSE3__": "SSE3", "__SSSE3__": "SSSE3", "__SSE4_1__": "SSE4.1", "__SSE4_2__": "SSE4.2",
    "__POPCNT__": "POPCNT", "__AVX__": "AVX", "__AVX2__": "AVX2", "__FMA__": "FMA", "__BMI__": "BMI1",
    "__BMI2__": "BMI2", "__F16C__": "F16C", "__AVXVNNI__": "AVX-VNNI", "__AVX512F__": "AVX512F",
    "__AVX512BW__": "AVX512BW", "__AVX512DQ__": "AVX512DQ", "__AVX512VL__": "AVX512VL",
    "__AVX512VNNI__": "AVX512-VNNI", "__AVX512CD__": "AVX512CD", "__LZCNT__": "LZCNT", "__AES__": "AES",
    "__PCLMUL__": "PCLMUL", "__SHA__": "SHA", "__MOVBE__": "MOVBE", "__AVX512VBMI__": "AVX512VBMI",
    "__ARM_FEATURE_DOTPROD": "ASIMDDP", "__ARM_FEATURE_SVE": "SVE", "__ARM_FEATURE_SVE2": "SVE2",
    "__ARM_FEATURE_CRC32": "CRC32", "__ARM_FEATURE_ATOMICS": "ATOMICS", "__ARM_FEATURE_QRDMX": "ASIMDRDM",
    "__ARM_FEATURE_FP16_SCALAR_ARITHMETIC": "FPHP", "__ARM_FEATURE_FP16_VECTOR_ARITHMETIC": "ASIMDHP",
    "__ARM_FEATURE_MATMUL_INT8": "I8MM", "__riscv_vector": "V", "__riscv_v": "V",
    # RISC-V extensions beyond rv64gc[v] that -march could add: AT_HWCAP has no bit for them (nor for
    # a minimum VLEN above V's 128), so adding one to the flags must fail here, not on a board.
    "__riscv_zba": "ZBA", "__riscv_zbb": "ZBB", "__riscv_zbc": "ZBC", "__riscv_zbs": "ZBS",
    "__riscv_zfh": "ZFH", "__riscv_zvfh": "ZVFH", "__riscv_zvl256b": "ZVL256B", "__riscv_zvl512b": "ZVL512B",
}
BASELINE = {"SSE2"}  # x86-64 v1: every x86-64 CPU has it


def main():
    sep = sys.argv.index("--")
    listed = set(" ".join(sys.argv[1:sep]).split())
    cmd = sys.argv[sep + 1:] + ["-dM", "-E", "-x", "c++", "/dev/null"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    defined = {line.split()[1] for line in out.splitlines() if line.startswith("#define ")}
    enabled = {f for m, f in MACROS.items() if m in defined}
    # NEON on 32-bit ARM is opt-in (-mfpu=neon): then it is a feature to check.
    if "__ARM_NEON" in defined and "__aarch64__" not in defined:
        enabled.add("NEON")
    if "__aarch64__" in defined and listed & {"ASIMD"}:
        enabled.add("ASIMD")  # listed explicitly: fine either way, it is the AArch64 baseline
    unchecked = sorted(enabled - listed - BASELINE)
    needless = sorted(listed - enabled - BASELINE - {"ASIMD"})
    print("flags enable:", " ".join(sorted(enabled)) or "(baseline only)")
    print("guard checks:", " ".join(sorted(listed)) or "(nothing)")
    if unchecked or needless:
        sys.exit("FAIL: enabled but not checked by the guard: %s; checked but not enabled by the flags: %s"
                 % (unchecked or "none", needless or "none"))


if __name__ == "__main__":
    main()
