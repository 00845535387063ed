#!/usr/bin/python3
"""Checks the downloads tools/package.sh made (issue 37): tools/test_matrix.sh's pseudo-preset `package`.

  verify/package_test.py DIR        DIR: tools/package.sh's --out (default build/packages)

For each archive DIR/SHA256SUMS lists (the list itself checked with sha256sum -c):
  sums      unpacked into a fresh folder, its own SHA256SUMS holds for every file, and lists them all
  elf       Linux: every ELF (those inside the Python wheel too) is for the archive's architecture and either has no dynamic section
            (static) or needs only glibc's libraries; none asks for a kernel newer than 3.10 (riscv64: 4.15, its first) at symbol versions <= GLIBC_2.17 (riscv64:
            2.27, its first glibc) and no libstdc++ / libgcc_s versions; the names above the line
            are printed. The programs (bin/, libexec/) are static, ml_server among them; the wheel's
            libml_<isa>.so / libml_probe.so are dynamic (Python dlopens them)
  golden    Linux: from a fresh folder (the archive unpacked there, cwd there, no sysroot given to
            qemu), bin/ml_run under qemu-user with an old CPU model (x86-64 qemu64, AArch64
            cortex-a53, ARMv7 cortex-a7, rv64) prints llama2.c's stories260K text byte for byte
            (the launcher picks the build; ML_EXEC_WRAPPER runs it on the same model); ml_tokenize
            gives the golden run's prompt ids; ml_bench starts (--version names its ISA);
            bin/ml_server starts with --host localhost --port 0 and answers GET /health and a
            greedy completion with the golden text's start, stops on SIGTERM with status 0, and
            refuses a host name in one line (status 6)
  wheel     Linux: the archive has one python/legacy_ml-*.whl tagged for its architecture (ARMv7:
            linux_armv7l, as pip on a Raspberry Pi asks) carrying libml_probe.so and one
            libml_<isa>.so per build in libexec/ (its libraries pass `elf`). x86-64: installed by pip
            (offline) into a fresh folder; Python under qemu-x86_64 -cpu qemu64 loads it (the package
            picks a build the old CPU runs) and prints llama2.c's golden text through
            Llama(...)(...). Elsewhere no Python of that architecture is here to run it
            (ctest python.glibc_compat runs the same link's probe under qemu in those presets)
  win7      Windows: every .exe imports only DLLs Windows 7 SP1 has and none of the functions in
            NEWER (introduced after Windows 7), and its PE header asks for an OS <= 6.1
  winwheel  Windows: one python/legacy_ml-*-py3-none-win_amd64.whl carrying the probe and one ISA DLL
            per build folder, named as the wheel's own _native.py (LIBRARY_NAMES["nt"]) loads them;
            each DLL passes `win7`; ml_<isa>.dll exports every function _native.py binds and nothing
            that runtime/ml.h or structured/ml_structured.h does not declare, ml_probe.dll exactly
            the probe functions _native.py binds. verify/dll_smoke.c, compiled here by
            x86_64-w64-mingw32-gcc, loads the wheel's DLLs under Wine as _native.py would (the
            probe's choice; then ML_ISA=sse2) and prints llama2.c's golden text through the session
            API (no Windows Python here: the Python half itself is not run on Windows)
Exit status: 0 when every check passed, 1 otherwise, 77 when DIR has no SHA256SUMS or the model is
missing (the skip is listed in verify/allowed_skips.txt only if it may happen in CI).
"""
import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("ML_SHARED", os.path.join(SRC, "..", "shared"))
MODEL = os.path.join(SHARED, "models", "stories260K", "stories260K.gguf")
GOLDEN = os.path.join(SHARED, "golden", "once_upon_a_time.txt")
TOKENS = os.path.join(SHARED, "golden", "once_upon_a_time.tokens")
PROMPT = "Once upon a time"

