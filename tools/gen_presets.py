#!/usr/bin/python3
"""Writes CMakePresets.json and cmake/presets/*.json from the ISA table (simd/isa_table.h).

  tools/gen_presets.py           rewrite the preset files
  tools/gen_presets.py --check   exit 1 (with a diff) when a committed file differs from what this
                                 script writes (ctest presets.generated, scalar preset)

Every row of the ISA table gets a configure, build, test and workflow preset named after it
(underscores become hyphens: neon_dotprod -> neon-dotprod), in the file of its architecture's
family (x86, arm, riscv, wasm; scalar in CMakePresets.json). What the table cannot say — the
display name, the qemu binary and sysroot, the toolchain file, extra cache variables — is in the tables
below. The Windows presets (win-<isa>, cmake/presets/windows.json) are the x86 rows listed in
WINDOWS, cross-built with mingw-w64 and tested under Wine (docs/windows.md). The sanitizer presets
are not per ISA: they are written out as data here.

The order of the workflow presets is the order tools/test_matrix.sh runs them (the include order of
CMakePresets.json, then each file's order): scalar, x86, arm, riscv, wasm, sanitizers, windows.
Python 3 standard library only.
"""
import difflib
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROW = re.compile(r'X\(arg, *([a-z0-9_]+), *([a-z0-9_]+), *([a-z0-9_]+), *([a-z0-9_]+), *"([^"]*)", *"([^"]*)", *"([^"]*)", '
                 r'*"([^"]*)", *"([^"]*)"\)')

# ---- What the ISA table cannot say.
# Display names of the ISA rows' presets.
DISPLAY = {
    "scalar": "scalar reference (any CPU)",
    "sse2": "x86-64 v1: SSE2 (every x86-64 CPU); add from kernels/x86/sse2/add.S (ML_ASM)",
    "sse41": "x86-64 SSE4.1 (Penryn 2008+, Bulldozer)",
    "avx2": "x86-64 AVX2+FMA (Haswell 2013+, Zen)",
    "avxvnni": "x86-64 AVX-VNNI (Alder Lake 2021+, Zen 5)",
    "avx512vnni": "x86-64 AVX-512 VNNI (Cascade Lake 2019+, Ice Lake, Zen 4)",
    "neon_v7": "ARMv7-A NEON, hard float (Cortex-A7/A9/A15, Raspberry Pi 2/3 in 32-bit mode)",
    "neon": "AArch64 ARMv8-A NEON (every 64-bit ARM: Cortex-A53 and up)",
    "neon_dotprod": "AArch64 ARMv8.2-A + dotprod (Cortex-A55/A76+, Neoverse N1, Apple M1, Graviton2)",
    "sve": "AArch64 ARMv8.2-A + SVE + dotprod (Neoverse V1/N2, Graviton3); tests at 512-, 256- and 128-bit vectors",
    "wasm_simd128": "WebAssembly SIMD128 (Chrome 91+, Firefox 89+, Safari 16.4+, node 16+)",
    "rv64": "RISC-V rv64gc, scalar + Highway EMU128 (every 64-bit RISC-V Linux board)",
    "rvv": "RISC-V rv64gcv, RVV 1.0 (SpaceMiT X60/K1, Kendryte K230, SG2044); tests at 256-, 128- and 512-bit VLEN",
}
# Cross builds: the qemu-user and sysroot of each architecture. The emulator ctest runs every binary
# under is that qemu with the first CPU model of the row's run column (simd/isa_table.h).
QEMU = {"armv7": ("qemu-arm", "/usr/arm-linux-gnueabihf"), "aarch64": ("qemu-aarch64", "/usr/aarch64-linux-gnu"),
        "riscv64": ("qemu-riscv64", "/usr/riscv64-linux-gnu")}
