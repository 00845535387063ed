#!/usr/bin/python3
"""The multi-ISA install, tested from outside (tools/test_matrix.sh install; issue 18).

  verify/install_test.py WORK
WORK (build/install-test) holds what tools/install.sh made: x86_64/ (the prefix), aarch64/ (the
AArch64 prefix, cross-built; optional) and deb/ (their .deb packages). Checks:

  launcher  the installed bin/ml_run under qemu-user CPU models picks the expected build (its
            --version line "started by the launcher: <isa> (...)" and the build's own "ISA <isa>")
            and prints llama2.c's golden stories260K text; ML_ISA forcing a build the CPU lacks
            gives that build's one-line refusal, exit 5, never a signal.
            qemu-user does not follow execve into the emulator (no binfmt_misc here), so every run
            sets ML_EXEC_WRAPPER to the same "qemu-<arch> -cpu <model>": the launcher execs the
            build through it, on the very CPU model it detected.
  consumer  verify/consumer (find_package(legacy_ml)) built against the prefix (default build and
            LEGACY_ML_ISA=avx2) and against one build's own `cmake --install` tree; the same C file
            built with `pkg-config --cflags --libs`; each prints the golden text.
  python    with tools/install.sh --python (PREFIX/lib/python): the binding under the same qemu CPU
            models loads the build the launcher would (legacy_ml.info()) and prints the golden text
            through Llama(...); ML_ISA forcing a build the CPU lacks is MLError status 5.
  deb       dpkg-deb -x of each .deb into a temporary root; its bin/ml_run prints the golden text.
Exit status 1 when any check failed; one line per check.
"""
import glob
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("ML_SHARED", os.path.join(SRC, "..", "shared"))
PROMPT = "Once upon a time"
AARCH64_SYSROOT = "/usr/aarch64-linux-gnu"
JOBS = int(os.environ.get("ML_JOBS", "2"))  # emulated runs at once (each single-threaded)

# (qemu CPU model, the build the launcher must choose). qemu-x86_64 7.2's `max` has AVX2 but neither
# AVX-512 nor AVX-VNNI (docs/toolchain.md; measured): its best is avx2.
X86_CPUS = [("qemu64", "sse2"), ("Nehalem", "sse41"), ("SandyBridge", "sse41"), ("Haswell", "avx2"), ("max", "avx2")]
X86_REFUSE = [("qemu64", "sse41"), ("Nehalem", "avx2"), ("Haswell", "avx512vnni")]
ARM_CPUS = [("cortex-a53", "neon"), ("cortex-a76", "neon_dotprod"), ("max,sve256=on", "sve")]
ARM_REFUSE = [("cortex-a53", "neon_dotprod"), ("cortex-a76", "sve")]

results = []


def check(name, ok, detail):
    results.append(ok)
    print("%-4s %-44s %s" % ("ok" if ok else "FAIL", name, detail), flush=True)


def run(cmd, env=None, timeout=600):
    e = dict(os.environ)
    e.pop("ML_ISA", None)
    e.pop("ML_EXEC_WRAPPER", None)
    e.update(env or {})
    return subprocess.run(cmd, capture_output=True, env=e, timeout=timeout)


def qemu(arch, cpu):
    cmd = ["qemu-%s" % arch, "-cpu", cpu]
    if arch == "aarch64":
        cmd += ["-L", AARCH64_SYSROOT]
    return cmd


def golden_args(model, tok):
    return [model, "-z", tok, "-n", "200", "--temp", "0", "-t", "1", "-i", PROMPT]