# Per Linux target: readelf's Machine, the qemu-user and old CPU model, the glibc line.
LINUX = {
    "linux-x86_64": ("Advanced Micro Devices X86-64", ["qemu-x86_64", "-cpu", "qemu64"], (2, 17)),
    "linux-aarch64": ("AArch64", ["qemu-aarch64", "-cpu", "cortex-a53"], (2, 17)),
    "linux-armv7": ("ARM", ["qemu-arm", "-cpu", "cortex-a7"], (2, 17)),
    "linux-riscv64": ("RISC-V", ["qemu-riscv64", "-cpu", "rv64"], (2, 27)),  # glibc's first RISC-V release
}
# The oldest kernel an ELF may ask for (its NT_GNU_ABI_TAG note): CentOS 7's 3.10 (Debian 12's glibc
# says 3.2); on RISC-V 4.15, the first Linux that runs RISC-V programs at all (glibc says 4.15 there).
KERNEL = (3, 10)
# The wheel's platform tag per Linux target: pip's own name of the machine (uname -m).
WHEEL_ARCH = {"linux-x86_64": "x86_64", "linux-aarch64": "aarch64", "linux-armv7": "armv7l", "linux-riscv64": "riscv64"}
KERNEL_BY_MACHINE = {"RISC-V": (4, 15)}
# Libraries a dynamic ELF (the Python wheel's) may need: glibc's own.
GLIBC_LIBS = re.compile(r"^(libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|ld-linux[-\w.]*\.so\.\d|ld-linux\.so\.3)$")

# Windows: the stated minimum is Windows 7 SP1 (NT 6.1). DLLs it has, and Win32 functions that
# came later (Microsoft's "Minimum supported client" of each), which the .exe must not import.
WIN_DLLS = {"kernel32.dll", "msvcrt.dll", "winhttp.dll", "advapi32.dll", "shell32.dll", "user32.dll",
            "ws2_32.dll", "ole32.dll", "bcrypt.dll", "crypt32.dll", "shlwapi.dll"}
NEWER = {
    "GetSystemTimePreciseAsFileTime": "Windows 8", "CreateFile2": "Windows 8",
    "GetCurrentThreadStackLimits": "Windows 8", "WaitOnAddress": "Windows 8",
    "WakeByAddressSingle": "Windows 8", "WakeByAddressAll": "Windows 8",
    "PrefetchVirtualMemory": "Windows 8", "InitializeSynchronizationBarrier": "Windows 8",
    "EnterSynchronizationBarrier": "Windows 8", "DeleteSynchronizationBarrier": "Windows 8",
    "CreateFileMappingFromApp": "Windows 8", "MapViewOfFileFromApp": "Windows 8",
    "GetOverlappedResultEx": "Windows 8", "SetThreadInformation": "Windows 8",
    "GetThreadInformation": "Windows 8", "GetProcessInformation": "Windows 8",
    "SetProcessInformation": "Windows 8", "GetProcessMitigationPolicy": "Windows 8",
    "SetProcessMitigationPolicy": "Windows 8", "GetFirmwareType": "Windows 8",
    "GetCurrentPackageId": "Windows 8", "GetPackageFamilyName": "Windows 8",
    "WinHttpCreateProxyResolver": "Windows 8", "WinHttpGetProxyForUrlEx": "Windows 8",
    "WinHttpWebSocketCompleteUpgrade": "Windows 8",
    "DiscardVirtualMemory": "Windows 8.1", "OfferVirtualMemory": "Windows 8.1",
    "ReclaimVirtualMemory": "Windows 8.1", "SetThreadDescription": "Windows 10 1607",
    "GetThreadDescription": "Windows 10 1607", "VirtualAlloc2": "Windows 10 1803",
    "MapViewOfFile3": "Windows 10 1803", "GetSystemCpuSetInformation": "Windows 10",
    "SetThreadSelectedCpuSets": "Windows 10", "QueryUnbiasedInterruptTimePrecise": "Windows 10",
    "CompareObjectHandles": "Windows 10", "ProcessPrng": "Windows 10",
    "GetFileInformationByName": "Windows 11", "GetTempPath2A": "Windows 11", "GetTempPath2W": "Windows 11",
}

results = []


def check(name, ok, detail):
    results.append(ok)
    print("%-4s %-40s %s" % ("ok" if ok else "FAIL", name, detail), flush=True)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read_sums(path):
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                digest, name = line.rstrip("\n").split(None, 1)
                out[name.lstrip("*")] = digest
    return out