# Cache variables a preset sets besides ML_ISA (and its emulator).
EXTRA_CACHE = {"sse2": {"ML_ASM": "ON"}}
# Linux presets whose programs are the downloads' (tools/package.sh): ML_PORTABLE=ON links them for
# old systems (cmake/Portable.cmake: static), so the matrix builds and tests what is packaged.
PORTABLE = {"ML_PORTABLE": "ON"}
PORTABLE_INHERITS = ("base", "arm-v7", "arm-a64", "riscv64")
# Per architecture: the hidden preset the row's preset inherits (its toolchain), and the presets file.
ARCH = {
    "any": {"inherits": "base", "file": None},
    "x86_64": {"inherits": "base", "file": "x86"},
    "armv7": {"inherits": "arm-v7", "file": "arm"},
    "aarch64": {"inherits": "arm-a64", "file": "arm"},
    "riscv64": {"inherits": "riscv64", "file": "riscv"},
    "wasm32": {"inherits": "wasm", "file": "wasm"},
}
# Hidden toolchain presets of each file: (name, toolchain file, cache variables or None).
HIDDEN = {
    "arm": [("arm-v7", "armhf.cmake", None), ("arm-a64", "aarch64.cmake", None)],
    "riscv": [("riscv64", "riscv64.cmake", None)],
    "wasm": [("wasm", "emscripten.cmake",
              {"ML_MMAP": "OFF", "ML_THREADS": "OFF", "ML_NATIVE_SCALAR_DIR": "${sourceDir}/build/scalar"})],
    "windows": [("win", "mingw64.cmake", {"CMAKE_CROSSCOMPILING_EMULATOR": "${sourceDir}/cmake/toolchains/wine_run.sh"})],
}
# Files whose build presets run 2 jobs (clang-16 and em++ take a lot of memory per job).
BUILD_JOBS = {"riscv": 2, "wasm": 2}
# wasm-scalar: the scalar row built with Emscripten (not a row of its own); wasm-simd128 compares
# against it.
WASM_SCALAR = ("wasm-scalar", "WebAssembly, no SIMD (every browser with WebAssembly; node)")
WASM_EXTRA = {"wasm_simd128": {"ML_WASM_SCALAR_DIR": "${sourceDir}/build/wasm-scalar",
                                "ML_WASM_THREADS_DIR": "${sourceDir}/build/wasm-simd128-threads"}}
# wasm-simd128-threads: the wasm_simd128 row with pthreads (cmake/wasm.cmake), before wasm-simd128 so
# that build's www/ serves its module too.
WASM_THREADS = ("wasm-simd128-threads", "wasm-simd128",
                "WebAssembly SIMD128 + pthreads (cross-origin-isolated pages; node 16+)",
                {"ML_THREADS": "ON", "ML_WASM_SCALAR_DIR": "", "ML_WASM_THREADS_DIR": ""})
# Windows x64 (mingw-w64 + Wine): these x86 rows, as win-<row>.
WINDOWS = ["sse2", "avx2", "avx512vnni"]
WINDOWS_DISPLAY = "Windows x64, {} (mingw-w64 cross build, tests under Wine)"
WINDOWS_NAME = {"sse2": "SSE2 (every x86-64 CPU)", "avx2": "AVX2+FMA (Haswell 2013+, Zen)",
                "avx512vnni": "AVX-512 VNNI (Cascade Lake 2019+, Ice Lake, Zen 4)"}
# One Wine prefix in the build tree for the three presets (a prefix is ~700 MB: Wine copies its DLLs
# into system32; created by the first start, ~3-7 s); WINEDEBUG=-all keeps Wine's fixme lines out of
# the test output.
WINDOWS_TEST_ENV = {"WINEPREFIX": "${sourceDir}/build/wineprefix", "WINEDEBUG": "-all"}
# File order = include order = workflow order (tools/test_matrix.sh).
FILES = ["base", "x86", "arm", "riscv", "wasm", "sanitizers", "windows"]

