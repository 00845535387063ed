#!/usr/bin/python3
"""logits.identical: on quantized models the build's kernels give the scalar reference's logits
bit for bit (README: quantized kernels are exact integer sums, then the same float operations).

  logits_compare.py --models DIR [--shared DIR] [--also 'EMU|ARG|...']... -- [EMULATOR...] ML_RUN

For each quantized model (random GQA Q8_0 / Q4_0 in all three layouts, and stories260K's when the
shared folder has it) ml_run writes its --logits over 48 positions (an 8-token prompt fed as
batches, then greedy decode) with --reference (the scalar kernels) and without; the two files
must be byte-identical, and so must the printed text. A mismatch names the model, the CPU and
the first differing position / logit with both values.

--also adds emulator commands (e.g. qemu with other vector lengths) that run the same ML_RUN:
each of them must also give the reference's bytes for the quantized models, and, with --also,
the F32 models' logits must be identical under every command (the same results at every vector
length). The first command is the one after --.
Exit status: 0 pass, 1 fail. Standard library only.
"""
import argparse
import os
import struct
import subprocess
import sys
import tempfile

STEPS = 48
PROMPT = [1, 403, 407, 261, 378, 432, 383, 286]  # ids < 500: valid for every test model's vocabulary


def write_tokenizer(path, vocab):
    """A llama2.c tokenizer.bin of `vocab` pieces "t0", "t1", ... (for ml_run's -z on random models,
    which come without one): int32 max_token_length, then per token float32 score, int32 length, bytes."""
    pieces = [("t%d" % i).encode() for i in range(vocab)]
    with open(path, "wb") as f:
        f.write(struct.pack("<i", max(len(p) for p in pieces)))
        for i, p in enumerate(pieces):
            f.write(struct.pack("<fi", -float(i), len(p)) + p)


def vocab_of(model):
    """The vocab field of an .mlb header (docs/mlb-format.md: u32 at offset 28)."""
    with open(model, "rb") as f:
        head = f.read(32)
    if len(head) < 32 or head[:4] != b"MLB1":
        raise ValueError("%s is not an .mlb file" % model)
    return struct.unpack_from("<I", head, 28)[0]


class MlRun:
    """ml_run through an emulator command (a list, may be empty: [*EMULATOR, ML_RUN])."""

    def __init__(self, cmd):
        self.cmd = list(cmd)
        self.tmp = tempfile.TemporaryDirectory(prefix="ml_logits_")
        self.tokenizers = {}

    def tokenizer(self, vocab):
        if vocab not in self.tokenizers:
            path = os.path.join(self.tmp.name, "tok%d.bin" % vocab)
            write_tokenizer(path, vocab)
            self.tokenizers[vocab] = path
        return self.tokenizers[vocab]

    def run(self, model, args, tokenizer=None):
        """(raw logits bytes, stdout) or an error string."""
        out = os.path.join(self.tmp.name, "logits.f32")
        if os.path.exists(out):
            os.remove(out)
        tok = tokenizer or self.tokenizer(vocab_of(model))
        r = subprocess.run(self.cmd + [model, "-z", tok, "--temp", "0", "--logits", out] + list(args),
                           capture_output=True, timeout=1800)
        if r.returncode != 0 or not os.path.exists(out):
            return "ml_run failed (exit %d): %s" % (r.returncode, r.stderr.decode("utf-8", "replace").strip())
        if "--reference" in args and b"(scalar reference kernels)" not in r.stderr:
            return "--reference did not select the scalar kernels: %s" % r.stderr.decode("utf-8", "replace").strip()
        with open(out, "rb") as f:
            return f.read(), r.stdout

    def logits(self, model, vocab, ids, extra=()):
        """Teacher-forced logits of `ids` as a numpy (positions, vocab) float32 array, or an error."""
        import numpy as np
        got = self.run(model, ["--token-ids", " ".join(map(str, ids)), "-n", str(len(ids))] + list(extra))
        if isinstance(got, str):
            return got
        raw = got[0]
        if len(raw) != len(ids) * vocab * 4:
            return "%d bytes of logits, expected %d positions x %d" % (len(raw), len(ids), vocab)
        return np.frombuffer(raw, dtype="<f4").reshape(len(ids), vocab)