def launcher_checks(arch, prefix, cpus, refusals, model, tok, want):
    ml_run = os.path.join(prefix, "bin", "ml_run")

    def one(cpu, isa):
        q = qemu(arch, cpu)
        env = {"ML_EXEC_WRAPPER": " ".join(q)}
        r = run(q + [ml_run, "--version"], env)
        out = r.stdout.decode("utf-8", "replace")
        m = re.search(r"^started by the launcher: (\S+) \((.*)\)$", out, re.M)
        built = re.search(r"^legacy-ml ml_run, ISA (\S+)", out, re.M)
        chosen = m.group(1) if m else None
        t0 = time.time()
        g = run(q + [ml_run] + golden_args(model, tok), env)
        secs = time.time() - t0
        ok = (r.returncode == 0 and chosen == isa and built and built.group(1) == isa
              and g.returncode == 0 and g.stdout == want)
        detail = "chose %s, ran ISA %s, golden %s (%.1fs)" % (
            chosen, built.group(1) if built else None, "ok" if g.stdout == want else "DIFFERS", secs)
        if m:
            detail += "\n       why: %s" % m.group(2)
        if not ok:
            detail += "\n       exit %d/%d stderr %r" % (r.returncode, g.returncode, (r.stderr + g.stderr)[-600:])
        return "%s -cpu %s -> %s" % (arch, cpu, isa), ok, detail

    with ThreadPoolExecutor(JOBS) as pool:
        for name, ok, detail in pool.map(lambda c: one(*c), cpus):
            check(name, ok, detail)
    for cpu, isa in refusals:
        q = qemu(arch, cpu)
        r = run(q + [ml_run, "--version"], {"ML_EXEC_WRAPPER": " ".join(q), "ML_ISA": isa.replace("_", "-")})
        err = "".join(l for l in r.stderr.decode("utf-8", "replace").splitlines(True) if not l.startswith("qemu-"))
        pat = r"^ml_run: this build \(%s\) needs (.+), which this CPU lacks; use the (\w+) build\n$" % re.escape(isa)
        ok = r.returncode == 5 and re.match(pat, err) is not None and not r.stdout
        sig = " (killed by %s)" % signal.Signals(-r.returncode).name if r.returncode < 0 else ""
        check("%s -cpu %s ML_ISA=%s refused" % (arch, cpu, isa), ok, "exit %d%s: %s" % (r.returncode, sig, err.strip()))
    r = run([*qemu(arch, cpus[0][0]), ml_run, "--version"], {"ML_ISA": "nosuch"})
    check("%s ML_ISA=nosuch" % arch, r.returncode == 6 and b"ML_ISA=nosuch: no such build" in r.stderr,
          "exit %d: %s" % (r.returncode, r.stderr.decode().strip()))


PY_GOLDEN = """import sys, legacy_ml
try:
    i = legacy_ml.info()
except legacy_ml.MLError as e:
    print("refused", e.status, e.message); sys.exit(0)
llm = legacy_ml.Llama(sys.argv[1], tokenizer_path=sys.argv[2], n_ctx=0, n_threads=1, verbose=False)
out = llm("Once upon a time", max_tokens=196, temperature=0, echo=True)
sys.stdout.write(i["isa"] + "\\n" + out["choices"][0]["text"] + "\\n")
"""


def python_checks(arch, prefix, cpus, refusals, model, tok, want):
    site = os.path.join(prefix, "lib", "python")
    if not os.path.isdir(os.path.join(site, "legacy_ml")):
        return  # installed without --python
    py = ["/usr/bin/python3", "-c", PY_GOLDEN, model, tok]
    for cpu, isa in cpus:
        r = run(qemu(arch, cpu) + py, {"PYTHONPATH": site})
        chosen, _, text = r.stdout.partition(b"\n")
        ok = r.returncode == 0 and chosen.decode() == isa and text == want
        check("python %s -cpu %s" % (arch, cpu), ok, "chose %s (want %s), golden %s%s" % (
            chosen.decode(errors="replace")[:80], isa, "ok" if text == want else "DIFFERS",
            "" if ok else "\n       %r" % r.stderr[-600:]))
    for cpu, isa in refusals:
        r = run(qemu(arch, cpu) + py, {"PYTHONPATH": site, "ML_ISA": isa})
        ok = r.returncode == 0 and r.stdout.startswith(b"refused 5 ") and b"this CPU lacks" in r.stdout
        check("python %s -cpu %s ML_ISA=%s refused" % (arch, cpu, isa), ok, (r.stdout + r.stderr).decode(
            errors="replace").strip()[-200:])


def program_checks(prefix, tok):
    """The other launchers: each name starts its own program of the chosen build (natively)."""
    bin_dir = os.path.join(prefix, "bin")
    r = run([os.path.join(bin_dir, "ml_tokenize"), tok, "-i", PROMPT])
    check("x86_64 bin/ml_tokenize", r.returncode == 0 and r.stdout.strip() == b"1 403 407 261 378",
          "ids %r (want 1 403 407 261 378)%s" % (r.stdout.decode().strip(), "" if r.returncode == 0 else " " + r.stderr.decode()))
    for prog in ("ml_bench", "ml_server"):
        exe = os.path.join(bin_dir, prog)
        if prog == "ml_server" and not os.path.exists(exe):
            built = glob.glob(os.path.join(prefix, "libexec", "legacy-ml", "*", "bin", "ml_server"))
            check("x86_64 bin/ml_server", not built, "not built (no server in these builds)" if not built
                  else "the builds have ml_server but bin/ has no launcher for it")
            continue
        r = run([exe, "--help"])
        out = r.stdout.decode("utf-8", "replace")
        check("x86_64 bin/%s --help" % prog, r.returncode == 0 and prog in out,
              "exit %d: %s" % (r.returncode, out.splitlines()[0] if out else r.stderr.decode().strip()))


