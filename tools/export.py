#!/usr/bin/python3
"""Write a model as GGUF or as a Hugging Face folder (for tests and measurements).

    export.py INPUT OUTPUT --format gguf|hf [--dtype f32|f16|bf16|q8_0|q4_0|q4_1|q5_0|q5_1|q2_k..q6_k]
              [--tensor-type NAME=DTYPE ...]
              [--gguf-version 2|3] [--tokenizer TOKENIZER.bin] [--shards N] [--untie]

INPUT: anything convert.py reads (llama2.c checkpoint, GGUF, Hugging Face folder), an .mlb file
(quantized tensors are dequantized), or random:PRESET[:SEED] (gen_random.py's seeded weights,
e.g. random:stories110m). OUTPUT: the .gguf file, or the folder for --format hf.

GGUF: matrices get --dtype (q8_0/q4_0 are quantized with .mlb's rules, scales rounded to fp16;
a matrix whose K is not a multiple of 32 falls back to F16), norms F32; --tokenizer embeds a
llama2.c tokenizer.bin as tokenizer.ggml.* 'llama' metadata, or a byte-level BPE tokenizer
(MLTK, tokenizer.json, encoder.json) as 'gpt2' metadata. HF: f32/f16/bf16 safetensors with q/k
rows in Hugging Face's half-split RoPE order, --shards N writes N files plus the index; a
byte-level BPE --tokenizer is written as the folder's tokenizer.json.
--untie stores the classifier separately even when it is the embedding.

.mlb version 2 models: arch qwen2 (q/k/v biases) is written as GGUF 'qwen2' (q/k rows and biases in
Hugging Face's half-split order, as llama.cpp stores them) and as a Qwen2ForCausalLM folder; llama3
RoPE scaling as HF rope_scaling {rope_type: llama3, ...} and as GGUF rope_freqs.weight (llama.cpp's
form) plus mlb.rope.llama3.* metadata carrying the four parameters; n_tokens only through the
tokenizer (its size; GGUF pads the token list to the vocabulary with unused [PAD<i>] tokens).
"""
import sys

sys.dont_write_bytecode = True

import json
import os

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import numpy  # noqa: E402,F401  (checked here for a one-line error)
except ImportError:
    sys.stderr.write("export.py: numpy is not available to %s; run it with /usr/bin/python3\n"
                     % sys.executable)
    sys.exit(1)
import mlb  # noqa: E402
import checkpoint  # noqa: E402
import convert  # noqa: E402
import gen_random  # noqa: E402
import gguf  # noqa: E402
import hf  # noqa: E402
import bpe_import  # noqa: E402
import rawtensor as rt  # noqa: E402

PROG = "export.py"
DTYPES = {"f32": rt.F32, "f16": rt.F16, "bf16": rt.BF16, "q8_0": rt.Q8_0, "q4_0": rt.Q4_0,
          # GGUF only, for test fixtures (tools/ggml_quants.py's simple encoder, not llama.cpp's)
          "q4_1": "Q4_1", "q5_0": "Q5_0", "q5_1": "Q5_1", "q2_k": "Q2_K", "q3_k": "Q3_K",
          "q4_k": "Q4_K", "q5_k": "Q5_K", "q6_k": "Q6_K"}


class MlbReader:
    """convert.py reader interface over an .mlb file (float32 values; quantized dequantized)."""

    def __init__(self, path):
        self.f = mlb.MlbFile(path)
        h = self.f.header
        self.hparams = dict(dim=h.dim, n_layers=h.n_layers, n_heads=h.n_heads,
                            n_kv_heads=h.n_kv_heads, hidden_dim=h.hidden_dim, vocab=h.vocab,
                            max_seq=h.max_seq, rope_theta=h.rope_theta, norm_eps=h.norm_eps,
                            shared_classifier=h.shared_classifier,
                            **{f: getattr(h, f) for f in mlb.V2_FIELDS + mlb.V3_FIELDS})
        self.description = ".mlb %s" % mlb.WTYPE_NAMES[h.wtype]

    def tensors(self):
        for name, t in self.f.tensors.items():
            if t.spec.type == mlb.F32:
                yield name, t.data
            else:
                yield name, t.dequantize()

    def close(self):
        self.f.close()


