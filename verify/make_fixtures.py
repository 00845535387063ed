#!/usr/bin/python3
"""Writes the test models CTest's fixtures provide (run by CTest, see cmake/Tests.cmake).

  make_fixtures.py stories260K MODELS SHARED   stories260K.bin -> stories260K_{f32,q8_0,q4_0}.mlb
  make_fixtures.py random MODELS               gen_random: random_gqa_{f32,q8_0,q4_0}.mlb (dim 256,
                                               8 heads / 2 kv heads) and tiny_q8_0.mlb
Exits 77 (CTest: skipped) with a loud message when the shared folder is absent.
"""
import os
import subprocess
import sys

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = sys.executable


def run(*args):
    r = subprocess.run([PY, *args])
    if r.returncode != 0:
        sys.exit("make_fixtures.py: command failed (%d): %s" % (r.returncode, " ".join(args)))


def main():
    kind, models = sys.argv[1], sys.argv[2]
    os.makedirs(models, exist_ok=True)
    if kind == "stories260K":
        src = os.path.join(sys.argv[3], "models", "stories260K", "stories260K.bin")
        if not os.path.exists(src):
            print("\n*** SKIPPED: %s is absent; tests on the real model cannot run (README.md, Tests).\n" % src,
                  file=sys.stderr)
            sys.exit(77)
        for w in ("f32", "q8_0", "q4_0"):
            run(os.path.join(SRC, "tools", "convert.py"), src, os.path.join(models, "stories260K_%s.mlb" % w),
                "--wtype", w, "-q")
    elif kind == "random":
        gen = os.path.join(SRC, "tools", "gen_random.py")
        for w in ("f32", "q8_0", "q4_0"):
            run(gen, os.path.join(models, "random_gqa_%s.mlb" % w), "--dim", "256", "--hidden", "768", "--layers",
                "2", "--heads", "8", "--kv-heads", "2", "--vocab", "512", "--seq", "128", "--seed", "7",
                "--no-shared-classifier", "--wtype", w, "-q")
        run(gen, os.path.join(models, "tiny_q8_0.mlb"), "--dim", "64", "--hidden", "64", "--layers", "1", "--heads",
            "4", "--kv-heads", "2", "--vocab", "64", "--seq", "16", "--seed", "3", "--wtype", "q8_0", "-q")
    else:
        sys.exit("make_fixtures.py: unknown kind %r" % kind)


if __name__ == "__main__":
    main()
