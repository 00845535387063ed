#!/usr/bin/env python3
"""The MLTK tokenizer file (docs/tokenizer-format.md, version 1) and the byte-level BPE vocabulary
it stores (standard library only).

- `BpeError`: a tokenizer that cannot be read or represented (one line).
- `Vocab`: tokens, merges, pre-tokenizer, normalizer, BOS/EOS/EOT/PAD, stop ids, chat template;
  `validate()` (the format's checks), `to_mltk()` (the file's bytes), and a naive reference
  encoder/decoder (`encode(text)` / `decode(ids)`: O(n^2) BPE per pre-token, the pre-tokenizers
  of tools/bpe_pretokenize.py), used by the tests and as a second implementation to compare the
  C++ runtime against.
- `read_mltk(data)`: a Vocab from the file's bytes, every field validated; `is_mltk(path)`.
- `show(s)`: a short repr of a token or value for a one-line message.
"""
import os
import struct
import sys
import unicodedata

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
try:  # an MlbError when numpy (and so tools/mlb.py) is there: convert.py's one-line handling
    from mlb import MlbError as _ErrorBase
except ImportError:  # standard library only
    from errors import OneLineError as _ErrorBase
from bpe_pretokenize import PRE_NAMES, pretokenize  # noqa: E402


class BpeError(_ErrorBase):
    """A tokenizer that cannot be read or represented (one line)."""


MAGIC = b"MLTK"
VERSION = 1
HEADER = struct.Struct("<4sIIIBBBBiiiiII20s")  # 64 bytes
assert HEADER.size == 64

NORM_NONE, NORM_NFC = 0, 1
KIND_NORMAL, KIND_SPECIAL, KIND_ADDED, KIND_ABSENT = range(4)
FLAG_ADD_BOS, FLAG_IGNORE_MERGES = 1, 2
MAX_TOKENS = 1 << 24
MAX_STOP = 64
MAX_TEMPLATE = 1 << 20


def show(s, n=60):
    if isinstance(s, (bytes, bytearray)):
        s = bytes(s).decode("utf-8", "backslashreplace")
    elif not isinstance(s, str):
        return repr(s)[:n]
    r = repr(s)
    return r if len(r) <= n else r[:n - 4] + "...'"


# ---------------------------------------------------------------------------- the vocabulary

