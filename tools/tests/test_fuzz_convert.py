#!/usr/bin/python3
"""Fuzz harness of the Python converter (tools/convert.py with tools/gguf.py, tools/hf.py,
tools/bpe.py): its readers on truncated and mutated llama2.c checkpoints, GGUF files, Hugging Face
folders (config.json, model.safetensors, sharded index) and tokenizers (`--tokenizer-only` on a
tokenizer.json folder, GPT-2's encoder.json + vocab.bpe, a GGUF with a 'gpt2' tokenizer). Every input must either convert to a valid .mlb
(checked by mlb.MlbFile) or fail with an mlb.MlbError: one line, no output file, no temporary
file left behind. Anything else (IndexError, ValueError, struct.error, a MemoryError from a size
taken on trust, a run over 20 s ...) is a bug: the test fails and names the case, its mutation
and the exception; with ML_FUZZ_CONVERT_SAVE=DIR the failing inputs are kept there.

Default: a few hundred mutations (seconds; part of `python3 -m unittest discover -s tools/tests`).
Longer runs:  ML_FUZZ_CONVERT_N=20000 ML_FUZZ_CONVERT_SEED=7 /usr/bin/python3 \
                  tools/tests/test_fuzz_convert.py -v
N is the number of mutations per input format; SEED picks them (the default is fixed, so the
default suite is deterministic). A few cases also run the convert.py command line, which must
print one line, exit 1 or 2, and never show a traceback or an "internal error". Every input that
found a bug is kept in fuzz/regressions/convert/ and replayed by test_regressions.
"""
import sys

sys.dont_write_bytecode = True

import json
import os
import random
import shutil
import signal
import struct
import subprocess
import tempfile
import time
import traceback
import unittest

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, TOOLS)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import bpe  # noqa: E402
import mlb  # noqa: E402
import convert  # noqa: E402
import gguf  # noqa: E402
import hf  # noqa: E402
import gen_random  # noqa: E402
import rawtensor as rt  # noqa: E402
from test_convert import write_llama2c  # noqa: E402

N = int(os.environ.get("ML_FUZZ_CONVERT_N", "120"))
SEED = int(os.environ.get("ML_FUZZ_CONVERT_SEED", "1"))
SAVE = os.environ.get("ML_FUZZ_CONVERT_SAVE", "")
CASE_SECONDS = 20
REGRESSIONS = os.path.join(os.path.dirname(TOOLS), "fuzz", "regressions", "convert")

INTERESTING = [0, 1, 2, 3, 7, 31, 32, 33, 63, 64, 255, 256, 0x7FFF, 0xFFFF, 0x10000, 1 << 20,
               1 << 31, (1 << 31) - 1, (1 << 32) - 1, 1 << 32, 1 << 40, (1 << 63) - 1, 1 << 63,
               (1 << 64) - 1]
WEIRD_JSON = [None, True, False, 0, -1, 1, 3, 31, 33, 1 << 31, 1 << 40, 2 ** 70, -2 ** 70, 0.5,
              1e308, -1e-300, float("nan"), float("inf"), "", "x", "32", [], [1], [1, 2, 3],
              [[1]], {}, {"a": 1}, "F32", "F16", "BF16", "I8", "Q8_0"]


class Timeout(Exception):
    pass


def _on_alarm(signum, frame):
    raise Timeout("conversion ran over %d s" % CASE_SECONDS)


# ------------------------------------------------------------------------------- mutators

