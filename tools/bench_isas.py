#!/usr/bin/python3
"""Builds every native preset this CPU can run (the rows of simd/isa_table.h, in its order) and
prints one table: ISA × (matvec_q8 GB/s, matvec_q4 GB/s, decode tok/s, speed-up over scalar), then
checks that each accelerated ISA beats the one below it on matvec_q8 and matvec_q4.

  tools/bench_isas.py [--seconds S] [--model-preset stories110m] [--markdown]

The matvec columns are the kernels' own speed on the default weight layout (16-row panels): a
2048x768 matrix that stays in cache, GB/s of weights read (ml_bench kernels, "cache" rows). The DRAM
column is the same kernel streaming 512 MB of weights, and tok/s is decode of a random-weight model
(tools/gen_random.py --preset stories110m, Q8_0, panels) on one thread — both bound by memory
bandwidth. As root the benchmarks run in their own
process group at raised priority pinned to cores 0,1 (docs/toolchain.md: shared machines drift ±25 %).
"""
import argparse
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(ROOT, "tools"))
import gen_presets  # noqa: E402  (its parser of simd/isa_table.h)

# The native build ISAs in the ISA table's order (each row's parent comes before it).
ORDER = [r["name"] for r in gen_presets.isa_rows() if r["arch"] != "wasm32"]
SHAPE = "110M w1 2048x768"


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, capture_output=True, cwd=ROOT, **kw).stdout


def pinned(cmd):
    if os.geteuid() == 0 and os.path.exists("/usr/bin/taskset"):
        inner = " ".join("'%s'" % c for c in cmd)
        return ["setsid", "-w", "sh", "-c", "echo -20 > /proc/$$/autogroup; exec nice -n -20 taskset -c 0,1 " + inner]
    return cmd


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", default="0.25")
    ap.add_argument("--model-preset", default="stories110m")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    a = ap.parse_args()

    os.makedirs(os.path.join(ROOT, "build"), exist_ok=True)
    probe = os.path.join(ROOT, "build", "ml_isa_probe")
    sh(["c++", "-std=c++17", "-O1", "-I.", "-DML_ISA_ID=scalar", "simd/cpu_guard.cc", "native/isa_probe.cc", "-o", probe])
    supported = [l.split()[0] for l in sh([probe, "-v"]).splitlines()[:-1] if l.endswith("supported")]
    isas = [i for i in ORDER if i in supported]
    print("ISAs this CPU runs:", " ".join(isas), file=sys.stderr)

    model = os.path.join(ROOT, "build", "bench-models", "%s_q8_0_panel16.mlb" % a.model_preset)
    if not os.path.exists(model):
        os.makedirs(os.path.dirname(model), exist_ok=True)
        print("writing", model, file=sys.stderr)
        sh(["/usr/bin/python3", "tools/gen_random.py", model, "--preset", a.model_preset, "--wtype", "q8_0", "--layout",
            "panel16", "-q"])

    rows = []
    for isa in isas:
        preset = isa.replace("_", "-")
        print("building", preset, file=sys.stderr)
        sh(["cmake", "--preset", preset])
        sh(["cmake", "--build", "--preset", preset, "--target", "ml_bench"])
        bench = os.path.join(ROOT, "build", preset, "ml_bench")
        k = sh(pinned([bench, "kernels", "--tsv", "--seconds", a.seconds]))
        vals = {}
        for line in k.splitlines():
            f = line.split("\t")
            if f[0] == "kernel" and f[3] == SHAPE and f[4] == "panel16":
                vals[(f[1], f[5])] = float(f[7])
        d = sh(pinned([bench, "decode", model, "-t", "1", "--tsv"]))
        tok = float([l.split("\t") for l in d.splitlines() if l.startswith("decode")][0][6])
        rows.append((isa, vals[("matvec_q8", "cache")], vals[("matvec_q4", "cache")], vals[("matvec_q8", "dram")], tok))
        print("  %s: q8 %.1f GB/s, q4 %.1f GB/s, %.1f tok/s" % (isa, rows[-1][1], rows[-1][2], tok), file=sys.stderr)

    base = rows[0][4] if rows and rows[0][0] == "scalar" else None
    head = ("ISA", "matvec_q8 GB/s", "matvec_q4 GB/s", "matvec_q8 DRAM GB/s", "tok/s (%s Q8_0, 1 thread)" % a.model_preset,
            "speed-up")
    if a.markdown:
        print("| " + " | ".join(head) + " |")
        print("| --- | " + " | ".join("---:" for _ in head[1:]) + " |")
    else:
        print("%-12s %15s %15s %20s %28s %9s" % head)
    for isa, q8, q4, dram, tok in rows:
        cells = (isa, "%.1f" % q8, "%.1f" % q4, "%.1f" % dram, "%.1f" % tok, "%.2fx" % (tok / base) if base else "-")
        print(("| " + " | ".join(cells) + " |") if a.markdown else "%-12s %15s %15s %20s %28s %9s" % cells)
    ok = True
    for (i0, q8a, q4a, _, _), (i1, q8b, q4b, _, _) in zip(rows, rows[1:]):
        for name, lo, hi in (("matvec_q8", q8a, q8b), ("matvec_q4", q4a, q4b)):
            if hi <= lo:
                ok = False
                print("NOT FASTER: %s %s (%.1f GB/s) vs %s (%.1f GB/s)" % (i1, name, hi, i0, lo))
    print("every accelerated ISA beats the one below it on matvec_q8 and matvec_q4" if ok else
          "ordering check FAILED (see above)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
