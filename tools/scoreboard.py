#!/usr/bin/python3
"""The RISC-V seed's scoreboard shapes on our side (docs/bench.md, "RISC-V scoreboard"): for each
model, the rvv build's logits under qemu-user must be byte-identical to the scalar reference's
(correctness only: qemu's speed says nothing about a RISC-V board), and the native build's decode
speed is measured beside it.

  tools/scoreboard.py --rvv build/rvv/ml_run --ref build/scalar/ml_run [--native build/avx512vnni/ml_bench]
                      [--steps 4] MODEL.mlb...

Each model runs a 4-token prompt teacher-forced (fed as one batch) then greedy decode for --steps
positions in all, once with the rvv build under `qemu-riscv64 -cpu rv64,v=true,vlen=256` and once
with the native scalar build; the --logits files and the printed text must be the same bytes. Random
models come without a tokenizer: a llama2.c tokenizer.bin of n_tokens pieces "t0", "t1", ... is
written for them (verify/logits_compare.py's). Prints one Markdown row per model. Exit 1 on a
mismatch. Standard library only.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "verify"))
import mlb  # noqa: E402
from logits_compare import write_tokenizer  # noqa: E402

QEMU = ["qemu-riscv64", "-cpu", "rv64,v=true,vlen=256,vext_spec=v1.0", "-L", "/usr/riscv64-linux-gnu"]
PROMPT = "1 403 407 261"
TYPES = {mlb.F32: "F32", mlb.Q8_0: "Q8_0", mlb.Q4_0: "Q4_0"}


def header(path):
    with open(path, "rb") as f:
        return mlb.Header.unpack(f.read(4096))


def run(cmd, model, tok, steps, out):
    t0 = time.time()
    r = subprocess.run(cmd + [model, "-z", tok, "--token-ids", PROMPT, "-n", str(steps), "--temp", "0",
                              "--logits", out], capture_output=True, timeout=3600)
    secs = time.time() - t0
    if r.returncode != 0:
        sys.exit("scoreboard.py: %s failed (exit %d): %s" % (" ".join(cmd), r.returncode,
                                                            r.stderr.decode("utf-8", "replace").strip()))
    with open(out, "rb") as f:
        return f.read(), r.stdout, secs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rvv", required=True, help="the rvv build's ml_run")
    ap.add_argument("--ref", required=True, help="a native scalar build's ml_run (the reference)")
    ap.add_argument("--native", help="a native build's ml_bench, for decode tok/s at 1 and 2 threads")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("models", nargs="+")
    a = ap.parse_args()
    failed = False
    print("| model | type | MB/token | rvv under qemu: logits vs scalar | qemu s/token | native tok/s (1 / 2 threads) |")
    print("| --- | --- | ---: | --- | ---: | ---: |")
    with tempfile.TemporaryDirectory(prefix="ml_scoreboard_") as tmp:
        for model in a.models:
            h = header(model)
            tok = os.path.join(tmp, "tok.bin")
            write_tokenizer(tok, h.n_tokens or h.vocab)
            ref, ref_text, _ = run([a.ref], model, tok, a.steps, os.path.join(tmp, "ref.f32"))
            got, got_text, secs = run(QEMU + [a.rvv], model, tok, a.steps, os.path.join(tmp, "rvv.f32"))
            same = got == ref and got_text == ref_text
            failed |= not same
            verdict = ("identical (%d positions x %d logits)" % (a.steps, h.vocab)) if same else "DIFFER"
            native, mb = "—", 0.0
            if a.native:
                r = subprocess.run([a.native, "decode", model, "-t", "1,2", "-n", "16", "--tsv"], capture_output=True,
                                   text=True, check=True)
                rows = [l.split("\t") for l in r.stdout.splitlines() if l.startswith("decode\t")]
                native = " / ".join("%.1f" % float(x[6]) for x in rows)
                mb = float(rows[0][5])
            shape = "%d/%d/%d/%d/%d, vocab %d" % (h.dim, h.hidden_dim, h.n_layers, h.n_heads, h.n_kv_heads, h.vocab)
            print("| %s | %s | %s | %s | %.1f | %s |" % (
                shape, TYPES.get(h.wtype, "?"), ("%.0f" % mb) if mb else "—", verdict, secs / a.steps, native))
            sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