class Vocab:
    """A byte-level BPE tokenizer as MLTK stores it. tokens: [(kind, bytes)] in id order;
    merges: [(left, right, result)] in rank order; stops: [id]; template: str."""

    def __init__(self, tokens, merges, pre, normalizer=NORM_NONE, add_bos=False,
                 ignore_merges=False, bos=-1, eos=-1, eot=-1, pad=-1, stops=(), template=""):
        self.tokens, self.merges = tokens, merges
        self.pre, self.normalizer = pre, normalizer
        self.add_bos, self.ignore_merges = bool(add_bos), bool(ignore_merges)
        self.bos, self.eos, self.eot, self.pad = bos, eos, eot, pad
        self.stops, self.template = list(stops), template or ""
        self._enc = None

    def describe(self):
        n_special = sum(1 for k, _ in self.tokens if k == KIND_SPECIAL)
        n_added = sum(1 for k, _ in self.tokens if k == KIND_ADDED)
        return ("byte-level BPE: %d tokens (%d special, %d added), %d merges, pre-tokenizer %s%s"
                % (len(self.tokens), n_special, n_added, len(self.merges), PRE_NAMES[self.pre],
                   ", NFC" if self.normalizer == NORM_NFC else ""))

    # -- checks of docs/tokenizer-format.md, before anything is written
    def validate(self, where="tokenizer"):
        n = len(self.tokens)
        if not 1 <= n <= MAX_TOKENS:
            raise BpeError("%s: %d tokens (the format holds 1 to 2^24)" % (where, n))
        if self.pre not in range(4) or self.normalizer not in (0, 1):
            raise BpeError("%s: internal: pre-tokenizer %r normalizer %r"
                           % (where, self.pre, self.normalizer))
        normal = {}
        for i, (kind, b) in enumerate(self.tokens):
            if kind == KIND_ABSENT:
                if b:
                    raise BpeError("%s: internal: absent token %d has bytes" % (where, i))
                continue
            if not b:
                raise BpeError("%s: token %d is empty" % (where, i))
            if len(b) > 65535:
                raise BpeError("%s: token %d is %d bytes long (at most 65535)" % (where, i, len(b)))
            if kind == KIND_NORMAL:
                if b in normal:
                    raise BpeError("%s: tokens %d and %d are the same bytes %s"
                                   % (where, normal[b], i, show(b)))
                normal[b] = i
            elif kind not in (KIND_SPECIAL, KIND_ADDED):
                raise BpeError("%s: internal: token %d kind %r" % (where, i, kind))
            else:
                try:
                    b.decode("utf-8")
                except UnicodeDecodeError:
                    raise BpeError("%s: special/added token %d is not valid UTF-8" % (where, i))
        for x in range(256):
            if bytes([x]) not in normal:
                raise BpeError("%s: no token for the byte 0x%02x (a byte-level BPE vocabulary has "
                               "all 256)" % (where, x))
        toks = self.tokens
        for r, (a, b, c) in enumerate(self.merges):
            if a < 0 or b < 0 or c < 0 or max(a, b, c) >= n:
                raise BpeError("%s: merge %d uses id %d, outside the %d tokens"
                               % (where, r, min(a, b, c) if min(a, b, c) < 0 else max(a, b, c), n))
            (ka, ba), (kb, bb), (kc, bc) = toks[a], toks[b], toks[c]
            if ka or kb or kc:
                raise BpeError("%s: merge %d uses id %d, which is not a vocabulary token"
                               % (where, r, a if ka else b if kb else c))
            if ba + bb != bc:
                raise BpeError("%s: merge %d: %s + %s is not %s"
                               % (where, r, show(ba), show(bb), show(bc)))
        for name in ("bos", "eos", "eot", "pad"):
            v = getattr(self, name)
            if not -1 <= v < n:
                raise BpeError("%s: %s id %d is outside the %d tokens" % (where, name, v, n))
        if self.add_bos and self.bos < 0:
            raise BpeError("%s: add_bos is set but there is no BOS token" % where)
        if len(self.stops) > MAX_STOP:
            raise BpeError("%s: %d stop ids (at most %d)" % (where, len(self.stops), MAX_STOP))
        for s in self.stops:
            if not 0 <= s < n:
                raise BpeError("%s: stop id %d is outside the %d tokens" % (where, s, n))
        if len(self.template.encode("utf-8")) > MAX_TEMPLATE:
            raise BpeError("%s: the chat template is %d bytes (at most 2^20)"
                           % (where, len(self.template.encode("utf-8"))))
        self._valid = True
        return self

    def to_mltk(self):
        """The MLTK version 1 file (docs/tokenizer-format.md)."""
        if not getattr(self, "_valid", False):
            self.validate()
        tmpl = self.template.encode("utf-8")
        flags = (FLAG_ADD_BOS if self.add_bos else 0) | (FLAG_IGNORE_MERGES if self.ignore_merges else 0)
        out = [HEADER.pack(MAGIC, VERSION, len(self.tokens), len(self.merges), self.pre,
                           self.normalizer, flags, 0, self.bos, self.eos, self.eot, self.pad,
                           len(self.stops), len(tmpl), bytes(20))]
        for kind, b in self.tokens:
            out.append(struct.pack("<BH", kind, len(b)))
            out.append(b)
        m = struct.Struct("<iii")
        out.extend(m.pack(*t) for t in self.merges)
        out.extend(struct.pack("<i", s) for s in self.stops)
        out.append(tmpl)
        return b"".join(out)

    # -- the naive reference encoder / decoder
    def _encoder(self):
        if self._enc is None:
            byte_id, normal = {}, {}
            for i, (kind, b) in enumerate(self.tokens):
                if kind == KIND_NORMAL:
                    normal[b] = i
                    if len(b) == 1:
                        byte_id[b[0]] = i
            ranks = {}
            for r, (a, b, c) in enumerate(self.merges):
                ranks[(a, b)] = (r, c)  # a repeated pair: the later rank wins (as Hugging Face)
            specials = [(b.decode("utf-8"), i, kind) for i, (kind, b) in enumerate(self.tokens)
                        if kind in (KIND_SPECIAL, KIND_ADDED)]
            self._enc = (byte_id, normal, ranks, specials)
        return self._enc

    def bpe(self, piece):
        """Token ids of one pre-token (bytes): merges by rank, leftmost first among equals."""
        byte_id, normal, ranks, _ = self._encoder()
        if self.ignore_merges and piece in normal:
            return [normal[piece]]
        ids = [byte_id[x] for x in piece]
        while len(ids) > 1:
            best, at = None, -1
            for j in range(len(ids) - 1):
                r = ranks.get((ids[j], ids[j + 1]))
                if r is not None and (best is None or r[0] < best[0]):
                    best, at = r, j
            if best is None:
                break
            ids[at:at + 2] = [best[1]]
        return ids

    def split_special(self, text, parse_special=True):
        """[(text, None) | (None, id)]: added tokens (kind 2) always, special tokens (kind 1) when
        parse_special, leftmost-longest."""
        specials = [(s, i) for s, i, kind in self._encoder()[3]
                    if kind == KIND_ADDED or parse_special]
        if not specials:
            return [(text, None)] if text else []
        by_first = {}
        for s, i in specials:
            by_first.setdefault(s[0], []).append((s, i))
        for v in by_first.values():
            v.sort(key=lambda x: -len(x[0]))
        out, start, pos = [], 0, 0
        while pos < len(text):
            hit = None
            for s, i in by_first.get(text[pos], ()):
                if text.startswith(s, pos):
                    hit = (s, i)
                    break
            if hit is None:
                pos += 1
                continue
            if pos > start:
                out.append((text[start:pos], None))
            out.append((None, hit[1]))
            pos += len(hit[0])
            start = pos
        if start < len(text):
            out.append((text[start:], None))
        return out

    def encode(self, text, add_bos=False, parse_special=True):
        """Token ids of text (str). Added/special tokens are split out of the raw text first,
        then each piece between them is normalized (NFC when declared), pre-tokenized and BPE'd
        (as Hugging Face tokenizers do for tokens with normalized = false)."""
        ids = [self.bos] if add_bos and self.add_bos and self.bos >= 0 else []
        for seg, tid in self.split_special(text, parse_special):
            if tid is not None:
                ids.append(tid)
                continue
            if self.normalizer == NORM_NFC:
                seg = unicodedata.normalize("NFC", seg)
            for piece in pretokenize(self.pre, seg):
                ids.extend(self.bpe(piece.encode("utf-8")))
        return ids

    def token_bytes(self, i):
        return self.tokens[i][1] if 0 <= i < len(self.tokens) else b""

    def decode(self, ids):
        """Bytes of the ids (absent ids and ids past the tokenizer: nothing)."""
        return b"".join(self.token_bytes(i) for i in ids)