def unpack(archive, dest):
    if archive.endswith(".zip"):
        with zipfile.ZipFile(archive) as z:
            z.extractall(dest)
            for info in z.infolist():  # zipfile drops the mode bits
                mode = (info.external_attr >> 16) & 0o777
                if mode:
                    os.chmod(os.path.join(dest, info.filename), mode)
    else:
        with tarfile.open(archive) as t:
            t.extractall(dest)
    (top,) = os.listdir(dest)
    return os.path.join(dest, top)


def files_below(root):
    for d, _, names in os.walk(root):
        for n in names:
            yield os.path.relpath(os.path.join(d, n), root)


def check_sums(label, root):
    sums = read_sums(os.path.join(root, "SHA256SUMS"))
    listed = set(sums)
    present = {f for f in files_below(root) if f != "SHA256SUMS"}
    bad = [f for f in sorted(listed & present) if sha256(os.path.join(root, f)) != sums[f]]
    ok = listed == present and not bad
    check(label + " sums", ok, "%d files%s%s%s" % (
        len(present), "; unlisted: " + " ".join(sorted(present - listed)) if present - listed else "",
        "; missing: " + " ".join(sorted(listed - present)) if listed - present else "",
        "; wrong: " + " ".join(bad) if bad else ""))


def readelf(*args):
    return subprocess.run(["readelf", "-W", *args], capture_output=True, text=True, check=True).stdout


def elf_problems(path, machine, line):
    """(problems, "static" or "dynamic") of one ELF against the archive's machine and glibc line."""
    m = re.search(r"Machine:\s+(.+)", readelf("-h", path)).group(1).strip()
    problems = [] if m == machine else ["machine %s, not %s" % (m, machine)]
    abi = re.search(r"OS: Linux, ABI: (\d+)\.(\d+)", readelf("-n", path))  # the oldest kernel it runs on
    kernel = KERNEL_BY_MACHINE.get(machine, KERNEL)
    if abi and (int(abi.group(1)), int(abi.group(2))) > kernel:
        problems.append("needs Linux %s.%s, newer than %d.%d" % (abi.group(1), abi.group(2), *kernel))
    dyn = readelf("-d", path)
    if "There is no dynamic section" in dyn:
        return problems, "static"
    for lib in re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dyn):
        if not GLIBC_LIBS.match(lib):
            problems.append("needs " + lib)
    over = set()
    for v in re.findall(r"Name: (\S+)", readelf("-V", path)):
        g = re.match(r"GLIBC_(\d+)\.(\d+)(?:\.\d+)?$", v)
        if g and (int(g.group(1)), int(g.group(2))) > line:
            over.add(v)
        elif re.match(r"(GLIBCXX|CXXABI|GCC)_", v):
            over.add(v)
    if over:
        problems.append("symbol versions above GLIBC_%d.%d: %s" % (*line, " ".join(sorted(over))))
    return problems, "dynamic"


def check_elfs(label, root, machine, line):
    # The Python wheels' shared libraries too: each .whl (a zip) unpacked beside the archive's files.
    wheels = os.path.join(root, "..", "wheels-unpacked")
    for rel in sorted(files_below(root)):
        if rel.endswith(".whl"):
            with zipfile.ZipFile(os.path.join(root, rel)) as z:
                z.extractall(os.path.join(wheels, rel))
    n = 0
    paths = [(rel, os.path.join(root, rel)) for rel in sorted(files_below(root))]
    if os.path.isdir(wheels):
        paths += [(os.path.join("(wheel)", rel), os.path.join(wheels, rel)) for rel in sorted(files_below(wheels))]
    for rel, path in paths:
        with open(path, "rb") as f:
            if f.read(4) != b"\x7fELF":
                continue
        n += 1
        problems, kind = elf_problems(path, machine, line)
        if rel.startswith(("bin/", "libexec/")) and kind != "static":
            problems.append("a program, not static")
        check("%s elf %s" % (label, rel), not problems, "; ".join(problems) or kind)
    check(label + " elf count", n > 0, "%d ELF files" % n)