def mutate_bytes(rng, b, hot=None):
    """A mutated copy of b and a description. hot: (start, end) where most edits land (the
    parsed header of a format); tensor data past it is mostly opaque floats."""
    b = bytearray(b)
    n = len(b)
    lo, hi = hot if hot else (0, n)
    hi = max(lo + 1, min(hi, n))

    def pos(width=1):
        if n <= width:
            return 0
        if rng.random() < 0.8:
            return rng.randrange(lo, max(lo + 1, min(hi, n - width)))
        return rng.randrange(0, n - width)

    kind = rng.choice(["truncate", "truncate", "flip", "int32", "int64", "bytes", "delete",
                       "insert", "duplicate", "zero"])
    if kind == "truncate" or n < 16:
        k = rng.randrange(0, n) if rng.random() < 0.7 else max(0, n - rng.randrange(1, 9))
        return bytes(b[:k]), "truncated to %d of %d bytes" % (k, n)
    if kind == "flip":
        edits = []
        for _ in range(rng.randrange(1, 5)):
            p = pos()
            bit = 1 << rng.randrange(8)
            b[p] ^= bit
            edits.append("%d^%d" % (p, bit))
        return bytes(b), "bit flips " + ",".join(edits)
    if kind in ("int32", "int64"):
        w = 4 if kind == "int32" else 8
        p = pos(w)
        if rng.random() < 0.5:
            p -= p % w
        v = rng.choice(INTERESTING) % (1 << (8 * w))
        if rng.random() < 0.3:
            v = (1 << (8 * w)) - 1 - v if v else v  # negatives as two's complement
        b[p:p + w] = v.to_bytes(w, "little")
        return bytes(b), "%s %d at %d" % (kind, v, p)
    if kind == "bytes":
        p = pos()
        k = rng.randrange(1, 9)
        b[p:p + k] = bytes(rng.randrange(256) for _ in range(k))
        return bytes(b), "%d random bytes at %d" % (k, p)
    if kind == "delete":
        p = pos()
        k = rng.randrange(1, 17)
        del b[p:p + k]
        return bytes(b), "deleted %d bytes at %d" % (k, p)
    if kind == "insert":
        p = pos()
        k = rng.randrange(1, 17)
        b[p:p] = bytes(rng.randrange(256) for _ in range(k))
        return bytes(b), "inserted %d bytes at %d" % (k, p)
    if kind == "duplicate":
        p = pos()
        k = rng.randrange(1, 33)
        b[p:p] = b[p:p + k]
        return bytes(b), "duplicated %d bytes at %d" % (k, p)
    p = pos()
    k = rng.randrange(1, 33)
    b[p:p + k] = bytes(min(k, n - p))
    return bytes(b), "zeroed %d bytes at %d" % (k, p)


def mutate_json(rng, obj):
    """A copy of a JSON value with one member replaced, removed or added; and a description."""
    obj = json.loads(json.dumps(obj))
    paths = []

    def walk(o, path):
        if isinstance(o, dict):
            for k, v in o.items():
                paths.append(path + [k])
                walk(v, path + [k])
        elif isinstance(o, list):
            for i, v in enumerate(o):
                paths.append(path + [i])
                walk(v, path + [i])

    walk(obj, [])
    if not paths:
        return rng.choice(WEIRD_JSON), "replaced the whole document"
    path = rng.choice(paths)
    parent = obj
    for k in path[:-1]:
        parent = parent[k]
    key = path[-1]
    action = rng.choice(["replace", "replace", "replace", "delete", "add"])
    if action == "delete":
        del parent[key]
    elif action == "add" and isinstance(parent, dict):
        parent[rng.choice(["rope_scaling", "head_dim", "attention_bias", "hidden_act", "__metadata__",
                           "model.layers.0.extra.weight", "x"])] = rng.choice(WEIRD_JSON)
    else:
        v = rng.choice(WEIRD_JSON)
        if isinstance(parent[key], int) and not isinstance(parent[key], bool) and rng.random() < 0.5:
            v = parent[key] + rng.choice([-1, 1, 32, -32, 1 << 20])
        parent[key] = v
    return obj, "%s %s" % (action, "/".join(map(str, path)))


# ------------------------------------------------------------------------------- the seeds

DIMS = dict(dim=32, hidden=40, layers=1, heads=2, kv_heads=1, vocab=8, seq=16)


def tiny_tokenizer(path, vocab):
    pieces = [b"<unk>", b"\n<s>\n", b"\n</s>\n"] + [bytes([97 + i]) for i in range(vocab - 3)]
    with open(path, "wb") as f:
        f.write(struct.pack("<i", max(len(p) for p in pieces)))
        for i, p in enumerate(pieces):
            f.write(struct.pack("<fi", -float(i), len(p)) + p)


