#!/usr/bin/python3
"""CPU-guard and floor tests, run by CTest through an emulator that models an older CPU.

  guard_test.py refuse --isa ISA -- EMULATOR... ML_RUN
      The build must refuse to run: exit status 5 (ML_E_ISA), one stderr line
      "ml_run: this build (ISA) needs FEATURES, which this CPU lacks; use the BEST build",
      nothing on stdout, and no signal (a SIGILL would mean ISA code ran before the guard).
  guard_test.py golden --model M --tokenizer T --golden G -- EMULATOR... ML_RUN
      The build must run on that CPU and print llama2.c's golden text for stories260K
      (-n 200 --temp 0 -i "Once upon a time") byte for byte.
EXIT 77 (CTest: skipped) with a loud message when the golden files are absent.
"""
import argparse
import os
import re
import signal
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("refuse", "golden"))
    ap.add_argument("--isa")
    ap.add_argument("--model")
    ap.add_argument("--tokenizer")
    ap.add_argument("--golden")
    ap.add_argument("cmd", nargs="+", help="emulator command and the ml_run binary, after --")
    a = ap.parse_args()
    if a.mode == "refuse":
        r = subprocess.run(a.cmd + ["--version"], capture_output=True, timeout=120)
        # The emulator's own warnings (e.g. "qemu-x86_64: warning: TCG doesn't support ...") are not ours.
        err = "".join(l for l in r.stderr.decode("utf-8", "replace").splitlines(True) if not l.startswith("qemu-"))
        if r.returncode < 0:
            sys.exit("FAIL: killed by %s before the guard could refuse: %r" % (signal.Signals(-r.returncode).name, err))
        pat = r"^ml_run: this build \(%s\) needs (.+), which this CPU lacks; use the (\w+) build\n$" % re.escape(a.isa)
        m = re.match(pat, err)
        if r.returncode != 5 or not m or r.stdout:
            sys.exit("FAIL: expected exit 5 and one line matching %r, got exit %d, stderr %r, stdout %r"
                     % (pat, r.returncode, err, r.stdout[:200]))
        print("refused as expected: needs %s; suggests the %s build" % (m.group(1), m.group(2)))
        return
    for f in (a.model, a.tokenizer, a.golden):
        if not os.path.exists(f):
            print("\n*** SKIPPED: %s is absent (shared test data); see README.md\n" % f, file=sys.stderr)
            sys.exit(77)
    r = subprocess.run(a.cmd + [a.model, "-z", a.tokenizer, "-n", "200", "--temp", "0", "-i", "Once upon a time"],
                       capture_output=True, timeout=600)
    if r.returncode < 0:
        sys.exit("FAIL: killed by %s" % signal.Signals(-r.returncode).name)
    with open(a.golden, "rb") as f:
        want = f.read()
    if r.returncode != 0 or r.stdout != want:
        sys.exit("FAIL: exit %d\nstdout: %r\nexpected: %r\nstderr: %s"
                 % (r.returncode, r.stdout, want, r.stderr.decode("utf-8", "replace")))
    print("golden text printed under the emulated CPU")


if __name__ == "__main__":
    main()