def run(cmd, cwd, env=None, timeout=600):
    e = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": cwd, "LANG": "C"}  # a bare environment
    e.update(env or {})
    return subprocess.run(cmd, cwd=cwd, capture_output=True, env=e, timeout=timeout)


def check_runs(label, root, qemu):
    with open(GOLDEN, "rb") as f:
        golden = f.read()
    with open(TOKENS) as f:
        prompt_ids = f.read().split()[:5]  # BOS + "Once upon a time"
    wrap = {"ML_EXEC_WRAPPER": " ".join(qemu)}
    cpu = qemu[2]
    r = run(qemu + ["bin/ml_run", MODEL, "-n", "200", "--temp", "0", "-t", "1", "-i", PROMPT], root, wrap)
    check("%s golden on %s" % (label, cpu), r.returncode == 0 and r.stdout == golden,
          "exit %d, %s" % (r.returncode, "golden text" if r.stdout == golden else
                           "stdout %r, stderr %r" % (r.stdout[:120], r.stderr[-300:])))
    r = run(qemu + ["bin/ml_tokenize", MODEL, "-i", PROMPT], root, wrap)
    ids = re.findall(rb"\d+", r.stdout)
    got = [i.decode() for i in ids[:5]]
    check("%s ml_tokenize on %s" % (label, cpu), r.returncode == 0 and got == prompt_ids,
          "exit %d, ids %s (want %s)" % (r.returncode, " ".join(got), " ".join(prompt_ids)))
    r = run(qemu + ["bin/ml_bench", "--version"], root, wrap)
    isa = re.search(rb"ISA (\S+)", r.stdout)
    check("%s ml_bench on %s" % (label, cpu), r.returncode == 0 and isa is not None,
          "exit %d, %s" % (r.returncode, isa.group(0).decode() if isa else r.stderr[-200:]))


