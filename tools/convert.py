#!/usr/bin/python3
"""Convert a model checkpoint to an .mlb file (docs/mlb-format.md, docs/import.md).

    convert.py INPUT OUTPUT [--wtype f32|q8_0|q4_0] [--layout rows|panel16|panel16-f16]
               [--max-seq N] [--tokenizer PATH | --no-tokenizer] [-v | -q]
    convert.py --tokenizer-only INPUT OUT.tokenizer.bin

--layout: panel16 writes .mlb layout 1 (quantized tensors in 16-row panels, every build's fast
path), the default for q8_0 and q4_0; rows writes layout 0 (row-major blocks), the default and
the only layout for f32. Same values either way, only the byte order differs. panel16-f16 writes
layout 2: layout 1 with every block scale stored as a binary16 (a panel 5.6 % (Q8_0) / 10 %
(Q4_0) smaller); the values are layout 1's with each scale rounded to binary16 (exact for a
GGUF's Q8_0/Q4_0 blocks, whose scales are binary16; a scale of magnitude >= 65520 is an error).

Input formats (chosen from the input's kind and magic bytes):
  - llama2.c legacy checkpoint (karpathy/llama2.c export version 0: seven int32, then float32s)
  - GGUF v2/v3, architecture llama (Llama 3's rope_freqs.weight included) or qwen2,
    F32/F16/BF16/Q8_0/Q4_0 tensors (tools/gguf.py); its
    tokenizer is written beside the output: a 'llama' (SentencePiece) one as a llama2.c
    tokenizer.bin, a 'gpt2' (byte-level BPE) one as an MLTK file (docs/tokenizer-format.md)
  - Hugging Face checkpoint, model_type llama (Llama 1-3 with llama3 rope_scaling, SmolLM2,
    TinyLlama) or qwen2 (Qwen2, Qwen2.5): a folder with config.json and model.safetensors or
    model.safetensors.index.json + shards (or one of those files), F32/F16/BF16 (tools/hf.py);
    its byte-level BPE tokenizer.json, when there is one, is written beside the output as MLTK

--tokenizer-only converts just a tokenizer (tools/bpe.py): INPUT a tokenizer.json (with
tokenizer_config.json / generation_config.json beside it when present), a Hugging Face folder,
GPT-2's encoder.json (+ vocab.bpe), or a GGUF ('gpt2' -> MLTK, 'llama' -> llama2.c tokenizer.bin).

A reader is an object with
  - `hparams`: dict with dim, n_layers, n_heads, n_kv_heads, hidden_dim (unpadded), vocab,
    max_seq, rope_theta, norm_eps, shared_classifier, optionally the .mlb version-2 fields
    (mlb.V2_FIELDS: arch, qkv_bias, rope_scaling + parameters, n_tokens) and version-3 fields
    (mlb.V3_FIELDS: head_size, qk_norm), and `description`;
  - `tensors()`: yields (name, data) in .mlb order (mlb.tensor_plan names: "tok_emb",
    "layers.<l>.<attn_norm|wq|wk|wv|[bq|bk|bv]|[q_norm|k_norm]|wo|ffn_norm|w1|w2|w3>", "final_norm", "wcls"), with the
    source's own hidden_dim; data is a float32-convertible array, an iterable of row chunks,
    or a rawtensor.RawTensor (whose Q8_0/Q4_0 blocks are copied when the output type matches);
    `convert()` zero-pads hidden_dim to a multiple of 32;
  - `close()`; optionally `notes` (lines for stderr), `source_types` ({name: stored type}),
    `input_bytes`, and `tokenizer_bin()` (llama2.c tokenizer or MLTK bytes; None when the input
    has no tokenizer file; raises checkpoint.TokenizerUnavailable when it has one that cannot be
    written).
Exit codes: 0 ok, 1 bad input / I/O error, 2 usage error or a shape the output type cannot store.
"""
import sys

sys.dont_write_bytecode = True  # keep tools/ free of __pycache__

