#!/usr/bin/python3
"""Checks every #include of the repository's C/C++ sources against the layers (ctest includes.layers).

  tools/check_includes.py              exit 1, listing each offending line, when a quoted include
                                       crosses an edge ALLOWED does not list, or an intrinsics header
                                       (<immintrin.h>, <arm_neon.h>, <hwy/...>, ...) is included
                                       outside kernels/ and simd/
  tools/check_includes.py --self-test  also proves it fails on a back-edge and on intrinsics
                                       outside kernels/ and simd/ (a temporary tree), and passes a
                                       legal edge

The layers are runtime -> kernels -> simd (a folder may include its own headers and those of the
folders below it); verify and the program folders sit on top. CMakeLists.txt enforces the three
libraries' edges at compile time (each target sees only its own folder and what it links); this
table also covers the programs and headers no target compiles alone. A quoted include whose first
path component is not a top-level folder of the repository (a third-party header) is not checked;
one without a folder ("x.inc") is the including file's own folder. A C/C++ file in a top-level
folder the table does not name fails: add the folder, with its edges, to ALLOWED.
Python 3 standard library only.
"""
import os
import re
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# folder (a top-level folder, or a subfolder with rules of its own) -> the folders (or single
# files) its files may include (quoted includes "folder/..."). A file belongs to the deepest folder
# the table names.
ALLOWED = {
    "simd": {"simd"},
    "kernels": {"kernels", "simd"},
    "runtime": {"runtime", "kernels", "simd"},
    # runtime/text/: tokenizers, Unicode, chat rendering: text only, none of the model half (load,
    # state, forward, threads) — the shared status/error helpers, the C API's types, and the
    # mutation switch.
    "runtime/text": {"runtime/text", "runtime/base.h", "runtime/error.h", "runtime/ml.h", "kernels/mutants.h"},
    # structured/: JSON (nlohmann-json) over the runtime: schemas compiled to token constraints.
    "structured": {"structured", "runtime"},
    # The checks and tests reach every layer, and the programs' shared headers.
    "verify": {"verify", "hub", "structured", "runtime", "kernels", "simd", "native", "fuzz"},
    # native/: ml_run, ml_tokenize, ml_bench (which times every kernel variant through
    # kernels/binding.h), the baseline guarded main and ml_isa_probe (simd/cpu_guard.h).
    "native": {"native", "hub", "structured", "runtime", "kernels", "simd"},
    "server": {"server", "native", "hub", "structured", "runtime"},
    # hub/: the downloader behind --hf (HTTP through libcurl or WinHTTP), beside the programs.
    "hub": {"hub", "runtime"},
    "launcher": {"launcher", "simd"},  # compiled without ISA flags: the CPU selection only
    "wasm": {"wasm", "structured", "runtime", "verify"},  # the browser's verify page runs the checks
    "fuzz": {"fuzz", "runtime", "verify", "server"},  # fuzz_request: the server's request layer
    # cmake/glibc_compat.c: the wheel's libraries on old glibc (cmake/Portable.cmake); libc only.
    "cmake": set(),
}
# Known exceptions: (file, included path) pairs allowed although the table forbids the edge, each
# with the reason. A back-edge is fixed, not listed.
EXCEPTIONS = {
    (f, "kernels/mutants.h"): "the mutation audit's switch: a constant false outside -DML_MUTANTS=ON builds "
                              "(tools/mutants.sh)"
    for f in ("server/ml_server.cc", "server/request.cc", "server/scheduler.cc", "server/http_policy.cc")
}
# Folders whose files may include intrinsics (or Highway) headers.
INTRINSICS_OK = {"kernels", "simd"}
INTRINSICS = re.compile(r"^(\w*intrin\.h|arm_neon\.h|arm_sve\.h|riscv_vector\.h|wasm_simd128\.h|hwy/.*)$")
SOURCE = re.compile(r"\.(c|cc|cpp|h|hpp|inc|S)$")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
SKIP_DIRS = {".git", "build", "node_modules", "tools", "docs"}