def check_server(label, root, qemu):
    """bin/ml_server under qemu: starts on a free port of localhost, /health, a greedy completion,
    SIGTERM; a host name refused."""
    import json
    import signal
    import urllib.request
    cpu = qemu[2]
    prog = os.path.join(root, "bin", "ml_server")
    if not os.path.exists(prog):
        check("%s ml_server on %s" % (label, cpu), False, "no bin/ml_server")
        return
    e = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": root, "LANG": "C", "ML_EXEC_WRAPPER": " ".join(qemu)}
    r = run(qemu + ["bin/ml_server", MODEL, "--host", "example.invalid"], root, {"ML_EXEC_WRAPPER": " ".join(qemu)}, 120)
    err = r.stderr.decode("utf-8", "replace")
    check("%s ml_server refuses a host name" % label, r.returncode == 6 and err.count("\n") == 1 and "numeric" in err,
          "exit %d, %r" % (r.returncode, err[-200:]))
    p = subprocess.Popen(qemu + ["bin/ml_server", MODEL, "--host", "localhost", "--port", "0", "-t", "1"], cwd=root,
                         env=e, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    port, lines = None, []
    try:
        for raw in p.stderr:
            lines.append(raw.decode("utf-8", "replace"))
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", lines[-1])
            if m:
                port = int(m.group(1))
                break
        ok, detail = port is not None, "no listening line: %r" % "".join(lines)[-300:]
        if ok:
            base = "http://127.0.0.1:%d" % port
            with urllib.request.urlopen(base + "/health", timeout=60) as resp:
                health = json.loads(resp.read())
            req = urllib.request.Request(base + "/v1/completions", data=json.dumps(
                {"prompt": PROMPT, "max_tokens": 20, "temperature": 0}).encode(), headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=120) as resp:
                text = json.loads(resp.read())["choices"][0]["text"]
            with open(GOLDEN, encoding="utf-8") as f:
                golden = f.read()
            ok = health.get("status") == "ok" and len(text) > 20 and golden.startswith(PROMPT + text)
            detail = "port %d, /health %s, completion %r" % (port, health.get("status"), text[:40])
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=60)
        check("%s ml_server on %s" % (label, cpu), ok and rc == 0, "%s; exit %d after SIGTERM" % (detail, rc))
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def check_wheel(label, root, qemu):
    """The archive's wheel: present with a library per build; on x86-64 installed into a fresh folder
    and run under qemu."""
    pydir = os.path.join(root, "python")
    wheels = sorted(f for f in os.listdir(pydir) if f.endswith(".whl")) if os.path.isdir(pydir) else []
    arch = WHEEL_ARCH[label]
    tag_ok = len(wheels) == 1 and wheels[0].startswith("legacy_ml-") and wheels[0].endswith("-linux_%s.whl" % arch)
    check("%s wheel present" % label, tag_ok, " ".join(wheels) or "no python/*.whl")
    if not tag_ok:
        return
    builds = os.listdir(os.path.join(root, "libexec", "legacy-ml"))
    want = sorted(["libml_probe.so"] + ["libml_%s.so" % isa for isa in builds])
    with zipfile.ZipFile(os.path.join(pydir, wheels[0])) as z:
        libs = sorted(os.path.basename(n) for n in z.namelist() if re.match(r"legacy_ml/lib/libml_\w+\.so$", n))
    check("%s wheel libraries" % label, libs == want, "%s (want %s)" % (" ".join(libs), " ".join(want)))
    if arch != "x86_64":
        return
    site = os.path.join(root, "..", "wheel-site")
    r = run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", site,
             os.path.join(pydir, wheels[0])], root, {"PIP_NO_CACHE_DIR": "1", "PIP_ROOT_USER_ACTION": "ignore"})
    check("%s wheel installs" % label, r.returncode == 0, "exit %d %s" % (r.returncode, r.stderr[-300:]))
    if r.returncode != 0:
        return
    code = ("import sys, legacy_ml\n"
            "llm = legacy_ml.Llama(sys.argv[1], verbose=False)\n"
            "out = llm(%r, max_tokens=196, temperature=0, echo=True)\n"  # run.c -n 200: 196 sampled
            "sys.stdout.buffer.write(out['choices'][0]['text'].encode('utf-8') + b'\\n')\n"  # run.c ends with one
            "sys.stderr.write(legacy_ml.info()['isa'])\n" % PROMPT)
    with open(GOLDEN, "rb") as f:
        golden = f.read()
    r = run(qemu + [sys.executable, "-c", code, MODEL], root, {"PYTHONPATH": os.path.abspath(site)})
    check("%s wheel golden on %s" % (label, qemu[2]), r.returncode == 0 and r.stdout == golden,
          "exit %d, build %s, %s" % (r.returncode, r.stderr[-300:].decode("utf-8", "replace"),
                                     "golden text" if r.stdout == golden else "stdout %r" % r.stdout[:120]))


def win_problems(p):
    """(problems, dlls, functions) of one .exe or .dll from `objdump -p`'s text, against Windows 7 SP1."""
    problems = []
    for field in ("MajorOSystemVersion", "MajorSubsystemVersion"):
        major = re.search(field + r"\s+(\d+)", p)
        minor = re.search(field.replace("Major", "Minor") + r"\s+(\d+)", p)
        if major and minor and (int(major.group(1)), int(minor.group(1))) > (6, 1):
            problems.append("%s %s.%s > 6.1" % (field, major.group(1), minor.group(1)))
    dlls = [d.lower() for d in re.findall(r"DLL Name: (\S+)", p)]
    problems += ["imports %s" % d for d in dlls if d not in WIN_DLLS]
    imports = re.search(r"^The Import Tables.*?(?=^The |^PE File|\Z)", p, re.M | re.S)
    funcs = set(re.findall(r"^\s+[0-9a-f]+\s+(?:\d+\s+)?([A-Za-z_]\w*)$", imports.group(0) if imports else "", re.M))
    problems += ["imports %s (%s)" % (f, NEWER[f]) for f in sorted(funcs & set(NEWER))]
    return problems, dlls, funcs


