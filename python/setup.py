"""Puts the native libraries into the package (the rest is pyproject.toml).

The libraries come from LEGACY_ML_LIBS (absolute folders separated by ':', each holding libml_<isa>.so and
libml_probe.so: tools/install.sh --python passes every ISA's lib/ of its prefix), else from the
builds of this checkout, ../build/<preset>/ (`cmake --build --preset <isa> --target ml_python`).
Every libml_<isa>.so found for this machine's architecture goes in (cross builds are left out), one libml_probe.so with them; the wheel is tagged for this
platform (py3-none-linux_<arch>): the Python is pure, the libraries are not. LEGACY_ML_ARCH (x86_64,
aarch64, ...) packs another architecture's libraries instead, tagged linux_<it> (tools/package.sh's
AArch64 wheel, built on x86-64); LEGACY_ML_ARCH=win_amd64 packs Windows x86-64 DLLs (ml_<isa>.dll and
ml_probe.dll of the win-* builds: tools/package.sh's Windows wheel), tagged win_amd64. The file names
are python/legacy_ml/_native.py's LIBRARY_NAMES. Build files go to a temporary folder, not into the
source tree.
"""
import atexit
import glob
import importlib.util
import os
import platform
import shutil
import struct
import sys
import sysconfig
import tempfile

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

try:
    from wheel.bdist_wheel import bdist_wheel
except ImportError:  # pip install without the wheel package builds no wheel
    bdist_wheel = None

HERE = os.path.dirname(os.path.abspath(__file__))
ARCH = (os.environ.get("LEGACY_ML_ARCH") or platform.machine()).lower()
WINDOWS = ARCH.startswith("win_") or (os.name == "nt" and not os.environ.get("LEGACY_ML_ARCH"))


def library_names():
    """(ISA library pattern, probe name) of the target platform, from _native.py (not imported as the
    package: its table alone)."""
    spec = importlib.util.spec_from_file_location("legacy_ml_native_names", os.path.join(HERE, "legacy_ml", "_native.py"))
    native = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(native)
    return native.LIBRARY_NAMES["nt" if WINDOWS else "posix"]


def library_dirs():
    env = os.environ.get("LEGACY_ML_LIBS")
    if env:
        rel = [d for d in env.split(os.pathsep) if d and not os.path.isabs(d)]
        if rel:  # pip runs this file in a copy or in python/: a relative folder would mean something else
            sys.exit("legacy_ml setup.py: LEGACY_ML_LIBS folder %r is not an absolute path" % rel[0])
        return [d for d in env.split(os.pathsep) if d]
    return sorted(glob.glob(os.path.join(HERE, "..", "build", "*")))


# ELF e_machine of this machine's architecture: a checkout's build/ also holds cross builds.
MACHINES = {"x86_64": 62, "amd64": 62, "aarch64": 183, "arm64": 183, "armv7l": 40, "armv6l": 40, "riscv64": 243}
PE_AMD64 = 0x8664  # a PE file's Machine (Windows: win_amd64 only)


def same_arch(path):
    with open(path, "rb") as f:
        head = f.read(4096)
    if WINDOWS:  # MZ, the PE header's offset at 0x3c, "PE\0\0", then the Machine
        pe = struct.unpack("<I", head[0x3c:0x40])[0] if len(head) >= 0x40 and head[:2] == b"MZ" else len(head)
        return head[pe:pe + 4] == b"PE\0\0" and struct.unpack("<H", head[pe + 4:pe + 6])[0] == PE_AMD64
    want = MACHINES.get(ARCH)
    return len(head) >= 20 and head[:4] == b"\x7fELF" and (want is None or struct.unpack("<H", head[18:20])[0] == want)


def libraries():
    isa, probe = {}, None
    isa_library, probe_library = library_names()
    for d in library_dirs():
        for path in sorted(glob.glob(os.path.join(d, isa_library % "*"))):
            name = os.path.basename(path)
            if not same_arch(path):
                print("legacy_ml: skipped %s (not this machine's architecture)" % path)
                continue
            if name == probe_library:
                probe = probe or path
            else:
                isa.setdefault(name, path)
    if not isa or not probe:
        sys.exit("legacy_ml setup.py: no %s and %s in %s: build them first "
                 "(cmake --build --preset avx2 --target ml_python, or tools/install.sh PREFIX --python)"
                 % (isa_library % "<isa>", probe_library, os.environ.get("LEGACY_ML_LIBS") or os.path.join(HERE, "..", "build", "<preset>")))
    return sorted(isa.values()) + [probe]


class BuildPy(build_py):
    def run(self):
        super().run()
        out = os.path.join(self.build_lib, "legacy_ml", "lib")
        os.makedirs(out, exist_ok=True)
        for path in libraries():
            shutil.copy2(path, os.path.join(out, os.path.basename(path)))
            print("legacy_ml: packaged %s" % path)


commands = {"build_py": BuildPy}
if bdist_wheel is not None:
    class Wheel(bdist_wheel):
        def finalize_options(self):
            super().finalize_options()
            self.root_is_pure = False

        def get_tag(self):
            if os.environ.get("LEGACY_ML_ARCH"):
                return "py3", "none", ARCH if WINDOWS else "linux_" + ARCH
            return "py3", "none", sysconfig.get_platform().replace("-", "_").replace(".", "_")

    commands["bdist_wheel"] = Wheel

class BinaryDistribution(Distribution):
    def has_ext_modules(self):  # the libraries: installed as platform files (platlib), at the wheel's root
        return True


work = tempfile.mkdtemp(prefix="legacy_ml_build_")
atexit.register(shutil.rmtree, work, True)
setup(packages=["legacy_ml"], distclass=BinaryDistribution, cmdclass=commands, options={"build": {"build_base": os.path.join(work, "build")},
                                  "egg_info": {"egg_base": work}})