# The sanitizer presets (not per ISA), as data.
SANITIZERS = {
    "configurePresets": [
        {"name": "sanitize-base", "hidden": True, "inherits": "base",
         "cacheVariables": {"CMAKE_BUILD_TYPE": "RelWithDebInfo", "CMAKE_C_COMPILER": "clang",
                            "CMAKE_CXX_COMPILER": "clang++"}},
        {"name": "sanitize-avx2", "inherits": "sanitize-base",
         "displayName": "CI: ASan + LeakSanitizer + UBSan, AVX2 build (clang)",
         "cacheVariables": {"ML_ISA": "avx2", "ML_SANITIZE": "address,undefined"}},
        {"name": "fuzz", "inherits": "sanitize-base",
         "displayName": "CI: ASan + LeakSanitizer + UBSan, scalar reference, libFuzzer targets (clang): corpus "
                        "replay and 1 minute of fuzzing per target (the whole suite under ASan + UBSan: "
                        "sanitize-avx2)",
         "cacheVariables": {"ML_ISA": "scalar", "ML_SANITIZE": "address,undefined", "ML_FUZZ": "ON"}},
        {"name": "tsan", "inherits": "sanitize-base",
         "displayName": "CI: TSan, AVX2 build (clang): the thread pool (threads.pool) and its users (e2e.threads, e2e.batch, "
                        "e2e.random, e2e.panels, bench.decode at 2 threads, cli) and ml_server (server, server.load, server.openai)",
         "cacheVariables": {"ML_ISA": "avx2", "ML_SANITIZE": "thread"}},
    ],
    "buildPresets": [
        {"name": "sanitize-avx2", "configurePreset": "sanitize-avx2"},
        {"name": "fuzz", "configurePreset": "fuzz",
         "targets": [f"fuzz_{t}{r}" for t in ("mlb", "eval", "tokenizer", "encode", "chat", "gguf", "request") for r in ("", "_replay")]},
        {"name": "tsan", "configurePreset": "tsan", "targets": ["ml_tests", "ml_bench", "ml_run", "ml_tokenize", "ml_server"]},
    ],
    "testPresets": [
        {"name": "sanitize-test-base", "hidden": True, "inherits": "base",
         "environment": {
             "ASAN_OPTIONS": "detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:"
                             "check_initialization_order=1:strict_init_order=1",
             "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"},
         "execution": {"jobs": 2, "noTestsAction": "error", "timeout": 1800}},
        {"name": "sanitize-avx2", "inherits": "sanitize-test-base", "configurePreset": "sanitize-avx2"},
        {"name": "fuzz", "inherits": "sanitize-test-base", "configurePreset": "fuzz",
         "filter": {"include": {"name": "^fuzz\\."}}},
        {"name": "tsan", "inherits": "sanitize-test-base", "configurePreset": "tsan",
         "environment": {"TSAN_OPTIONS": "halt_on_error=1:abort_on_error=0:exitcode=66:second_deadlock_stack=1:"
                                         "history_size=4"},
         "filter": {"include": {"name": "^(e2e\\.(threads|batch|random|panels)|threads\\.pool|bench\\.decode|cli|server(\\..*)?)$"}}},
    ],
    "workflow": ["sanitize-avx2", "fuzz", "tsan"],
}

BASE = {
    "version": 6,
    "configurePresets": [{
        "name": "base", "hidden": True, "generator": "Ninja", "binaryDir": "${sourceDir}/build/${presetName}",
        "cacheVariables": {"CMAKE_BUILD_TYPE": "Release", "ML_SHARED_DIR": "${sourceDir}/../shared"}}],
    "testPresets": [{
        "name": "base", "hidden": True, "output": {"outputOnFailure": True, "shortProgress": True},
        "execution": {"jobs": 2, "noTestsAction": "error", "timeout": 900}}],
}


def isa_rows():
    with open(os.path.join(ROOT, "simd", "isa_table.h"), encoding="utf-8") as f:
        rows = [m.groups() for m in ROW.finditer(f.read())]
    if not rows:
        sys.exit("gen_presets.py: no rows in simd/isa_table.h")
    return [{"name": r[0], "arch": r[3], "run": r[7].split()} for r in rows]


def preset_name(isa):
    return isa.replace("_", "-")


def workflow(name):
    return {"name": name, "steps": [{"type": t, "name": name} for t in ("configure", "build", "test")]}


def build_preset(name, jobs=None):
    b = {"name": name, "configurePreset": name}
    if jobs:
        b["jobs"] = jobs
    return b


def emulator(row):
    """The preset's CMAKE_CROSSCOMPILING_EMULATOR (cross builds only), or None."""
    if row["arch"] not in QEMU:
        return None
    if not row["run"]:
        sys.exit("gen_presets.py: cross-built row %s has no run model (its preset's emulator)" % row["name"])
    qemu, sysroot = QEMU[row["arch"]]
    return ";".join([qemu, "-cpu", row["run"][0], "-L", sysroot])


def isa_configure(row, inherits, display, extra=None):
    isa = row["name"]
    cache = {"ML_ISA": isa}
    cache.update(EXTRA_CACHE.get(isa, {}))
    if inherits in PORTABLE_INHERITS:
        cache.update(PORTABLE)
    emu = emulator(row) if inherits != "win" else None
    if emu:
        cache["CMAKE_CROSSCOMPILING_EMULATOR"] = emu
    cache.update(extra or {})
    return {"name": preset_name(isa) if inherits != "win" else "win-" + preset_name(isa),
            "inherits": inherits, "displayName": display, "cacheVariables": cache}


def hidden(fam):
    out = []
    for name, toolchain, cache in HIDDEN.get(fam, []):
        p = {"name": name, "hidden": True, "inherits": "base", "toolchainFile": "${sourceDir}/cmake/toolchains/" + toolchain}
        if cache:
            p["cacheVariables"] = dict(cache)
        out.append(p)
    return out