# The Windows check itself fails where it must: an import table with a Windows 8 function and the
# Universal CRT (not on a bare Windows 7), a header asking for Windows 10.
WIN_PROBE = """MajorOSystemVersion\t10
MinorOSystemVersion\t0
The Import Tables (interpreted .idata section contents)
\tDLL Name: KERNEL32.dll
\t21e84\t  705  GetSystemTimePreciseAsFileTime
\t21e98\t  712  GetTickCount64
\tDLL Name: api-ms-win-crt-runtime-l1-1-0.dll
\t21f00\t   12  _initterm
The Function Table (interpreted .pdata section contents)
"""


def check_windows(label, root):
    problems, _, _ = win_problems(WIN_PROBE)
    want = ["MajorOSystemVersion 10.0 > 6.1", "imports api-ms-win-crt-runtime-l1-1-0.dll",
            "imports GetSystemTimePreciseAsFileTime (Windows 8)"]
    check(label + " win7 check refuses a probe", problems == want, "; ".join(problems))
    n = 0
    for rel in sorted(files_below(root)):
        if not rel.endswith(".exe"):
            continue
        n += 1
        problems, dlls, funcs = win_problems(objdump_p(os.path.join(root, rel)))
        check("%s win7 %s" % (label, rel), bool(not problems and dlls and funcs),
              "; ".join(problems) or "%d functions from %s" % (len(funcs), " ".join(sorted(set(dlls)))))
    check(label + " exe count", n > 0, "%d .exe files" % n)


def objdump_p(path):
    return subprocess.run(["x86_64-w64-mingw32-objdump", "-p", path], capture_output=True, text=True, check=True).stdout


def win_exports(p):
    """The names of a DLL's export table, from `objdump -p`'s text."""
    table = re.search(r"^\[Ordinal/Name Pointer\] Table.*?(?=^\S|\Z)", p, re.M | re.S)
    return set(re.findall(r"^\s+\[\s*\d+\]\s+(\S+)$", table.group(0) if table else "", re.M))


def c_api_names():
    """Every ml_* name the C API's headers mention: what a DLL may export."""
    names = set()
    for h in ("runtime/ml.h", "structured/ml_structured.h"):
        with open(os.path.join(SRC, h), encoding="utf-8") as f:
            names |= set(re.findall(r"\b(ml_\w+)\s*\(", f.read()))
    return names