def consumer_checks(work, prefix, model, tok, want):
    cases = [("cmake: prefix (default build)", ["-DCMAKE_PREFIX_PATH=" + prefix], "sse2"),
             ("cmake: prefix, LEGACY_ML_ISA=avx2", ["-DCMAKE_PREFIX_PATH=" + prefix, "-DLEGACY_ML_ISA=avx2"], "avx2"),
             ("cmake: one build's cmake --install tree",
              ["-DCMAKE_PREFIX_PATH=" + os.path.join(prefix, "libexec", "legacy-ml", "avx512vnni")], "avx512vnni")]
    for i, (name, args, isa) in enumerate(cases):
        b = os.path.join(work, "consumer-%d" % i)
        c = run(["cmake", "-S", os.path.join(SRC, "verify", "consumer"), "-B", b, "--fresh"] + args)
        bld = run(["cmake", "--build", b]) if c.returncode == 0 else c
        g = run([os.path.join(b, "generate"), model, tok, "200", PROMPT]) if bld.returncode == 0 else bld
        m = re.search(rb"ISA (\S+) from", c.stdout)
        lib = re.search(rb"library ISA (\S+)", g.stderr)
        ok = (g.returncode == 0 and g.stdout == want and m and m.group(1).decode() == isa
              and lib and lib.group(1).decode() == isa)
        check("consumer %s" % name, ok, "LEGACY_ML_ISA %s, library ISA %s, golden %s%s" % (
            m.group(1).decode() if m else None, lib.group(1).decode() if lib else None,
            "ok" if g.stdout == want else "DIFFERS", "" if ok else "\n       %r" % (c.stdout + c.stderr + g.stderr)[-800:]))
    env = {"PKG_CONFIG_PATH": os.path.join(prefix, "lib", "pkgconfig")}
    for pc, isa in (("legacy-ml", "sse2"), ("legacy-ml-avx2", "avx2")):
        var = run(["pkg-config", "--variable=isa", pc], env).stdout.decode().strip()
        flags = run(["pkg-config", "--cflags", "--libs", pc], env)
        exe = os.path.join(work, "generate-" + pc)
        cc = run(["cc", "-O1", os.path.join(SRC, "verify", "consumer", "generate.c"), "-o", exe]
                 + shlex.split(flags.stdout.decode()))
        g = run([exe, model, tok, "200", PROMPT]) if cc.returncode == 0 else cc
        ok = flags.returncode == 0 and var == isa and g.returncode == 0 and g.stdout == want
        check("consumer pkg-config %s" % pc, ok, "isa=%s, golden %s%s" % (
            var, "ok" if g.stdout == want else "DIFFERS", "" if ok else "\n       %r" % (flags.stderr + cc.stderr + g.stderr)[-800:]))


def cross_consumer_checks(work, prefix, model, tok, want):
    """AArch64: the consumer cross-built against the AArch64 prefix (CMake with the project's
    toolchain file and legacy_ml_DIR; pkg-config with the cross compiler), run on cortex-a53."""
    q = qemu("aarch64", "cortex-a53")
    b = os.path.join(work, "consumer-aarch64")
    c = run(["cmake", "-S", os.path.join(SRC, "verify", "consumer"), "-B", b, "--fresh",
             "-DCMAKE_TOOLCHAIN_FILE=" + os.path.join(SRC, "cmake", "toolchains", "aarch64.cmake"),
             "-Dlegacy_ml_DIR=" + os.path.join(prefix, "lib", "cmake", "legacy_ml")])
    bld = run(["cmake", "--build", b]) if c.returncode == 0 else c
    g = run(q + [os.path.join(b, "generate"), model, tok, "200", PROMPT]) if bld.returncode == 0 else bld
    lib = re.search(rb"library ISA (\S+)", g.stderr)
    ok = g.returncode == 0 and g.stdout == want and lib and lib.group(1) == b"neon"
    check("consumer aarch64 cmake (cross), cortex-a53", ok, "library ISA %s, golden %s%s" % (
        lib.group(1).decode() if lib else None, "ok" if g.stdout == want else "DIFFERS",
        "" if ok else "\n       %r" % (c.stdout + c.stderr + bld.stdout + g.stderr)[-800:]))
    env = {"PKG_CONFIG_PATH": os.path.join(prefix, "lib", "pkgconfig"), "PKG_CONFIG_LIBDIR": ""}
    flags = run(["pkg-config", "--cflags", "--libs", "legacy-ml-neon_dotprod"], env)
    exe = os.path.join(work, "generate-aarch64-pc")
    cc = run(["aarch64-linux-gnu-gcc", "-O1", os.path.join(SRC, "verify", "consumer", "generate.c"), "-o", exe]
             + shlex.split(flags.stdout.decode()))
    q = qemu("aarch64", "cortex-a76")
    g = run(q + [exe, model, tok, "200", PROMPT]) if cc.returncode == 0 else cc
    lib = re.search(rb"library ISA (\S+)", g.stderr)
    ok = flags.returncode == 0 and g.returncode == 0 and g.stdout == want and lib and lib.group(1) == b"neon_dotprod"
    check("consumer aarch64 pkg-config (cross), cortex-a76", ok, "library ISA %s, golden %s%s" % (
        lib.group(1).decode() if lib else None, "ok" if g.stdout == want else "DIFFERS",
        "" if ok else "\n       %r" % (flags.stderr + cc.stderr + g.stderr)[-800:]))


