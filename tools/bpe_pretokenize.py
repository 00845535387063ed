#!/usr/bin/env python3
"""The byte-level BPE pre-tokenizers of tools/bpe.py's vocabularies (standard library only).

- `PRE_GPT2`, `PRE_LLAMA3`, `PRE_QWEN2`, `PRE_SMOLLM` (`PRE_NAMES`): the pre-tokenizer kinds an
  MLTK file names (docs/tokenizer-format.md).
- `GPT2_REGEX`, `LLAMA3_REGEX`, `QWEN2_REGEX` (`SPLIT_REGEXES`): the families' regexes exactly as
  tokenizer.json files spell them.
- `pretokenize(pre, text)`: those regexes written out by hand over unicodedata (the pre-tokens
  tile the text exactly); the reference encoder (tools/mltk.py) and the trainer use it.
"""
import unicodedata

PRE_GPT2, PRE_LLAMA3, PRE_QWEN2, PRE_SMOLLM = range(4)
PRE_NAMES = ("gpt2", "llama3", "qwen2", "smollm")

# The pre-tokenizer regexes of the families, exactly as tokenizer.json files spell them.
GPT2_REGEX = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
               r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
SPLIT_REGEXES = {LLAMA3_REGEX: PRE_LLAMA3, QWEN2_REGEX: PRE_QWEN2}


# ----------------------------------------------------------------- pre-tokenizers, by hand

# \s of the regexes: Unicode White_Space (Oniguruma's and the Rust regex crate's \s)
WHITE_SPACE = frozenset([0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, 0x2028, 0x2029,
                         0x202F, 0x205F, 0x3000] + list(range(0x2000, 0x200B)))


def _cls(c):
    """'s' white space, 'L' letter, 'N' number, 'o' anything else."""
    o = ord(c)
    if o in WHITE_SPACE:
        return "s"
    cat = unicodedata.category(c)[0]
    return cat if cat in "LN" else "o"


def _contraction(t, i, ignore_case):
    if t[i] != "'" or i + 1 >= len(t):
        return 0
    nxt = t[i + 1:i + 3]
    if ignore_case:
        nxt = "".join(c.lower() if c in "SsTtRrEeVvMmLlDd" else "#" for c in nxt)
    if nxt[:2] in ("re", "ve", "ll"):
        return 3
    if nxt[:1] in ("s", "t", "m", "d"):
        return 2
    return 0


def _run(k, i, cls):
    n = len(k)
    j = i
    while j < n and k[j] == cls:
        j += 1
    return j


def _ws_tail(t, k, i):
    """\\s+(?!\\S)|\\s+ at i (k[i] == 's'): the end of the match."""
    j = _run(k, i, "s")
    if j == len(t) or j - i == 1:
        return j
    return j - 1


def _gpt2(t):
    k = [_cls(c) for c in t]
    n, i, out = len(t), 0, []
    while i < n:
        j = _contraction(t, i, False)
        if j:
            j += i
        elif t[i] == " " and i + 1 < n and k[i + 1] != "s":  # ' ?\p{L}+' ' ?\p{N}+' ' ?[^...]+'
            j = _run(k, i + 1, k[i + 1])
        elif k[i] != "s":
            j = _run(k, i, k[i])
        else:  # white space
            j = _ws_tail(t, k, i)
        out.append(t[i:j])
        i = j
    return out


def _llama3(t, max_digits):
    k = [_cls(c) for c in t]
    n, i, out = len(t), 0, []
    while i < n:
        j = _contraction(t, i, True)
        if j:
            j += i
        elif k[i] == "L":
            j = _run(k, i, "L")
        elif t[i] not in "\r\n" and k[i] != "N" and i + 1 < n and k[i + 1] == "L":
            j = _run(k, i + 1, "L")
        elif k[i] == "N":
            j = i + 1
            while j < n and j - i < max_digits and k[j] == "N":
                j += 1
        elif k[i] == "o" or (t[i] == " " and i + 1 < n and k[i + 1] == "o"):
            j = _run(k, i + 1 if k[i] != "o" else i, "o")
            while j < n and t[j] in "\r\n":
                j += 1
        else:  # white space
            e = _run(k, i, "s")
            last = max((p for p in range(i, e) if t[p] in "\r\n"), default=-1)
            j = last + 1 if last >= 0 else _ws_tail(t, k, i)
        out.append(t[i:j])
        i = j
    return out


def _smollm(t):
    out, start = [], 0
    for p, c in enumerate(t):
        if unicodedata.category(c)[0] == "N":
            if p > start:
                out.extend(_gpt2(t[start:p]))
            out.append(c)
            start = p + 1
    if start < len(t):
        out.extend(_gpt2(t[start:]))
    return out


def pretokenize(pre, text):
    """The pre-tokens (str) of text for pre-tokenizer kind `pre`; they tile text exactly."""
    if pre == PRE_GPT2:
        return _gpt2(text)
    if pre == PRE_LLAMA3:
        return _llama3(text, 3)
    if pre == PRE_QWEN2:
        return _llama3(text, 1)
    return _smollm(text)
