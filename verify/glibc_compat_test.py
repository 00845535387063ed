#!/usr/bin/python3
"""ctest python.glibc_compat (cmake/Tests.cmake; ML_PORTABLE builds on x86-64, AArch64, ARMv7, RISC-V 64):
the Python wheel's libraries load on glibc 2.17, RISC-V 2.27 (cmake/Portable.cmake, cmake/glibc_compat.c).

  verify/glibc_compat_test.py PROBE LIB...
  ML_COMPAT_ARCH  the build's CMAKE_SYSTEM_PROCESSOR (x86_64, aarch64, armv7l, riscv64): its ELF
                  machine and glibc line (verify/package_test.py's LINUX table); default this machine
  ML_COMPAT_RUN   cross builds: EMULATOR|...|verify/glibc_compat_run.c's program, which loads PROBE
                  in ctypes' place (there is no Python of that architecture here)

  versions   every LIB (libml_<isa>.so, libml_probe.so) and PROBE need no glibc symbol version above
             the line, no libstdc++/libgcc_s (verify/package_test.py's reader, which refuses this
             machine's own `ls`)
  local      PROBE and each LIB define _dl_find_object, arc4random, __libc_single_threaded and
             __cxa_thread_atexit_impl themselves where they use them (nm: a local symbol), so what
             runs below is ours; where the line has glibc's (__cxa_thread_atexit_impl on RISC-V),
             they use glibc's instead
  works      PROBE (verify/glibc_compat_probe.cc, linked as the wheel's libraries are) loaded by
             ctypes (or ML_COMPAT_RUN): an exception caught 8 frames up, a thread, two random_device draws, fstat of this
             file, a thread_local's destructor at its thread's end, expf/logf/powf within one float ulp of Python's double math
Exit status 0 when all hold, 1 otherwise.
"""
import ctypes
import math
import os
import re
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import package_test  # noqa: E402  (the ELF version reader of the downloads' check)

TARGETS = {"x86_64": "linux-x86_64", "aarch64": "linux-aarch64", "armv7l": "linux-armv7", "riscv64": "linux-riscv64"}
# The glibc symbols glibc_compat.c defines where the line is older than their first version (2, n).
LOCAL = (("_dl_find_object", 35), ("arc4random", 36), ("__libc_single_threaded", 32), ("__cxa_thread_atexit_impl", 18))
failed = []


def check(name, ok, detail):
    if not ok:
        failed.append(name)
    print("%-4s %-44s %s" % ("ok" if ok else "FAIL", name, detail), flush=True)


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def ulps(a, b):
    ia, ib = (struct.unpack("i", struct.pack("f", v))[0] for v in (a, b))
    return abs(ia - ib)


def main():
    probe, libs = sys.argv[1], sys.argv[2:]
    host = package_test.LINUX[TARGETS[os.uname().machine]][0]
    machine, _, line = package_test.LINUX[TARGETS[os.environ.get("ML_COMPAT_ARCH") or os.uname().machine]]
    ls = shutil.which("ls")
    problems, _ = package_test.elf_problems(ls, host, (2, 17))
    check("reader refuses %s" % ls, any("GLIBC_2.34" in p for p in problems), "; ".join(problems))
    for path in [probe] + libs:
        name = os.path.basename(path)
        problems, kind = package_test.elf_problems(path, machine, line)
        check("versions " + name, kind == "dynamic" and not problems, "; ".join(problems) or "<= GLIBC_2.%d" % line[1])
        nm = subprocess.run(["nm", path], capture_output=True, text=True, check=True).stdout
        uses = subprocess.run(["nm", "-u", path], capture_output=True, text=True, check=True).stdout
        for sym, first in LOCAL:
            local = re.search(r"^[0-9a-f]+ [tbdr] %s$" % re.escape(sym), nm, re.M) is not None
            undefined = re.search(r"\b%s\b" % re.escape(sym), uses) is not None
            want_local = (2, first) > line
            if path == probe or local or undefined:
                check("%s %s in %s" % ("local" if want_local else "glibc's", sym, name),
                      local != undefined and local == want_local,
                      "defined in the library" if local else "undefined: glibc's" if undefined else "not used")
    me = os.path.abspath(__file__)
    if os.environ.get("ML_COMPAT_RUN"):  # a cross build: its program loads the probe under the emulator
        cmd = [a for a in os.environ["ML_COMPAT_RUN"].split("|") if a] + [os.path.abspath(probe), me]
        r = subprocess.run(cmd, capture_output=True, text=True)
        fields = r.stdout.split()
        check("loads under " + cmd[0], r.returncode == 0 and len(fields) == 5,
              "exit %d %s%s" % (r.returncode, r.stdout.strip(), r.stderr.strip()[-300:]))
        if r.returncode != 0 or len(fields) != 5:
            fields = ["0", "-1", "0x0p+0", "0x0p+0", "0x0p+0"]
        bits, size, out = int(fields[0]), int(fields[1]), [float.fromhex(f) for f in fields[2:]]
    else:
        lib = ctypes.CDLL(os.path.abspath(probe))
        lib.ml_compat_probe.restype = ctypes.c_int
        lib.ml_compat_probe.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_longlong), ctypes.c_float,
                                        ctypes.POINTER(ctypes.c_float)]
        csize = ctypes.c_longlong(-1)
        cout = (ctypes.c_float * 3)()
        bits = lib.ml_compat_probe(me.encode(), ctypes.byref(csize), 2.5, cout)
        size, out = csize.value, list(cout)
    for bit, what in ((1, "exception caught 8 frames up"), (2, "thread"), (4, "random_device draws differ"),
                      (8, "fstat"), (16, "thread_local destructor at thread exit")):
        check("works " + what, bool(bits & bit), "bits %d" % bits)
    check("works fstat size", size == os.path.getsize(me), "%d bytes (want %d)" % (size, os.path.getsize(me)))
    x = f32(2.5)
    for i, (what, want) in enumerate((("expf", math.exp(x)), ("logf", math.log(x)), ("powf", x ** 1.5))):
        check("works " + what, ulps(out[i], f32(want)) <= 1, "%r (want %r)" % (out[i], f32(want)))
    print("glibc_compat: %s" % ("every check passed" if not failed else "FAILED: " + ", ".join(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