# ---------------------------------------------------------------------------- MLTK reading

def read_mltk(data, where="MLTK file"):
    """A Vocab from MLTK bytes, every field validated."""
    if len(data) < HEADER.size:
        raise BpeError("%s: %d bytes, too short for the 64-byte MLTK header" % (where, len(data)))
    (magic, version, n_tok, n_merge, pre, norm, flags, res0, bos, eos, eot, pad, n_stop, n_tmpl,
     res) = HEADER.unpack_from(data)
    if magic != MAGIC:
        raise BpeError("%s: not an MLTK file (magic %r)" % (where, magic))
    if version != VERSION:
        raise BpeError("%s: MLTK version %d (this reader knows version 1)" % (where, version))
    if pre > 3 or norm > 1 or flags & ~3 or res0 or any(res):
        raise BpeError("%s: bad header (pre-tokenizer %d, normalizer %d, flags %d)"
                       % (where, pre, norm, flags))
    if not 1 <= n_tok <= MAX_TOKENS or n_stop > MAX_STOP or n_tmpl > MAX_TEMPLATE:
        raise BpeError("%s: bad header counts (tokens %d, stops %d, template %d)"
                       % (where, n_tok, n_stop, n_tmpl))
    off, tokens = HEADER.size, []
    for i in range(n_tok):
        if off + 3 > len(data):
            raise BpeError("%s: truncated in token %d" % (where, i))
        kind, ln = struct.unpack_from("<BH", data, off)
        off += 3
        if kind > 3 or (kind == KIND_ABSENT) != (ln == 0) or off + ln > len(data):
            raise BpeError("%s: token %d: kind %d length %d" % (where, i, kind, ln))
        tokens.append((kind, bytes(data[off:off + ln])))
        off += ln
    need = off + 12 * n_merge + 4 * n_stop + n_tmpl
    if need != len(data):
        raise BpeError("%s: the sections end at byte %d but the file has %d"
                       % (where, need, len(data)))
    merges = [struct.unpack_from("<iii", data, off + 12 * r) for r in range(n_merge)]
    off += 12 * n_merge
    stops = list(struct.unpack_from("<%di" % n_stop, data, off))
    off += 4 * n_stop
    try:
        tmpl = bytes(data[off:off + n_tmpl]).decode("utf-8")
    except UnicodeDecodeError:
        raise BpeError("%s: the chat template is not UTF-8" % where)
    v = Vocab(tokens, merges, pre, norm, flags & 1, flags & 2, bos, eos, eot, pad, stops, tmpl)
    return v.validate(where)


def is_mltk(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == MAGIC
    except OSError:
        return False