def make_seeds(d):
    """{format: [seed description]} written under d. A seed is (kind, path), kind one of
    'file' (the path is the input), 'hf' (a folder)."""
    seeds = {"llama2c": [], "gguf": [], "hf": []}
    p = os.path.join(d, "l2c_shared.bin")
    write_llama2c(p, 32, 40, 1, 2, 1, 8, 16, shared=True, seed=1)
    seeds["llama2c"].append(p)
    p = os.path.join(d, "l2c_wcls.bin")
    write_llama2c(p, 16, 24, 2, 4, 2, 6, 8, shared=False, seed=2)
    seeds["llama2c"].append(p)

    tok = os.path.join(d, "tok8.bin")
    tiny_tokenizer(tok, 8)
    reader = gen_random.RandomReader(DIMS["dim"], 64, DIMS["layers"], DIMS["heads"], DIMS["kv_heads"],
                                     DIMS["vocab"], DIMS["seq"], shared=True, seed=3)
    for ftype, name in ((rt.F32, "f32"), (rt.F16, "f16"), (rt.Q8_0, "q8_0"), (rt.Q4_0, "q4_0"),
                        (rt.BF16, "bf16")):
        p = os.path.join(d, "m_%s.gguf" % name)
        gguf.write_gguf(reader, p, ftype, tokenizer=tok, untie=(name == "q8_0"),
                        version=2 if name == "f16" else 3)
        seeds["gguf"].append(p)

    for dtype, shards in (("F32", 1), ("BF16", 2), ("F16", 1)):
        folder = os.path.join(d, "hf_%s_%d" % (dtype, shards))
        hf.write_hf(reader, folder, dtype=dtype, shards=shards, untie=(dtype == "F16"))
        seeds["hf"].append(folder)

    # issue 14: Qwen2 (q/k/v biases) and Llama 3 (llama3 RoPE scaling: rope_freqs.weight in GGUF)
    shape = (DIMS["dim"], 64, DIMS["layers"], DIMS["heads"], DIMS["kv_heads"], DIMS["vocab"],
             DIMS["seq"])
    qwen2 = gen_random.RandomReader(*shape, shared=True, seed=4, arch="qwen2", qkv_bias=True,
                                    rope_theta=1e6, norm_eps=1e-6)
    llama3 = gen_random.RandomReader(*shape, shared=True, seed=5, rope_scaling="llama3",
                                     rope_factor=32.0, rope_low_freq_factor=1.0,
                                     rope_high_freq_factor=4.0, rope_original_max_seq=16)
    for r, name, ftype in ((qwen2, "qwen2", rt.Q8_0), (llama3, "llama3", rt.F16)):
        p = os.path.join(d, "%s.gguf" % name)
        gguf.write_gguf(r, p, ftype)
        seeds["gguf"].append(p)
        folder = os.path.join(d, "hf_" + name)
        hf.write_hf(r, folder, dtype="F32" if name == "qwen2" else "BF16")
        seeds["hf"].append(folder)
    return seeds


