#!/usr/bin/python3
"""logits.checksum: ml_run's --logits file and text for stories260K's Q8_0 and Q4_0 models, checked
against SHA-256 sums committed in verify/data/logits_sha256.txt.

  logits_checksum.py --models DIR --shared DIR [--write] -- [EMULATOR...] ML_RUN

Why a committed sum: the Windows presets (cmake/tests/windows.cmake) must give the Linux builds'
logits bit for bit, and a Windows build tree has no Linux ml_run to compare with. On Linux,
logits.identical proves every ISA's quantized logits equal the scalar reference's; this test, run
on the Linux scalar preset and on every Windows preset, pins that scalar result (and the Windows
build's ISA and reference runs) to the same bytes. If the forward pass changes on purpose,
regenerate with --write on the scalar preset and commit the file.

The run also crosses the Windows file-name paths of ml_run: the model is copied into a folder and
the logits written to a file whose names have non-ASCII characters (UTF-8 argv -> UTF-16 file
APIs), and the --logits target exists beforehand (the final rename must replace it).
Exit status: 0 pass, 1 fail, 77 when the shared stories260K data are absent. Standard library only.
"""
import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SUMS = os.path.join(HERE, "data", "logits_sha256.txt")
MODELS = ["stories260K_q8_0.mlb", "stories260K_q4_0.mlb"]
ARGS = ["--temp", "0", "-n", "24", "-i", "Once upon a time"]
NON_ASCII = "d\u00e9j\u00e0 vu \u6a21\u578b \u03a9"  # "déjà vu 模型 Ω"


def sha(data):
    return hashlib.sha256(data).hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", required=True)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--write", action="store_true", help="rewrite verify/data/logits_sha256.txt")
    ap.add_argument("cmd", nargs="+")
    a = ap.parse_args()
    tok = os.path.join(a.shared, "models", "stories260K", "tok512.bin")
    models = [os.path.join(a.models, m) for m in MODELS]
    for f in [tok] + models:
        if not os.path.exists(f):
            print("\n*** SKIPPED: %s is absent (shared test data); see README.md\n" % f, file=sys.stderr)
            return 77
    want = {}
    if not a.write:
        with open(SUMS, encoding="utf-8") as f:
            for line in f:
                if line.strip() and not line.startswith("#"):
                    name, what, digest = line.split()
                    want[(name, what)] = digest
    got = {}
    fails = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, NON_ASCII)
        os.mkdir(folder)
        for m in models:
            name = os.path.basename(m)
            model = os.path.join(folder, "m\u00f6del " + name)
            shutil.copyfile(m, model)
            for ref in ([], ["--reference"]):
                out = os.path.join(folder, "logits \u00df.bin")
                with open(out, "wb") as f:
                    f.write(b"an older file the rename must replace")
                r = subprocess.run(a.cmd + [model, "-z", tok, "--logits", out] + ARGS + ref, capture_output=True,
                                   timeout=600)
                label = "%s%s" % (name, " --reference" if ref else "")
                if r.returncode != 0:
                    fails.append("%s: ml_run exit %d: %s" % (label, r.returncode, r.stderr.decode("utf-8", "replace")))
                    continue
                with open(out, "rb") as f:
                    logits = f.read()
                leftovers = [x for x in os.listdir(folder) if ".tmp" in x]
                if leftovers:
                    fails.append("%s: temporary files left beside the logits: %s" % (label, leftovers))
                for what, digest in (("logits", sha(logits)), ("text", sha(r.stdout))):
                    if got.setdefault((name, what), digest) != digest:
                        fails.append("%s: %s differ from the build kernels' run" % (label, what))
                    elif not a.write and want.get((name, what)) != digest:
                        fails.append("%s: %s sha256 %s, committed %s (verify/data/logits_sha256.txt)"
                                     % (label, what, digest, want.get((name, what))))
                print("%s: logits %d bytes sha256 %s, text sha256 %s" % (label, len(logits), sha(logits),
                                                                         sha(r.stdout)))
    if fails:
        print("FAIL:\n  " + "\n  ".join(fails))
        return 1
    if a.write:
        with open(SUMS, "w", encoding="utf-8") as f:
            f.write("# SHA-256 of ml_run's --logits file and stdout (verify/logits_checksum.py: %s)\n" % " ".join(ARGS))
            f.write("# on stories260K's quantized fixtures; the same on every build (Linux and Windows, any ISA).\n")
            for (name, what), digest in sorted(got.items()):
                f.write("%s %s %s\n" % (name, what, digest))
        print("wrote", SUMS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