def family_file(fam, configure, test_extra=None):
    """A presets file: the hidden presets, then per configure preset its build/test/workflow."""
    names = [c["name"] for c in configure]
    jobs = BUILD_JOBS.get(fam)
    tests = []
    for n in names:
        t = {"name": n, "inherits": "base", "configurePreset": n}
        t.update(test_extra or {})
        tests.append(t)
    return {
        "version": 6,
        "include": ["base.json"],
        "configurePresets": hidden(fam) + configure,
        "buildPresets": [build_preset(n, jobs) for n in names],
        "testPresets": tests,
        "workflowPresets": [workflow(n) for n in names],
    }


def generate():
    rows = isa_rows()
    by_file = {}
    for r in rows:
        fam = ARCH[r["arch"]]["file"]
        if fam is None and r["name"] != "scalar":
            sys.exit("gen_presets.py: row %s has arch `any` but is not scalar" % r["name"])
        by_file.setdefault(fam, []).append(r)
    files = {"base": BASE}
    for fam in ("x86", "arm", "riscv"):
        files[fam] = family_file(fam, [
            isa_configure(r, ARCH[r["arch"]]["inherits"], DISPLAY[r["name"]]) for r in by_file.get(fam, [])])
    wasm = [{"name": WASM_SCALAR[0], "inherits": "wasm", "displayName": WASM_SCALAR[1],
             "cacheVariables": {"ML_ISA": "scalar"}}]
    wasm.append({"name": WASM_THREADS[0], "inherits": WASM_THREADS[1], "displayName": WASM_THREADS[2],
                 "cacheVariables": dict(WASM_THREADS[3])})
    wasm += [isa_configure(r, "wasm", DISPLAY[r["name"]], WASM_EXTRA.get(r["name"]))
             for r in by_file.get("wasm", [])]
    files["wasm"] = family_file("wasm", wasm)
    x86 = {r["name"]: r for r in by_file.get("x86", [])}
    for w in WINDOWS:
        if w not in x86:
            sys.exit("gen_presets.py: WINDOWS names %s, not an x86_64 row of simd/isa_table.h" % w)
    win = []
    for w in WINDOWS:
        c = isa_configure(x86[w], "win", WINDOWS_DISPLAY.format(WINDOWS_NAME[w]))
        c["cacheVariables"].pop("ML_ASM", None)  # add.S is System V only (kernels/x86/sse2/asm.cmake)
        win.append(c)
    files["windows"] = family_file("windows", win, {"environment": dict(WINDOWS_TEST_ENV)})
    files["sanitizers"] = {
        "version": 6, "include": ["base.json"],
        "configurePresets": SANITIZERS["configurePresets"], "buildPresets": SANITIZERS["buildPresets"],
        "testPresets": SANITIZERS["testPresets"], "workflowPresets": [workflow(n) for n in SANITIZERS["workflow"]]}
    scalar = isa_configure(next(r for r in rows if r["name"] == "scalar"), "base", DISPLAY["scalar"])
    top = {
        "version": 6,
        "cmakeMinimumRequired": {"major": 3, "minor": 25, "patch": 0},
        "include": ["cmake/presets/%s.json" % f for f in FILES],
        "configurePresets": [scalar],
        "buildPresets": [build_preset("scalar")],
        "testPresets": [{"name": "scalar", "inherits": "base", "configurePreset": "scalar"}],
        "workflowPresets": [workflow("scalar")],
    }
    out = {"CMakePresets.json": top}
    for f in FILES:
        out["cmake/presets/%s.json" % f] = files[f]
    return {path: json.dumps(data, indent=2) + "\n" for path, data in out.items()}


def main(argv):
    check = argv[1:] == ["--check"]
    if argv[1:] and not check:
        sys.exit(__doc__)
    drift = 0
    for path, text in generate().items():
        full = os.path.join(ROOT, path)
        try:
            with open(full, encoding="utf-8") as f:
                old = f.read()
        except OSError:
            old = None
        if old == text:
            continue
        if check:
            drift += 1
            print("%s differs from tools/gen_presets.py's output (run tools/gen_presets.py):" % path)
            sys.stdout.writelines(difflib.unified_diff((old or "").splitlines(True), text.splitlines(True),
                                                       "committed/" + path, "generated/" + path))
        else:
            with open(full, "w", encoding="utf-8") as f:
                f.write(text)
            print("wrote", path)
    if check and drift:
        return 1
    if check:
        print("presets match tools/gen_presets.py (%d files)" % len(generate()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
