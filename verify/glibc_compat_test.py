#!/usr/bin/python3
"""ctest python.glibc_compat (cmake/Tests.cmake; ML_PORTABLE builds on x86-64 and AArch64): the Python
wheel's libraries load on glibc 2.17 (cmake/Portable.cmake, cmake/glibc_compat.c).

  verify/glibc_compat_test.py PROBE LIB...

  versions   every LIB (libml_<isa>.so, libml_probe.so) and PROBE need no glibc symbol version above
             2.17, no libstdc++/libgcc_s (verify/package_test.py's reader, which refuses this
             machine's own `ls`)
  local      PROBE and each LIB define _dl_find_object, arc4random, __libc_single_threaded
             themselves where they use them (nm: a local symbol), so what runs below is ours
  works      PROBE (verify/glibc_compat_probe.cc, linked as the wheel's libraries are) loaded by
             ctypes: an exception caught 8 frames up, a thread, two random_device draws, fstat of this
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

MACHINES = {"x86_64": "Advanced Micro Devices X86-64", "aarch64": "AArch64"}
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
    machine = MACHINES[os.uname().machine]
    ls = shutil.which("ls")
    problems, _ = package_test.elf_problems(ls, machine, (2, 17))
    check("reader refuses %s" % ls, any("GLIBC_2.34" in p for p in problems), "; ".join(problems))
    for path in [probe] + libs:
        name = os.path.basename(path)
        problems, kind = package_test.elf_problems(path, machine, (2, 17))
        check("versions " + name, kind == "dynamic" and not problems, "; ".join(problems) or "<= GLIBC_2.17")
        nm = subprocess.run(["nm", path], capture_output=True, text=True, check=True).stdout
        uses = subprocess.run(["nm", "-u", path], capture_output=True, text=True, check=True).stdout
        for sym in ("_dl_find_object", "arc4random", "__libc_single_threaded", "__cxa_thread_atexit_impl"):
            local = re.search(r"^[0-9a-f]+ [tbdr] %s$" % re.escape(sym), nm, re.M) is not None
            undefined = re.search(r"\b%s\b" % re.escape(sym), uses) is not None
            if path == probe or local or undefined:
                check("local %s in %s" % (sym, name), local and not undefined,
                      "defined in the library" if local else "not defined here")
    lib = ctypes.CDLL(os.path.abspath(probe))
    lib.ml_compat_probe.restype = ctypes.c_int
    lib.ml_compat_probe.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_longlong), ctypes.c_float,
                                    ctypes.POINTER(ctypes.c_float)]
    size = ctypes.c_longlong(-1)
    out = (ctypes.c_float * 3)()
    me = os.path.abspath(__file__)
    bits = lib.ml_compat_probe(me.encode(), ctypes.byref(size), 2.5, out)
    for bit, what in ((1, "exception caught 8 frames up"), (2, "thread"), (4, "random_device draws differ"),
                      (8, "fstat"), (16, "thread_local destructor at thread exit")):
        check("works " + what, bool(bits & bit), "bits %d" % bits)
    check("works fstat size", size.value == os.path.getsize(me), "%d bytes (want %d)" % (size.value, os.path.getsize(me)))
    x = f32(2.5)
    for i, (what, want) in enumerate((("expf", math.exp(x)), ("logf", math.log(x)), ("powf", x ** 1.5))):
        check("works " + what, ulps(out[i], f32(want)) <= 1, "%r (want %r)" % (out[i], f32(want)))
    print("glibc_compat: %s" % ("every check passed" if not failed else "FAILED: " + ", ".join(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