def check_windows_wheel(label, root):
    """The zip's Python wheel: its DLLs against _native.py's names, Windows 7 and the C API; then
    verify/dll_smoke.c runs them under Wine."""
    pydir = os.path.join(root, "python")
    wheels = sorted(f for f in os.listdir(pydir) if f.endswith(".whl")) if os.path.isdir(pydir) else []
    ok = len(wheels) == 1 and wheels[0].startswith("legacy_ml-") and wheels[0].endswith("-py3-none-win_amd64.whl")
    check("%s wheel present" % label, ok, " ".join(wheels) or "no python/*.whl")
    if not ok:
        return
    site = os.path.join(root, "..", "win-wheel")
    with zipfile.ZipFile(os.path.join(pydir, wheels[0])) as z:
        z.extractall(site)
    spec = importlib.util.spec_from_file_location("wheel_native", os.path.join(site, "legacy_ml", "_native.py"))
    native = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(native)  # its tables only (ctypes loads nothing at import)
    isa_library, probe_library = native.LIBRARY_NAMES["nt"]
    builds = sorted(d for d in os.listdir(root) if os.path.exists(os.path.join(root, d, "ml_run.exe")))
    lib = os.path.join(site, "legacy_ml", "lib")
    have = sorted(os.listdir(lib)) if os.path.isdir(lib) else []
    want = sorted([probe_library] + [isa_library % b for b in builds])
    check("%s wheel libraries" % label, have == want and native.installed_isas(have, isa_library, probe_library) == builds,
          "%s (want %s; _native.py reads builds %s)" % (" ".join(have), " ".join(want),
                                                          " ".join(native.installed_isas(have, isa_library, probe_library))))
    api = c_api_names()
    for name in have:
        p = objdump_p(os.path.join(lib, name))
        problems, dlls, funcs = win_problems(p)
        check("%s win7 (wheel) %s" % (label, name), bool(not problems and dlls and funcs),
              "; ".join(problems) or "%d functions from %s" % (len(funcs), " ".join(sorted(set(dlls)))))
        exports = win_exports(p)
        if name == probe_library:
            bound, allowed = set(native._PROBE_PROTOTYPES), set(native._PROBE_PROTOTYPES)
        else:
            bound, allowed = set(native._PROTOTYPES), api
        missing, extra = sorted(bound - exports), sorted(exports - allowed)
        check("%s exports %s" % (label, name), bool(exports) and not missing and not extra,
              "%d exported%s%s" % (len(exports), "; not exported: " + " ".join(missing) if missing else "",
                                   "; unexpected: " + " ".join(extra[:20]) if extra else ""))
    gcc = shutil.which("x86_64-w64-mingw32-gcc")
    if not gcc:
        check("%s dll_smoke" % label, False, "no x86_64-w64-mingw32-gcc here to compile verify/dll_smoke.c")
        return
    exe = os.path.join(root, "..", "dll_smoke.exe")
    r = subprocess.run([gcc, "-O1", "-std=gnu11", "-Wall", "-Werror", "-static", "-I", SRC,
                        os.path.join(SRC, "verify", "dll_smoke.c"), "-o", exe], capture_output=True, text=True)
    check("%s dll_smoke compiles" % label, r.returncode == 0, r.stderr[-300:] or exe)
    if r.returncode != 0:
        return
    wine = {"WINEPREFIX": os.environ.get("WINEPREFIX", os.path.join(SRC, "build", "wineprefix")), "WINEDEBUG": "-all"}
    for forced in (None, "sse2"):
        env = dict(wine, ML_ISA=forced) if forced else wine
        r = run([os.path.join(SRC, "cmake", "toolchains", "wine_run.sh"), exe, lib, MODEL, GOLDEN], root, env, 300)
        err = r.stderr.decode("utf-8", "replace")
        chosen = re.search(r"^build (\S+)", err, re.M)
        ok = r.returncode == 0 and chosen is not None and (forced is None or chosen.group(1) == forced)
        check("%s dll_smoke golden%s" % (label, " ML_ISA=" + forced if forced else ""), ok,
              "exit %d; %s" % (r.returncode, " | ".join(err.strip().splitlines()[-3:])))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(SRC, "build", "packages")
    sums = os.path.join(out, "SHA256SUMS")
    if not os.path.exists(sums):
        print("package test: %s has no SHA256SUMS (run tools/package.sh first)" % out)
        return 77
    if not all(os.path.exists(p) for p in (MODEL, GOLDEN, TOKENS)):
        print("package test: %s lacks stories260K and its golden text" % SHARED)
        return 77
    r = subprocess.run(["sha256sum", "-c", "--quiet", "SHA256SUMS"], cwd=out, capture_output=True, text=True)
    archives = sorted(read_sums(sums))
    # The ELF check itself fails where it must: this machine's own dynamic programs need glibc 2.34.
    probe = shutil.which("ls")
    problems, _ = elf_problems(probe, LINUX["linux-x86_64"][0], (2, 17)) if probe else ([], "")
    check("elf check refuses %s" % probe, any("GLIBC_2.34" in p for p in problems), "; ".join(problems))
    check("SHA256SUMS", r.returncode == 0 and bool(archives), " ".join(archives) + r.stdout + r.stderr)
    for a in archives:
        target = re.sub(r"^legacy-ml-[\d.]+-|\.(tar\.gz|zip)$", "", a)
        with tempfile.TemporaryDirectory(prefix="ml-package-") as tmp:
            root = unpack(os.path.join(out, a), tmp)
            check_sums(target, root)
            if target in LINUX:
                machine, qemu, line = LINUX[target]
                check_elfs(target, root, machine, line)
                check_runs(target, root, qemu)
                check_server(target, root, qemu)
                check_wheel(target, root, qemu)
            elif target.startswith("windows-"):
                check_windows(target, root)
                check_windows_wheel(target, root)
            else:
                check(target, False, "unknown target")
    print("package test: %d/%d checks passed" % (sum(results), len(results)))
    return 0 if results and all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