def open_input(spec):
    if spec.startswith("random:"):
        parts = spec.split(":")
        if len(parts) not in (2, 3) or parts[1] not in gen_random.PRESETS:
            raise mlb.MlbError("%s: expected random:PRESET[:SEED], PRESET one of %s"
                               % (spec, ", ".join(sorted(gen_random.PRESETS))))
        seed = int(parts[2]) if len(parts) == 3 else 0
        return gen_random.RandomReader(seed=seed, **gen_random.preset_args(parts[1]))
    if os.path.isfile(spec):
        with open(spec, "rb") as f:
            if f.read(4) == mlb.MAGIC:
                return MlbReader(spec)
    return convert.open_reader(spec)


def export(input_spec, output, fmt, dtype="f32", gguf_version=3, tokenizer=None, shards=1,
           untie=False, tensor_types=None):
    reader = open_input(input_spec)
    try:
        n_tokens = reader.hparams.get("n_tokens") or 0
        if n_tokens:  # HF and GGUF know the tokenizer size only from the tokenizer itself
            v = gguf.byte_level_vocab(tokenizer) if tokenizer else None
            if v is None:
                sys.stderr.write("%s: note: n_tokens = %d is not written without a byte-level BPE "
                                 "--tokenizer (a converter reads it from the tokenizer's size)\n"
                                 % (PROG, n_tokens))
            elif len(v.tokens) != n_tokens:
                raise mlb.MlbError("--tokenizer has %d tokens but the model's n_tokens is %d"
                                   % (len(v.tokens), n_tokens))
        if fmt == "gguf":
            gguf.write_gguf(reader, output, DTYPES[dtype], gguf_version, tokenizer, untie,
                            tensor_types={k: DTYPES[v] for k, v in (tensor_types or {}).items()})
        else:
            if dtype not in ("f32", "f16", "bf16"):
                raise mlb.MlbError("--dtype %s: Hugging Face export writes f32, f16 or bf16" % dtype)
            v = gguf.byte_level_vocab(tokenizer) if tokenizer else None
            if tokenizer and v is None:
                raise mlb.MlbError("--tokenizer: a llama2.c tokenizer.bin is for GGUF export (a "
                                   "Hugging Face folder takes a byte-level BPE tokenizer)")
            hf.write_hf(reader, output, DTYPES[dtype], shards, untie, vocab=v)
            if v is not None:
                with checkpoint.AtomicFile(os.path.join(output, "tokenizer.json")) as f:
                    f.write(json.dumps(bpe_import.to_tokenizer_json(v),
                                       ensure_ascii=False).encode("utf-8"))
    finally:
        reader.close()


def main(argv=None):
    ap = convert.OneLineParser(prog=PROG, description="Write a model as GGUF or Hugging Face "
                               "safetensors (tests, measurements).")
    ap.add_argument("input", help="checkpoint convert.py reads, an .mlb file, or random:PRESET[:SEED]")
    ap.add_argument("output", help="the .gguf file, or the folder for --format hf")
    ap.add_argument("--format", required=True, choices=("gguf", "hf"))
    ap.add_argument("--dtype", default="f32", type=str.lower, choices=list(DTYPES))
    ap.add_argument("--gguf-version", type=int, default=3, choices=(2, 3))
    ap.add_argument("--tokenizer", help="tokenizer to embed: a llama2.c tokenizer.bin (GGUF "
                    "'llama' metadata), or a byte-level BPE one - MLTK file, tokenizer.json, "
                    "encoder.json (GGUF 'gpt2' metadata; tokenizer.json in an HF folder)")
    ap.add_argument("--shards", type=int, default=1, help="safetensors files (HF)")
    ap.add_argument("--untie", action="store_true", help="store the classifier separately")
    ap.add_argument("--tensor-type", action="append", default=[], metavar="NAME=DTYPE",
                    help="GGUF: this tensor's type instead of --dtype (e.g. output.weight=q6_k, "
                    "as llama.cpp's Q4_K_M files mix types); repeatable")
    a = ap.parse_args(argv)
    if a.shards < 1:
        ap.error("--shards must be >= 1")
    types = {}
    for spec in a.tensor_type:
        name, _, t = spec.partition("=")
        if not name or t.lower() not in DTYPES:
            ap.error("--tensor-type %s: expected NAME=DTYPE with DTYPE one of %s" % (spec, ", ".join(DTYPES)))
        types[name] = t.lower()
    return convert.run_cli(PROG, lambda: export(a.input, a.output, a.format, a.dtype,
                                                a.gguf_version, a.tokenizer, a.shards, a.untie,
                                                types))


if __name__ == "__main__":
    sys.exit(main())