def deb_checks(work, model, tok, want):
    debs = sorted(glob.glob(os.path.join(work, "deb", "*.deb")))
    if not debs:
        check("deb", False, "no .deb in %s/deb" % work)
    for deb in debs:
        with tempfile.TemporaryDirectory() as root:
            x = run(["dpkg-deb", "-x", deb, root])
            ml_run = os.path.join(root, "opt", "legacy-ml", "bin", "ml_run")
            arm = deb.endswith("_arm64.deb")
            q = qemu("aarch64", "cortex-a76") if arm else []
            env = {"ML_EXEC_WRAPPER": " ".join(q)} if q else {}
            v = run(q + [ml_run, "--version"], env)
            m = re.search(rb"^started by the launcher: (\S+)", v.stdout, re.M)
            g = run(q + [ml_run] + golden_args(model, tok), env)
            n = len(run(["dpkg-deb", "-c", deb]).stdout.splitlines())
            ok = x.returncode == 0 and m is not None and g.returncode == 0 and g.stdout == want
            check("deb %s" % os.path.basename(deb), ok, "%d entries; %s/opt/legacy-ml/bin/ml_run%s chose %s, golden %s%s" % (
                n, "<tmp>", " (qemu-aarch64 -cpu cortex-a76)" if arm else "", m.group(1).decode() if m else None,
                "ok" if g.stdout == want else "DIFFERS", "" if ok else "\n       %r" % (x.stderr + v.stderr + g.stderr)[-600:]))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    work = os.path.abspath(sys.argv[1])
    golden = os.path.join(SHARED, "golden", "once_upon_a_time.txt")
    src_model = os.path.join(SHARED, "models", "stories260K", "stories260K.bin")
    tok = os.path.join(SHARED, "models", "stories260K", "tok512.bin")
    for f in (golden, src_model, tok):
        if not os.path.exists(f):
            sys.exit("install_test: %s is absent (the shared test data); the install cannot be checked" % f)
    with open(golden, "rb") as f:
        want = f.read()
    model = os.path.join(work, "stories260K_f32.mlb")
    if not os.path.exists(model):
        c = run(["/usr/bin/python3", os.path.join(SRC, "tools", "convert.py"), src_model, model, "--wtype", "f32"])
        if c.returncode:
            sys.exit("install_test: converting stories260K failed: %s" % c.stderr.decode()[-800:])
    x86 = os.path.join(work, "x86_64")
    if os.path.isdir(x86):
        launcher_checks("x86_64", x86, X86_CPUS, X86_REFUSE, model, tok, want)
        program_checks(x86, tok)
        python_checks("x86_64", x86, X86_CPUS, X86_REFUSE, model, tok, want)
        consumer_checks(work, x86, model, tok, want)
    elif os.uname().machine == "x86_64":
        check("x86_64 prefix", False, "%s is absent" % x86)
    a64 = os.path.join(work, "aarch64")
    if os.path.isdir(a64):
        launcher_checks("aarch64", a64, ARM_CPUS, ARM_REFUSE, model, tok, want)
        if os.uname().machine == "x86_64":
            cross_consumer_checks(work, a64, model, tok, want)
    elif os.uname().machine == "aarch64":
        check("aarch64 prefix", False, "%s is absent" % a64)
    deb_checks(work, model, tok, want)
    print("install test: %d/%d checks passed" % (sum(results), len(results)))
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