import argparse
import os
import signal
import struct
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import numpy as np  # noqa: E402
except ImportError:
    sys.stderr.write("convert.py: numpy is not available to %s; run it with /usr/bin/python3 "
                     "(Debian's python3-numpy)\n" % sys.executable)
    sys.exit(1)
import mlb  # noqa: E402
import checkpoint  # noqa: E402
import rawtensor  # noqa: E402
import gguf  # noqa: E402
import hf  # noqa: E402
import bpe_import  # noqa: E402
import mltk  # noqa: E402

PROG = "convert.py"
PROGRESS_THRESHOLD = 50 * 1000 * 1000  # input bytes above which progress is shown by default


# ------------------------------------------------------------------------- llama2.c reader

class Llama2cReader:
    """llama2.c legacy checkpoint: int32 dim, hidden_dim, n_layers, n_heads, n_kv_heads,
    vocab_size (negative: separate classifier stored last), seq_len; then float32 arrays
    grouped by kind over all layers (run.c's memory_map_weights order), including the legacy
    freq_cis_real/imag tables (seq_len x head_size/2 each), which are skipped."""

    HEADER = struct.Struct("<7i")
    FIELDS = ("dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len")

    def __init__(self, path):
        self.path = path
        size, head = _stat_and_head(path, self.HEADER.size)
        if len(head) < self.HEADER.size:
            raise mlb.MlbError("%s: %d bytes, too short for a llama2.c checkpoint header (%d bytes)"
                               % (path, size, self.HEADER.size))
        vals = dict(zip(self.FIELDS, self.HEADER.unpack(head)))
        for f in self.FIELDS:
            if vals[f] == 0 or (vals[f] < 0 and f != "vocab_size"):
                raise mlb.MlbError("%s: not a llama2.c checkpoint (header field %s = %d)"
                                   % (path, f, vals[f]))
        dim, hidden, L = vals["dim"], vals["hidden_dim"], vals["n_layers"]
        n_heads, n_kv, seq = vals["n_heads"], vals["n_kv_heads"], vals["seq_len"]
        shared = vals["vocab_size"] > 0
        vocab = abs(vals["vocab_size"])
        head_size = dim // n_heads               # run.c's integer arithmetic
        kv_dim = dim * n_kv // n_heads
        self.description = ("dim %d, hidden %d, layers %d, heads %d, kv heads %d, vocab %d%s, seq %d"
                            % (dim, hidden, L, n_heads, n_kv, vocab,
                               "" if shared else " (separate classifier)", seq))
        groups = [("tok_emb", vocab * dim), ("attn_norm", L * dim), ("wq", L * dim * dim),
                  ("wk", L * kv_dim * dim), ("wv", L * kv_dim * dim), ("wo", L * dim * dim),
                  ("ffn_norm", L * dim), ("w1", L * hidden * dim), ("w2", L * dim * hidden),
                  ("w3", L * hidden * dim), ("final_norm", dim),
                  ("freq_cis_real", seq * (head_size // 2)), ("freq_cis_imag", seq * (head_size // 2))]
        if not shared:
            groups.append(("wcls", vocab * dim))
        self.offsets, n = {}, 0
        for name, count in groups:
            self.offsets[name] = n
            n += count
        expect = self.HEADER.size + 4 * n
        if size != expect:
            what = ("truncated: %d bytes missing" % (expect - size) if size < expect
                    else "%d unexpected trailing bytes" % (size - expect))
            raise mlb.MlbError("%s: %s (the llama2.c header [%s] implies %d bytes, the file has %d)"
                               % (path, what, self.description, expect, size))
        self.hparams = dict(dim=dim, n_layers=L, n_heads=n_heads, n_kv_heads=n_kv,
                            hidden_dim=hidden, vocab=vocab, max_seq=seq, rope_theta=10000.0,
                            norm_eps=1e-5, shared_classifier=1 if shared else 0)
        self._kv_dim, self._n = kv_dim, n
        self._mm = None

    def _floats(self):
        if self._mm is None:
            try:
                self._mm = np.memmap(self.path, dtype="<f4", mode="r", offset=self.HEADER.size,
                                     shape=(self._n,))
            except OSError as e:
                raise mlb.MlbError("cannot read %s: %s" % (self.path, e.strerror or e))
        return self._mm

    def _group(self, name, shape, layer=None):
        """View of group `name` (of all layers) as shape, or layer `layer` of it."""
        per = int(np.prod(shape))
        start = self.offsets[name] + (0 if layer is None else layer * per)
        return self._floats()[start:start + per].reshape(shape)

    def tensors(self):
        hp = self.hparams
        D, H, KV, V = hp["dim"], hp["hidden_dim"], self._kv_dim, hp["vocab"]
        shapes = {"attn_norm": (D,), "wq": (D, D), "wk": (KV, D), "wv": (KV, D), "wo": (D, D),
                  "ffn_norm": (D,), "w1": (H, D), "w2": (D, H), "w3": (H, D)}
        yield "tok_emb", self._group("tok_emb", (V, D))
        for layer in range(hp["n_layers"]):
            for base in mlb.LAYER_TENSORS:
                yield "layers.%d.%s" % (layer, base), self._group(base, shapes[base], layer)
        yield "final_norm", self._group("final_norm", (D,))
        if not hp["shared_classifier"]:
            yield "wcls", self._group("wcls", (V, D))

    def close(self):
        self._mm = None


# ---------------------------------------------------------------------------- dispatching

def _stat_and_head(path, n):
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            return size, f.read(n)
    except FileNotFoundError:
        raise mlb.MlbError("%s: no such file" % path)
    except IsADirectoryError:
        raise mlb.MlbError("%s: is a directory" % path)
    except OSError as e:
        raise mlb.MlbError("cannot read %s: %s" % (path, e.strerror or e))


def open_reader(path):
    """Pick the reader for `path` from its kind and magic bytes: a folder (or a .safetensors,
    model.safetensors.index.json or config.json file) is a Hugging Face checkpoint, "GGUF" a
    GGUF file, anything else a llama2.c checkpoint."""
    if os.path.isdir(path):
        return hf.HfReader(path)
    base = os.path.basename(path)
    if base.endswith(".safetensors") or base in ("model.safetensors.index.json", "config.json"):
        _stat_and_head(path, 0)  # a clear error for a missing file
        return hf.HfReader(path)
    _, magic = _stat_and_head(path, 4)
    if magic == b"GGUF":
        return gguf.GgufReader(path)
    if magic == mlb.MAGIC:
        raise mlb.MlbError("%s: already an .mlb file" % path)
    if magic == struct.pack("<I", 0x616B3432):
        raise mlb.MlbError("%s: llama2.c export version 1/2 (magic 'ak42') is not supported; "
                           "export with --version 0 (legacy)" % path)
    return Llama2cReader(path)


# ----------------------------------------------------------------------------- conversion

def _row_chunks(arr, cols):
    """Row chunks of a 2-D array, or the chunks of an iterable of chunks."""
    if isinstance(arr, np.ndarray):
        step = mlb.chunk_rows(cols)
        return (arr[r:r + step] for r in range(0, arr.shape[0], step))
    return iter(arr)


def pad_hidden(name, arr, hidden, hidden_padded):
    """Zero-pad hidden_dim: extra zero rows for w1/w3, extra zero columns for w2. `arr` is a
    2-D array or an iterable of row chunks; the result is a stream of row chunks."""
    base = name.rsplit(".", 1)[-1]
    if hidden == hidden_padded or base not in ("w1", "w2", "w3"):
        return arr

    def rows_then_zeros():
        cols = None
        for c in _row_chunks(arr, hidden_padded):
            cols = c.shape[1]
            yield c
        if cols is not None:
            yield np.zeros((hidden_padded - hidden, cols), np.float32)

    def padded_cols():
        for c in _row_chunks(arr, hidden_padded):
            if c.shape[1] != hidden:
                raise mlb.MlbError("tensor %s: %d columns, expected %d" % (name, c.shape[1], hidden))
            out = np.zeros((c.shape[0], hidden_padded), np.float32)
            out[:, :hidden] = c
            yield out

    return padded_cols() if base == "w2" else rows_then_zeros()


def header_for(hparams, wtype, max_seq=None, layout=mlb.LAYOUT_ROWS):
    """The .mlb header for a reader's hparams, hidden_dim padded, max_seq replaced when given;
    validated (ShapeError names the first tensor the output type cannot store)."""
    h = mlb.Header(hparams["dim"], hparams["n_layers"], hparams["n_heads"], hparams["n_kv_heads"],
                   mlb.pad_to(hparams["hidden_dim"]), hparams["vocab"],
                   max_seq if max_seq else hparams["max_seq"],
                   hparams["rope_theta"], hparams["norm_eps"], wtype,
                   hparams["shared_classifier"], layout,
                   **{f: hparams[f] for f in mlb.V2_FIELDS + mlb.V3_FIELDS if f in hparams})
    return h.validate()


def resolve_types(wtype, layout, f16_scales=False):
    """(wtype id, layout id) from names or ids; ShapeError (exit 2) for an unknown name, for
    panel16 or panel16-f16 with f32, or for f16_scales with f32, before any input is read.
    layout None: panel16 for quantized types, rows for f32."""
    if isinstance(wtype, str):
        if wtype not in mlb.WTYPES:
            raise mlb.ShapeError("bad wtype %r (choose from %s)" % (wtype, ", ".join(mlb.WTYPES)))
        wtype = mlb.WTYPES[wtype]
    if layout is None:
        layout = mlb.LAYOUT_ROWS if wtype == mlb.F32 else mlb.LAYOUT_PANEL16
    if isinstance(layout, str):
        if layout not in mlb.LAYOUTS:
            raise mlb.ShapeError("bad layout %r (choose from %s)"
                                 % (layout, ", ".join(mlb.LAYOUTS)))
        layout = mlb.LAYOUTS[layout]
    if layout in mlb.PANEL_LAYOUTS and wtype == mlb.F32:
        raise mlb.ShapeError("--layout %s needs --wtype q8_0 or q4_0 (f32 weights are "
                             "stored row-major only)" % mlb.LAYOUT_NAMES[layout])
    if f16_scales and wtype == mlb.F32:
        raise mlb.ShapeError("--f16-scales needs --wtype q8_0 or q4_0 (f32 weights have no "
                             "block scales)")
    return wtype, layout


def prepare(name, data, spec, hidden, hidden_padded):
    """The data to hand to MlbWriter.write_tensor for tensor `spec`: a stored Q8_0/Q4_0 tensor
    of the output's type stays quantized (its blocks are copied); anything else becomes float32
    row chunks, hidden_dim zero-padded."""
    if isinstance(data, rawtensor.RawTensor):
        if data.quantized and rawtensor.MLB_TYPE[data.type] == spec.type:
            chunks = data.quant_chunks()
            base = name.rsplit(".", 1)[-1]
            if base in ("w1", "w3") and hidden != hidden_padded:
                chunks = _chain(chunks, [mlb.zero_block_rows(spec.type, hidden_padded - hidden,
                                                             spec.cols)])
            elif base == "w2" and hidden != hidden_padded:  # cannot happen: K % 32 == 0
                raise mlb.MlbError("internal: quantized %s with %d columns" % (data.name, hidden))
            return mlb.Prequantized(spec.type, chunks, data.describe())
        data = data.float_chunks()
    return pad_hidden(name, data, hidden, hidden_padded)


def _chain(*iterables):
    for it in iterables:
        for x in it:
            yield x


def panels_note(layout, f16_scales=False):
    """The progress line's note on the layout: ", 16-row panels[, binary16 scales]"."""
    if layout == mlb.LAYOUT_PANEL16_F16:
        return ", 16-row panels, binary16 scales"
    note = ", 16-row panels" if layout == mlb.LAYOUT_PANEL16 else ""
    return note + (", scales rounded to binary16" if f16_scales else "")


def write_mlb(reader, output, wtype, progress=None, prog=PROG, max_seq=None,
              layout=mlb.LAYOUT_ROWS, f16_scales=False):
    """Stream reader's tensors into `output` (atomically) in layout `layout` (ids: 0 rows, 1
    16-row panels, 2 16-row panels with binary16 scales). f16_scales: round every block scale to
    a binary16 value, stored as float32 in layouts 0 and 1 (layout 2 always rounds them, and
    stores halves), so that a layout-1 file written with f16_scales holds the same values as the
    layout-2 file; MlbError (exit 1) naming the tensor when a scale overflows binary16.
    progress: None/False/True."""
    hp = reader.hparams
    header = header_for(hp, wtype, max_seq, layout)
    if f16_scales:
        resolve_types(wtype, layout, f16_scales)  # f32: the one-line ShapeError
    plan = mlb.tensor_plan(header)
    pr = mlb.Progress(prog, mlb.file_size(header), len(plan), enabled=bool(progress))
    with mlb.MlbWriter(output, header, pr, f16_scales=f16_scales) as w:
        for name, data in reader.tensors():
            spec = w.next_spec()
            w.write_tensor(name, prepare(name, data, spec, hp["hidden_dim"], header.hidden_dim)
                           if spec is not None else data)
    return header


def type_notes(reader, wtype, layout=mlb.LAYOUT_ROWS):
    """One line per stored matrix type that is not float32 or is not copied as it is."""
    counts = {}
    for name, t in getattr(reader, "source_types", {}).items():
        if name.endswith("norm") or t == rawtensor.F32:
            continue  # norms are always float32; float32 matrices are the ordinary case
        counts[t] = counts.get(t, 0) + 1
    out, target = [], mlb.WTYPE_NAMES[wtype]
    for t in sorted(counts):
        n = counts[t]
        what = "%d %s tensor%s" % (n, t, "" if n == 1 else "s")
        if t in rawtensor.MLB_TYPE:
            if rawtensor.MLB_TYPE[t] == wtype:
                out.append("%s copied without re-quantizing (%s)" % (
                    what, "fp16 scales kept as binary16, exact" if layout == mlb.LAYOUT_PANEL16_F16
                    else "fp16 scales widened to float32, exact"))
            elif wtype == mlb.F32:
                out.append("%s dequantized to float32 (exact)" % what)
            else:
                out.append("%s dequantized to float32 and re-quantized as %s with .mlb's rules "
                           "(the values change; convert to %s to keep them)"
                           % (what, target, t.lower()))
        elif wtype == mlb.F32:
            out.append("%s widened to float32 (exact)" % what)
        else:
            out.append("%s widened to float32 and quantized as %s" % (what, target))
    return out


def default_tokenizer_path(output):
    base = output[:-4] if output.endswith(".mlb") else output
    return base + ".tokenizer.bin"


def _write_file_tmp(path, data):
    """Write data to a temporary file next to path; return the temporary name."""
    d = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(dir=d, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    except OSError as e:
        raise mlb.MlbError("cannot create a file in %s: %s" % (d, e.strerror or e))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
    except BaseException:
        _unlink_quietly(tmp)
        raise
    return tmp


def _unlink_quietly(path):
    """Remove a temporary file of ours; one already gone (or not removable) is left alone."""
    try:
        os.unlink(path)
    except OSError:
        pass


def _same_file(a, b):
    try:
        return os.path.exists(a) and os.path.exists(b) and os.path.samefile(a, b)
    except OSError:
        return False


def convert(input_path, output, wtype, progress=None, prog=PROG, max_seq=None, tokenizer=None,
            quiet=False, layout=None):
    """Convert a checkpoint. progress=None: on for inputs over ~50 MB. max_seq: replaces the
    input's context length. tokenizer: where to write the input's tokenizer (GGUF) as a llama2.c
    tokenizer.bin; None = beside the output (<output without .mlb>.tokenizer.bin) when the input
    has one, False = never. quiet: no notes on stderr. layout: "rows" (0), "panel16" (1,
    quantized wtype only), "panel16-f16" (2: panels with binary16 scales, quantized wtype only)
    or None (the default: panel16 for q8_0/q4_0, rows for f32). Returns the .mlb header."""
    wtype, layout = resolve_types(wtype, layout)
    if max_seq is not None and not 1 <= max_seq < 1 << 32:
        raise mlb.ShapeError("--max-seq %d: must be in [1, 2^32)" % max_seq)
    reader = open_reader(input_path)
    tok_tmp = None
    try:
        inputs = [input_path] + [sf.path for sf in getattr(reader, "files", [])]
        if any(_same_file(p, output) for p in inputs):
            raise mlb.MlbError("%s: output would overwrite the input" % output)
        notes = []
        tok_bytes, tok_path = None, None
        if tokenizer is not False:
            explicit = tokenizer is not None
            tok_path = tokenizer if explicit else default_tokenizer_path(output)
            if not hasattr(reader, "tokenizer_bin"):
                if explicit:
                    raise mlb.MlbError("%s: a %s input carries no tokenizer that can be written "
                                       "(--tokenizer is for GGUF and Hugging Face input)"
                                       % (input_path, getattr(reader, "kind", "llama2.c")))
            else:
                try:
                    tok_bytes = reader.tokenizer_bin()
                except checkpoint.TokenizerUnavailable as e:
                    if explicit:
                        raise mlb.MlbError("%s: cannot write the tokenizer: %s" % (input_path, e))
                    notes.append("no tokenizer written: %s" % e)
                if tok_bytes is None and explicit and not notes:
                    raise mlb.MlbError("%s: cannot write the tokenizer: the folder has no "
                                       "tokenizer.json" % input_path)
                if tok_bytes is not None:
                    if os.path.abspath(tok_path) == os.path.abspath(output) or \
                            _same_file(tok_path, output):
                        raise mlb.MlbError("%s: the tokenizer would overwrite the output" % tok_path)
                    if any(_same_file(p, tok_path) for p in inputs):
                        raise mlb.MlbError("%s: the tokenizer would overwrite the input" % tok_path)
                    if os.path.isdir(tok_path):
                        raise mlb.MlbError("%s: tokenizer output is a directory" % tok_path)
        notes = list(getattr(reader, "notes", [])) + notes + type_notes(reader, wtype, layout)
        if max_seq is not None and max_seq != reader.hparams["max_seq"]:
            notes.append("max_seq %d (the input's context length is %d)"
                         % (max_seq, reader.hparams["max_seq"]))
        # the header first: a shape error must come before anything is written
        header_for(reader.hparams, wtype, max_seq, layout)
        if progress is None:
            progress = getattr(reader, "input_bytes", None) or os.path.getsize(input_path)
            progress = progress > PROGRESS_THRESHOLD
        if progress:
            sys.stderr.write("%s: %s: %s -> %s%s\n"
                             % (prog, input_path, reader.description, mlb.WTYPE_NAMES[wtype],
                                panels_note(layout)))
        if not quiet:
            for n in notes:
                sys.stderr.write("%s: note: %s\n" % (prog, n))
        if tok_bytes is not None:
            tok_tmp = _write_file_tmp(tok_path, tok_bytes)
        header = write_mlb(reader, output, wtype, progress, prog, max_seq, layout)
        if tok_tmp is not None:
            os.replace(tok_tmp, tok_path)
            tok_tmp = None
            if not quiet:
                n = (struct.unpack_from("<I", tok_bytes, 8)[0] if tok_bytes[:4] == mltk.MAGIC
                     else header.vocab)
                sys.stderr.write("%s: wrote the tokenizer (%d tokens%s) to %s\n"
                                 % (prog, n, ", MLTK" if tok_bytes[:4] == mltk.MAGIC else "",
                                    tok_path))
        return header
    finally:
        if tok_tmp is not None:
            _unlink_quietly(tok_tmp)
        reader.close()


# ------------------------------------------------------------------------- tokenizer only

def read_tokenizer(input_path):
    """(bytes to write, description) of the tokenizer in input_path: a tokenizer.json, a folder,
    GPT-2's encoder.json, or a GGUF ('gpt2' -> MLTK, 'llama' -> llama2.c tokenizer.bin)."""
    if os.path.isdir(input_path):
        v = bpe_import.from_hf_folder(input_path)
        return v.to_mltk(), v.describe()
    _, magic = _stat_and_head(input_path, 4)
    if magic == b"GGUF":
        g = gguf.GgufFile(input_path)
        try:
            md = g.metadata
            model = md.get("tokenizer.ggml.model")
            if isinstance(model, str) and model == "gpt2":
                v = bpe_import.from_gguf_metadata(md, input_path)
                return v.to_mltk(), v.describe()
            try:
                toks = md.get("tokenizer.ggml.tokens")
                data = gguf.llama2c_tokenizer(md, len(toks) if isinstance(toks, list) else 0)
            except checkpoint.TokenizerUnavailable as e:
                raise mlb.MlbError("%s: %s" % (input_path, e))
            return data, "llama2.c tokenizer.bin (SentencePiece vocabulary, %d tokens)" % len(toks)
        finally:
            g.close()
    if magic == mltk.MAGIC:
        raise mlb.MlbError("%s: already an MLTK tokenizer file" % input_path)
    if os.path.basename(input_path) == "encoder.json":
        v = bpe_import.from_gpt2_files(input_path,
                                       os.path.join(os.path.dirname(input_path), "vocab.bpe"))
    else:
        v = bpe_import.from_tokenizer_json(input_path)
    return v.to_mltk(), v.describe()


def convert_tokenizer(input_path, output, quiet=False, prog=PROG):
    """--tokenizer-only: write input_path's tokenizer to output (atomically)."""
    folder = input_path if os.path.isdir(input_path) else os.path.dirname(os.path.abspath(input_path))
    inputs = [input_path] + [os.path.join(folder, f) for f in (
        "tokenizer.json", "tokenizer_config.json", "generation_config.json", "config.json",
        "chat_template.jinja", "encoder.json", "vocab.bpe")]
    if any(_same_file(p, output) for p in inputs) or \
            os.path.abspath(input_path) == os.path.abspath(output):
        raise mlb.MlbError("%s: output would overwrite the input" % output)
    if os.path.isdir(output):
        raise mlb.MlbError("%s: the output is a directory" % output)
    data, what = read_tokenizer(input_path)
    tmp = _write_file_tmp(output, data)
    try:
        os.replace(tmp, output)
    except BaseException:
        _unlink_quietly(tmp)
        raise
    if not quiet:
        sys.stderr.write("%s: %s: %s -> %s\n" % (prog, input_path, what, output))
    return data


# ------------------------------------------------------------------------------------ CLI

class OneLineParser(argparse.ArgumentParser):
    def error(self, message):
        sys.stderr.write("%s: %s (see --help)\n" % (self.prog, message))
        sys.exit(2)


def run_cli(prog, body):
    """Run body() with one-line errors, exit codes, and SIGTERM cleaned up like Ctrl-C."""
    def on_term(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    try:
        body()
        return 0
    except mlb.MlbError as e:
        sys.stderr.write("%s: %s\n" % (prog, e))
        return e.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("%s: interrupted; no output written\n" % prog)
        return 130
    except MemoryError:
        sys.stderr.write("%s: out of memory\n" % prog)
        return 1
    except OSError as e:
        where = e.filename if e.filename else "I/O error"
        sys.stderr.write("%s: %s: %s\n" % (prog, where, e.strerror or e))
        return 1
    except Exception as e:
        if os.environ.get("MLB_DEBUG"):
            raise
        sys.stderr.write("%s: internal error: %s: %s (set MLB_DEBUG=1 for a traceback)\n"
                         % (prog, type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
        return 1


def main(argv=None):
    ap = OneLineParser(prog=PROG, usage="%(prog)s INPUT OUTPUT.mlb [options]\n"
                       "       %(prog)s --tokenizer-only INPUT OUT.tokenizer.bin", description="Convert a llama2.c checkpoint, a GGUF file or a "
                       "Hugging Face Llama/Qwen2 folder to an .mlb file, and its tokenizer beside it; "
                       "or, with --tokenizer-only, just a tokenizer.")
    ap.add_argument("input", help="llama2.c legacy checkpoint (.bin), GGUF file (.gguf), or "
                    "Hugging Face folder (config.json + model.safetensors[.index.json]); with "
                    "--tokenizer-only: a tokenizer.json, a Hugging Face folder, GPT-2's "
                    "encoder.json (vocab.bpe beside it) or a GGUF")
    ap.add_argument("output", help="the .mlb file to write (replaced atomically); with "
                    "--tokenizer-only: the tokenizer file")
    ap.add_argument("--tokenizer-only", action="store_true",
                    help="convert only the tokenizer: byte-level BPE (tokenizer.json, GGUF "
                    "'gpt2') to MLTK (docs/tokenizer-format.md), a GGUF 'llama' one to a "
                    "llama2.c tokenizer.bin")
    ap.add_argument("--wtype", default="f32", type=str.lower, choices=list(mlb.WTYPES),
                    help="type of the embedding and matrices (default f32)")
    ap.add_argument("--layout", default=None, type=str.lower, choices=list(mlb.LAYOUTS),
                    help="panel16: quantized tensors in 16-row panels (layout 1; the default for "
                    "q8_0 and q4_0: every build's fast path); panel16-f16: the same panels with "
                    "binary16 block scales (layout 2; each scale rounded to binary16, 5.6 %% / 10 "
                    "%% fewer bytes for q8_0 / q4_0); rows: row-major blocks (layout 0; the "
                    "default and the only one for f32)")
    ap.add_argument("--max-seq", type=int, metavar="N",
                    help="store max_seq = N instead of the input's context length")
    t = ap.add_mutually_exclusive_group()
    t.add_argument("--tokenizer", metavar="PATH",
                   help="where to write the input's tokenizer (a GGUF's, or a Hugging Face "
                   "folder's tokenizer.json): llama2.c tokenizer.bin or MLTK (default: OUTPUT "
                   "with .mlb replaced by .tokenizer.bin)")
    t.add_argument("--no-tokenizer", action="store_true", help="do not write the tokenizer")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("-v", "--verbose", action="store_true", help="always show progress")
    g.add_argument("-q", "--quiet", action="store_true", help="no progress and no notes")
    args = ap.parse_args(argv)
    if args.tokenizer_only:
        extra = [o for o, given in (("--wtype", args.wtype != "f32"), ("--layout", args.layout),
                                    ("--max-seq", args.max_seq is not None),
                                    ("--tokenizer", args.tokenizer is not None),
                                    ("--no-tokenizer", args.no_tokenizer), ("-v", args.verbose))
                 if given]
        if extra:
            ap.error("--tokenizer-only takes no %s" % extra[0])
        return run_cli(PROG, lambda: convert_tokenizer(args.input, args.output, args.quiet))
    progress = True if args.verbose else (False if args.quiet else None)
    tok = False if args.no_tokenizer else args.tokenizer
    return run_cli(PROG, lambda: convert(args.input, args.output, args.wtype, progress,
                                         max_seq=args.max_seq, tokenizer=tok, quiet=args.quiet,
                                         layout=args.layout))


if __name__ == "__main__":
    sys.exit(main())
