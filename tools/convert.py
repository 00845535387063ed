#!/usr/bin/python3
"""Convert a model checkpoint to an .mlb file (docs/mlb-format.md).

    convert.py INPUT OUTPUT [--wtype f32|q8_0|q4_0] [-v | -q]

Input formats (chosen from the input's magic bytes / kind):
  - llama2.c legacy checkpoint (karpathy/llama2.c export version 0: seven int32, then float32s)
  - planned: Hugging Face safetensors folder, GGUF (recognised and refused for now)

A reader is an object with
  - `hparams`: dict with dim, n_layers, n_heads, n_kv_heads, hidden_dim (unpadded), vocab,
    max_seq, rope_theta, norm_eps, shared_classifier, and `description` (for messages);
  - `tensors()`: yields (name, float32-convertible array) in .mlb order (mlb.tensor_plan names:
    "tok_emb", "layers.<l>.<attn_norm|wq|wk|wv|wo|ffn_norm|w1|w2|w3>", "final_norm", "wcls"),
    with the source's own hidden_dim; `convert()` zero-pads hidden_dim to a multiple of 32;
  - `close()`.
Exit codes: 0 ok, 1 bad input / I/O error, 2 usage error or a shape the output type cannot store.
"""
import sys

sys.dont_write_bytecode = True  # keep tools/ free of __pycache__

import argparse
import os
import signal
import struct

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import numpy as np  # noqa: E402
except ImportError:
    sys.stderr.write("convert.py: numpy is not available to %s; run it with /usr/bin/python3 "
                     "(Debian's python3-numpy)\n" % sys.executable)
    sys.exit(1)
import mlb  # noqa: E402

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
        raise mlb.MlbError("%s: is a directory (Hugging Face model folders are not supported yet)"
                           % path)
    except OSError as e:
        raise mlb.MlbError("cannot read %s: %s" % (path, e.strerror or e))


def open_reader(path):
    """Pick the reader for `path` from its kind and magic bytes."""
    if os.path.isdir(path):
        raise mlb.MlbError("%s: is a directory (Hugging Face model folders are not supported yet)"
                           % path)
    _, magic = _stat_and_head(path, 4)
    if magic == b"GGUF":
        raise mlb.MlbError("%s: GGUF input is not supported yet" % path)
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


def header_for(hparams, wtype):
    """The .mlb header for a reader's hparams, hidden_dim padded; validated (ShapeError names the
    first tensor the output type cannot store)."""
    h = mlb.Header(hparams["dim"], hparams["n_layers"], hparams["n_heads"], hparams["n_kv_heads"],
                   mlb.pad_to(hparams["hidden_dim"]), hparams["vocab"], hparams["max_seq"],
                   hparams["rope_theta"], hparams["norm_eps"], wtype,
                   hparams["shared_classifier"])
    return h.validate()


def write_mlb(reader, output, wtype, progress=None, prog=PROG):
    """Stream reader's tensors into `output` (atomically). progress: None/False/True."""
    hp = reader.hparams
    header = header_for(hp, wtype)
    plan = mlb.tensor_plan(header)
    pr = mlb.Progress(prog, mlb.file_size(header), len(plan), enabled=bool(progress))
    with mlb.MlbWriter(output, header, pr) as w:
        for name, arr in reader.tensors():
            w.write_tensor(name, pad_hidden(name, arr, hp["hidden_dim"], header.hidden_dim))
    return header


def convert(input_path, output, wtype, progress=None, prog=PROG):
    """Convert a checkpoint file. progress=None: on for inputs over ~50 MB."""
    if isinstance(wtype, str):
        if wtype not in mlb.WTYPES:
            raise mlb.ShapeError("bad wtype %r (choose from %s)" % (wtype, ", ".join(mlb.WTYPES)))
        wtype = mlb.WTYPES[wtype]
    reader = open_reader(input_path)
    try:
        if os.path.exists(output) and os.path.samefile(input_path, output):
            raise mlb.MlbError("%s: output would overwrite the input" % output)
        if progress is None:
            progress = os.path.getsize(input_path) > PROGRESS_THRESHOLD
        if progress:
            sys.stderr.write("%s: %s: %s -> %s\n" % (prog, input_path, reader.description,
                                                     mlb.WTYPE_NAMES[wtype]))
        return write_mlb(reader, output, wtype, progress, prog)
    finally:
        reader.close()


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
    ap = OneLineParser(prog=PROG, description="Convert a llama2.c checkpoint to an .mlb file.")
    ap.add_argument("input", help="llama2.c legacy checkpoint (.bin)")
    ap.add_argument("output", help="the .mlb file to write (replaced atomically)")
    ap.add_argument("--wtype", default="f32", type=str.lower, choices=list(mlb.WTYPES),
                    help="type of the embedding and matrices (default f32)")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("-v", "--verbose", action="store_true", help="always show progress")
    g.add_argument("-q", "--quiet", action="store_true", help="never show progress")
    args = ap.parse_args(argv)
    progress = True if args.verbose else (False if args.quiet else None)
    return run_cli(PROG, lambda: convert(args.input, args.output, args.wtype, progress))


if __name__ == "__main__":
    sys.exit(main())