def sources(root):
    for top in sorted(os.listdir(root)):
        if top in SKIP_DIRS or top.startswith(".") or not os.path.isdir(os.path.join(root, top)):
            continue
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS)
            for f in sorted(files):
                if SOURCE.search(f):
                    yield os.path.relpath(os.path.join(d, f), root).replace(os.sep, "/")


def layer_of(rel):
    """The deepest folder of ALLOWED holding rel (else its top-level folder)."""
    parts = rel.split("/")
    for i in range(len(parts) - 1, 0, -1):
        if "/".join(parts[:i]) in ALLOWED:
            return "/".join(parts[:i])
    return parts[0]


def allowed(layer, path):
    return any(path == e or path.startswith(e + "/") for e in ALLOWED[layer])


def check(root):
    """The violations in the tree at root, as 'file:line: message' strings."""
    tops = {t for t in os.listdir(root) if os.path.isdir(os.path.join(root, t))}
    bad = []
    for rel in sources(root):
        layer = layer_of(rel)
        if layer not in ALLOWED:
            bad.append("%s: folder %s/ is not in tools/check_includes.py's ALLOWED table" % (rel, layer))
            continue
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                kind, path = m.groups()
                if INTRINSICS.match(path) and layer not in INTRINSICS_OK:
                    bad.append("%s:%d: <%s>: intrinsics belong in kernels/ or simd/, behind a plain function"
                               % (rel, n, path))
                if kind != '"' or "/" not in path:
                    continue
                if path.split("/")[0] not in tops or allowed(layer, path) or (rel, path) in EXCEPTIONS:
                    continue
                bad.append('%s:%d: "%s": %s/ may include only %s (tools/check_includes.py)'
                           % (rel, n, path, layer, ", ".join(sorted(ALLOWED[layer]))))
    return bad


def self_test():
    """The checker fails on a back-edge and on misplaced intrinsics, and passes a legal tree."""
    cases = [
        ({"simd/a.h": '#include "simd/b.h"\n', "runtime/r.cc": '#include "kernels/k.h"\n#include "simd/a.h"\n',
          "kernels/k.h": "#include <immintrin.h>\n"}, 0),
        ({"simd/a.h": '#include "runtime/ml.h"\n', "runtime/ml.h": ""}, 1),  # simd -> runtime
        ({"kernels/k.cc": '  #  include "verify/v.h"\n', "verify/v.h": ""}, 1),  # kernels -> verify
        ({"native/n.cc": "#include <arm_neon.h>\n"}, 1),  # intrinsics in a program
        ({"newdir/x.cc": "\n"}, 1),  # a folder the table does not know
        ({"runtime/text/t.cc": '#include "runtime/model.h"\n#include "runtime/error.h"\n', "runtime/model.h": "",
          "runtime/error.h": ""}, 1),  # text -> the model half
        ({"runtime/m.cc": '#include "runtime/text/t.h"\n', "runtime/text/t.h": ""}, 0),  # model -> text
    ]
    for files, want in cases:
        with tempfile.TemporaryDirectory() as tmp:
            for rel, text in files.items():
                os.makedirs(os.path.dirname(os.path.join(tmp, rel)), exist_ok=True)
                with open(os.path.join(tmp, rel), "w", encoding="utf-8") as f:
                    f.write(text)
            got = check(tmp)
        if len(got) != want:
            print("self-test FAILED on %s: expected %d violation(s), got %r" % (sorted(files), want, got))
            return False
    print("self-test: back-edges and misplaced intrinsics are caught, legal edges pass (%d cases)" % len(cases))
    return True


def main(argv):
    if argv[1:] not in ([], ["--self-test"]):
        sys.exit(__doc__)
    if argv[1:] == ["--self-test"] and not self_test():
        return 1
    bad = check(ROOT)
    for b in bad:
        print(b)
    if bad:
        print("%d include(s) break the layers (tools/check_includes.py's ALLOWED table)" % len(bad))
        return 1
    print("includes: every #include of %d files follows the layers" % len(list(sources(ROOT))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