def make_tokenizer_seeds(d):
    """[(kind, folder or file)] of small byte-level BPE tokenizers: a tokenizer.json folder (with
    tokenizer_config.json and generation_config.json), GPT-2's encoder.json + vocab.bpe, and a
    GGUF holding only 'gpt2' tokenizer metadata."""
    texts = ["Hello world, it's 2024!  x\n\ty 中文 😀 <|im_end|>", "the theory of the thesis 123"]
    v = bpe.train(texts, 24, bpe.PRE_SMOLLM, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    folder = os.path.join(d, "tok_hf")
    os.makedirs(folder)
    for name, doc in (("tokenizer.json", bpe.to_tokenizer_json(v)),
                      ("tokenizer_config.json", {"bos_token": "<|im_start|>", "eos_token": "<|im_end|>",
                                                 "add_bos_token": False, "chat_template": "{{ x }}"}),
                      ("generation_config.json", {"eos_token_id": [0, 2]})):
        with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
            json.dump(doc, f, ensure_ascii=False)
    g2 = os.path.join(d, "tok_gpt2")
    os.makedirs(g2)
    v2 = bpe.train(texts, 16, bpe.PRE_GPT2)
    enc = {bpe.remap(b): i for i, (k, b) in enumerate(v2.tokens)}
    enc["<|endoftext|>"] = len(enc)
    with open(os.path.join(g2, "encoder.json"), "w", encoding="utf-8") as f:
        json.dump(enc, f)
    with open(os.path.join(g2, "vocab.bpe"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "".join("%s %s\n" % (bpe.remap(v2.tokens[a][1]), bpe.remap(v2.tokens[b][1]))
                                            for a, b, _ in v2.merges))
    gg = os.path.join(d, "tok.gguf")
    w = gguf.GgufWriter(gg)
    for k, t, val in gguf.gpt2_tokenizer_metadata(v):
        w.add(k, t, val)
    w.write(lambda n: [])
    return [("hf", folder), ("gpt2", g2), ("gguf", gg)]


def gguf_header_end(b):
    """Offset where a GGUF's tensor data starts (the parsed part ends), found with gguf.py's
    own parse of the unmutated seed."""
    return min(len(b), 4096)


def safetensors_header_end(b):
    (n,) = struct.unpack_from("<Q", b)
    return 8 + n


# ------------------------------------------------------------------------------- the harness

class FuzzConvert(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="fuzz_convert_")
        seed_dir = os.path.join(cls.tmp, "seeds")
        os.makedirs(seed_dir)
        cls.seeds = make_seeds(seed_dir)
        cls.seeds["tokenizer"] = make_tokenizer_seeds(seed_dir)
        cls.cli_samples = []  # (format, input, message) of refused inputs, for the CLI test

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    # One conversion in-process: ("ok" | "error", message) or a failure recorded.
    def convert_case(self, fmt, desc, input_path, wtype):
        out_dir = tempfile.mkdtemp(dir=self.tmp, prefix="out_")
        out = os.path.join(out_dir, "m.mlb")
        old = signal.signal(signal.SIGALRM, _on_alarm)
        signal.alarm(CASE_SECONDS)
        t0 = time.time()
        try:
            convert.convert(input_path, out, wtype, progress=False, quiet=True)
            result = ("ok", "")
        except mlb.MlbError as e:
            result = ("error", str(e))
        except Exception as e:  # noqa: BLE001 - every other exception is a finding
            result = ("bug", "%s: %s\n%s" % (type(e).__name__, e, "".join(
                traceback.format_exception(type(e), e, e.__traceback__)[-4:])))
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
        secs = time.time() - t0
        kind, msg = result
        problem = None
        if kind == "bug":
            problem = msg
        elif kind == "error":
            if not msg or "\n" in msg:
                problem = "MlbError message is not one line: %r" % msg
            elif os.listdir(out_dir) not in ([], ["m.tokenizer.bin"]) or os.path.exists(out):
                problem = "failed but left files: %s" % os.listdir(out_dir)
        else:
            try:
                with mlb.MlbFile(out) as f:  # validates the header, the size and every array
                    h = f.header
                if h.wtype != mlb.WTYPES[wtype]:
                    problem = "converted with wtype %d" % h.wtype
            except mlb.MlbError as e:
                problem = "converted to an invalid .mlb: %s" % e
            leftovers = [x for x in os.listdir(out_dir) if x not in ("m.mlb", "m.tokenizer.bin")]
            if leftovers:
                problem = "temporary files left: %s" % leftovers
        if problem:
            saved = ""
            if SAVE:
                os.makedirs(SAVE, exist_ok=True)
                # a Hugging Face case is its whole folder, whichever file of it was the input
                src = os.path.join(self.tmp, "case", "hf") if fmt == "hf" else input_path
                src = src if os.path.exists(src) else input_path
                dst = os.path.join(SAVE, "%s-%d-%s" % (fmt, len(self.failures), os.path.basename(src)))
                (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, dst)
                saved = " (saved as %s; the input was %s)" % (dst, os.path.relpath(input_path, os.path.dirname(src)))
            self.failures.append("%s [%s, --wtype %s]%s: %s" % (fmt, desc, wtype, saved, problem))
        elif kind == "error" and sum(s[0] == fmt for s in self.cli_samples) < 2:
            keep = os.path.join(self.tmp, "cli_%d" % len(self.cli_samples))
            (shutil.copytree if os.path.isdir(input_path) else shutil.copy)(input_path, keep)
            self.cli_samples.append((fmt, keep, msg))
        shutil.rmtree(out_dir, ignore_errors=True)
        return kind, secs

    def run_format(self, fmt, make_case):
        rng = random.Random("%s-%d" % (fmt, SEED))
        self.failures = []
        counts = {"ok": 0, "error": 0, "bug": 0}
        slowest = 0.0
        for i in range(N):
            case_dir = os.path.join(self.tmp, "case")
            shutil.rmtree(case_dir, ignore_errors=True)
            os.makedirs(case_dir)
            path, desc = make_case(rng, case_dir)
            kind, secs = self.convert_case(fmt, "case %d: %s" % (i, desc), path,
                                           rng.choice(["f32", "q8_0", "q4_0"]))
            counts[kind] += 1
            slowest = max(slowest, secs)
        sys.stderr.write("\nfuzz convert %s: %d cases (seed %d): %d converted, %d clean errors, %d bugs; "
                         "slowest %.2f s\n" % (fmt, N, SEED, counts["ok"], counts["error"], counts["bug"],
                                               slowest))
        return counts

    def check(self, counts):
        self.assertEqual(self.failures, [], "\n".join(self.failures[:20]))
        self.assertGreater(counts["error"], 0, "no mutated input was refused: the harness is not mutating")
        self.assertEqual(counts["ok"] + counts["error"], N)

    def test_llama2c_checkpoints(self):
        seeds = self.seeds["llama2c"]

        def case(rng, d):
            src = rng.choice(seeds)
            with open(src, "rb") as f:
                b = f.read()
            m, desc = mutate_bytes(rng, b, hot=(0, 28))
            p = os.path.join(d, "in.bin")
            with open(p, "wb") as f:
                f.write(m)
            return p, "%s %s" % (os.path.basename(src), desc)

        self.check(self.run_format("llama2c", case))

    def test_gguf_files(self):
        seeds = self.seeds["gguf"]

        def case(rng, d):
            src = rng.choice(seeds)
            with open(src, "rb") as f:
                b = f.read()
            m, desc = mutate_bytes(rng, b, hot=(0, gguf_header_end(b)))
            if rng.random() < 0.2:  # a second edit: two fields wrong at once
                m, d2 = mutate_bytes(rng, m, hot=(0, gguf_header_end(m)))
                desc += "; " + d2
            p = os.path.join(d, "in.gguf")
            with open(p, "wb") as f:
                f.write(m)
            return p, "%s %s" % (os.path.basename(src), desc)

        counts = self.run_format("gguf", case)
        self.check(counts)

    def test_hf_folders(self):
        seeds = self.seeds["hf"]

        def case(rng, d):
            src = rng.choice(seeds)
            folder = os.path.join(d, "hf")
            shutil.copytree(src, folder)
            files = sorted(os.listdir(folder))
            target = rng.choice(files)
            p = os.path.join(folder, target)
            with open(p, "rb") as f:
                b = f.read()
            if target.endswith(".json") and rng.random() < 0.7:
                obj, desc = mutate_json(rng, json.loads(b))
                m = json.dumps(obj).encode()
            elif target.endswith(".safetensors") and rng.random() < 0.5:
                n = struct.unpack_from("<Q", b)[0]
                obj, desc = mutate_json(rng, json.loads(b[8:8 + n]))
                text = json.dumps(obj).encode()
                m = struct.pack("<Q", len(text)) + text + b[8 + n:]
                desc = "header " + desc
            else:
                hot = (0, safetensors_header_end(b)) if target.endswith(".safetensors") else None
                m, desc = mutate_bytes(rng, b, hot=hot)
            with open(p, "wb") as f:
                f.write(m)
            which = folder
            r = rng.random()
            if r < 0.15:
                which = os.path.join(folder, "config.json")
            elif r < 0.3 and "model.safetensors" in files:
                which = os.path.join(folder, "model.safetensors")
            return which, "%s: %s %s" % (os.path.basename(src), target, desc)

        self.check(self.run_format("hf", case))

    def tokenizer_case(self, desc, input_path):
        """convert.py --tokenizer-only in-process: an MLTK file (read back by bpe.read_mltk) or
        one MlbError line, nothing left behind."""
        out_dir = tempfile.mkdtemp(dir=self.tmp, prefix="out_")
        out = os.path.join(out_dir, "t.bin")
        old = signal.signal(signal.SIGALRM, _on_alarm)
        signal.alarm(CASE_SECONDS)
        try:
            convert.convert_tokenizer(input_path, out, quiet=True)
            kind, msg = "ok", ""
        except mlb.MlbError as e:
            kind, msg = "error", str(e)
        except Exception as e:  # noqa: BLE001 - every other exception is a finding
            kind, msg = "bug", "%s: %s\n%s" % (type(e).__name__, e, "".join(
                traceback.format_exception(type(e), e, e.__traceback__)[-4:]))
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
        problem = None
        if kind == "bug":
            problem = msg
        elif kind == "error":
            if not msg or "\n" in msg:
                problem = "MlbError message is not one line: %r" % msg
            elif os.listdir(out_dir):
                problem = "failed but left files: %s" % os.listdir(out_dir)
        else:
            try:
                with open(out, "rb") as f:
                    bpe.read_mltk(f.read(), out)
            except mlb.MlbError as e:
                problem = "converted to an invalid MLTK file: %s" % e
            if os.listdir(out_dir) != ["t.bin"]:
                problem = "temporary files left: %s" % os.listdir(out_dir)
        if problem:
            saved = ""
            if SAVE:
                os.makedirs(SAVE, exist_ok=True)
                src = os.path.join(self.tmp, "case", "tok")
                dst = os.path.join(SAVE, "tokenizer-%d" % len(self.failures))
                shutil.copytree(src, dst)
                saved = " (saved as %s)" % dst
            self.failures.append("tokenizer [%s]%s: %s" % (desc, saved, problem))
        elif kind == "error" and sum(s[0] == "tokenizer" for s in self.cli_samples) < 2:
            keep = os.path.join(self.tmp, "cli_%d" % len(self.cli_samples))
            shutil.copytree(os.path.dirname(input_path) if os.path.isfile(input_path) else input_path, keep)
            rel = os.path.basename(input_path) if os.path.isfile(input_path) else ""
            self.cli_samples.append(("tokenizer", os.path.join(keep, rel) if rel else keep, msg))
        shutil.rmtree(out_dir, ignore_errors=True)
        return kind

    def test_tokenizers(self):
        seeds = self.seeds["tokenizer"]
        rng = random.Random("tokenizer-%d" % SEED)
        self.failures = []
        counts = {"ok": 0, "error": 0, "bug": 0}
        for i in range(N):
            case_dir = os.path.join(self.tmp, "case")
            shutil.rmtree(case_dir, ignore_errors=True)
            os.makedirs(case_dir)
            kind, src = rng.choice(seeds)
            d = os.path.join(case_dir, "tok")
            if os.path.isdir(src):
                shutil.copytree(src, d)
            else:
                os.makedirs(d)
                shutil.copy(src, d)
            target = rng.choice(sorted(os.listdir(d)))
            p = os.path.join(d, target)
            with open(p, "rb") as f:
                b = f.read()
            if target.endswith(".json") and rng.random() < 0.7:
                obj, desc = mutate_json(rng, json.loads(b))
                if rng.random() < 0.3:  # a second edit
                    obj, d2 = mutate_json(rng, obj)
                    desc += "; " + d2
                m = json.dumps(obj, ensure_ascii=rng.random() < 0.5).encode()
            else:
                m, desc = mutate_bytes(rng, b)
            with open(p, "wb") as f:
                f.write(m)
            if kind == "hf":
                which = d if rng.random() < 0.5 else os.path.join(d, "tokenizer.json")
            elif kind == "gpt2":
                which = os.path.join(d, "encoder.json")
            else:
                which = p
            counts[self.tokenizer_case("case %d: %s: %s %s" % (i, kind, target, desc), which)] += 1
        sys.stderr.write("\nfuzz convert tokenizer: %d cases (seed %d): %d converted, %d clean errors, "
                         "%d bugs\n" % (N, SEED, counts["ok"], counts["error"], counts["bug"]))
        self.check(counts)

    def test_regressions(self):
        """Every input that found a converter bug (fuzz/regressions/convert/: a file, or a Hugging
        Face folder) converts or fails cleanly, for every output type."""
        self.failures = []
        names = sorted(os.listdir(REGRESSIONS)) if os.path.isdir(REGRESSIONS) else []
        names = [n for n in names if not n.endswith(".md")]
        self.assertGreater(len(names), 0, "no regression inputs in %s" % REGRESSIONS)
        for n in names:
            for wtype in ("f32", "q8_0", "q4_0"):
                self.convert_case("regression", n, os.path.join(REGRESSIONS, n), wtype)
        self.assertEqual(self.failures, [], "\n".join(self.failures))

    def test_zz_command_line_errors_are_one_line(self):
        """Refused inputs through convert.py's command line (after the in-process tests)."""
        if not self.cli_samples:
            self.skipTest("no refused inputs were kept (run with the other tests of this class)")
        for fmt, path, msg in self.cli_samples:
            out_dir = tempfile.mkdtemp(dir=self.tmp)
            out = os.path.join(out_dir, "m.mlb")
            flag = ["--tokenizer-only"] if fmt == "tokenizer" else []
            r = subprocess.run([sys.executable, os.path.join(TOOLS, "convert.py")] + flag + [path, out, "-q"],
                               capture_output=True, text=True, timeout=120)
            err = r.stderr
            self.assertIn(r.returncode, (1, 2), "%s %s: %s" % (fmt, path, err))
            self.assertEqual(err.count("\n"), 1, "one line: %r" % err)
            self.assertTrue(err.startswith("convert.py: "), err)
            self.assertNotIn("Traceback", err)
            self.assertNotIn("internal error", err)
            self.assertEqual(r.stdout, "")
            self.assertEqual(os.listdir(out_dir), [], "no output file after a failure")


if __name__ == "__main__":
    unittest.main()