def first_difference(a, b, vocab):
    n = min(len(a), len(b)) // 4
    for i in range(n):
        if a[4 * i:4 * i + 4] != b[4 * i:4 * i + 4]:
            x, y = struct.unpack_from("<f", a, 4 * i)[0], struct.unpack_from("<f", b, 4 * i)[0]
            return "position %d, logit %d: %.9g (%s) vs %.9g (%s)" % (
                i // vocab, i % vocab, x, a[4 * i:4 * i + 4].hex(), y, b[4 * i:4 * i + 4].hex())
    return "lengths %d vs %d bytes" % (len(a), len(b))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", required=True, help="the fixtures' folder")
    ap.add_argument("--shared", help="../shared: adds stories260K's quantized models")
    ap.add_argument("--also", action="append", default=[], help="another emulator command, '|'-separated")
    ap.add_argument("cmd", nargs="+", help="[EMULATOR...] ML_RUN, after --")
    a = ap.parse_args()

    runs = [MlRun(a.cmd)] + [MlRun([x for x in e.split("|") if x] + [a.cmd[-1]]) for e in a.also]
    labels = [" ".join(a.cmd[:-1]) or "no emulator"] + [" ".join(x for x in e.split("|") if x) for e in a.also]
    models = []  # (name, tokenizer or None, args)
    ids = ["--token-ids", " ".join(map(str, PROMPT)), "-n", str(STEPS)]
    for m in ("random_gqa_q8_0", "random_gqa_q4_0", "random_gqa_q8_0_panel16", "random_gqa_q4_0_panel16",
              "random_odd_q4_0", "random_odd_q8_0_panel16", "random_odd_q4_0_panel16f16"):
        models.append((m, None, ids))
    tok512 = os.path.join(a.shared or "", "models", "stories260K", "tok512.bin")
    stories = bool(a.shared) and os.path.exists(tok512) and os.path.exists(
        os.path.join(a.shared, "models", "stories260K", "stories260K.bin"))
    if stories:
        text = ["-i", "Once upon a time", "-n", str(STEPS)]
        for m in ("stories260K_q8_0", "stories260K_q4_0", "stories260K_q8_0_panel16", "stories260K_q4_0_panel16"):
            models.append((m, tok512, text))
    else:
        print("note: no stories260K (shared folder %s absent): random models only" % a.shared)
    if len(runs) > 1:  # F32: every command against the first
        models.append(("random_gqa_f32", None, ids))
        if stories:
            models.append(("stories260K_f32", tok512, ["-i", "Once upon a time", "-n", str(STEPS)]))

    failed = []
    for name, tok, args in models:
        path = os.path.join(a.models, name + ".mlb")
        if not os.path.exists(path):
            failed.append("%s: %s is missing (fixtures)" % (name, path))
            continue
        vocab = vocab_of(path)
        f32 = name.endswith("_f32")
        want = runs[0].run(path, args + ([] if f32 else ["--reference"]), tok)
        against = "the first command's" if f32 else "the scalar reference's"
        if isinstance(want, str):
            failed.append("%s (%s): %s" % (name, "first command" if f32 else "--reference", want))
            continue
        if not want[0]:
            failed.append("%s: empty logits file" % name)
            continue
        same = []
        for run, label in zip(runs, labels):
            if f32 and run is runs[0]:
                continue
            got = run.run(path, args, tok)
            if isinstance(got, str):
                failed.append("%s (%s): %s" % (name, label, got))
            elif got[0] != want[0]:
                failed.append("%s (%s): logits differ from %s at %s" % (name, label, against,
                                                                      first_difference(got[0], want[0], vocab)))
            elif got[1] != want[1]:
                failed.append("%s (%s): same logits as %s, different text" % (name, label, against))
            else:
                same.append(label)
        if same:
            print("%s: %d positions x %d logits bit-identical to %s under %s" % (
                name, len(want[0]) // (4 * vocab), vocab, against, "; ".join(same)))
    if failed:
        print("FAIL: logits differ:\n  " + "\n  ".join(failed))
        return 1
    print("logits.identical: every model bit-identical (%d models)" % len(models))
    return 0


if __name__ == "__main__":
    sys.exit(main())
