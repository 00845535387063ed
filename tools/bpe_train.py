#!/usr/bin/env python3
"""A small byte-level BPE trainer (standard library only): `train(texts, n_merges, ...)` gives a
tools/mltk.py Vocab (the tests' vocabularies with SmolLM2's schema, Qwen2's or Llama 3's)."""
import heapq
import unicodedata

from bpe_pretokenize import PRE_SMOLLM, pretokenize
from mltk import KIND_NORMAL, KIND_SPECIAL, NORM_NFC, NORM_NONE, Vocab

# ------------------------------------------------------------------------------- training

def train(texts, n_merges, pre=PRE_SMOLLM, specials=(), normalizer=NORM_NONE):
    """A byte-level BPE vocabulary learnt from texts (deterministic): ids 0.. the special tokens,
    then the 256 bytes in byte order, then one token per new merge result. Each step merges the
    most frequent adjacent pair of the pre-tokens (ties: the smaller pair of ids)."""
    words = {}
    for t in texts:
        if normalizer == NORM_NFC:
            t = unicodedata.normalize("NFC", t)
        for p in pretokenize(pre, t):
            b = p.encode("utf-8")
            words[b] = words.get(b, 0) + 1
    tokens = [(KIND_SPECIAL, s.encode("utf-8")) for s in specials]
    base = len(tokens)
    tokens += [(KIND_NORMAL, bytes([x])) for x in range(256)]
    by_bytes = {b: i for i, (k, b) in enumerate(tokens) if k == KIND_NORMAL}
    seqs = [[base + x for x in w] for w in words]
    counts = list(words.values())
    pair_count, where = {}, {}
    for wi, s in enumerate(seqs):
        for j in range(len(s) - 1):
            p = (s[j], s[j + 1])
            pair_count[p] = pair_count.get(p, 0) + counts[wi]
            where.setdefault(p, set()).add(wi)
    heap = [(-c, p) for p, c in pair_count.items()]
    heapq.heapify(heap)
    merges = []
    while len(merges) < n_merges and heap:
        negc, (a, b) = heapq.heappop(heap)
        if pair_count.get((a, b), 0) != -negc or negc == 0:
            continue  # a stale entry (its count changed since it was pushed)
        nb = tokens[a][1] + tokens[b][1]
        if nb in by_bytes:
            c = by_bytes[nb]
        else:
            c = len(tokens)
            tokens.append((KIND_NORMAL, nb))
            by_bytes[nb] = c
        merges.append((a, b, c))
        changed = set()
        for wi in sorted(where.get((a, b), ())):
            s, cnt = seqs[wi], counts[wi]
            for j in range(len(s) - 1):  # remove the word's old pairs
                p = (s[j], s[j + 1])
                pair_count[p] -= cnt
                changed.add(p)
            out, j = [], 0
            while j < len(s):
                if j + 1 < len(s) and s[j] == a and s[j + 1] == b:
                    out.append(c)
                    j += 2
                else:
                    out.append(s[j])
                    j += 1
            seqs[wi] = out
            for j in range(len(out) - 1):
                p = (out[j], out[j + 1])
                pair_count[p] = pair_count.get(p, 0) + cnt
                where.setdefault(p, set()).add(wi)
                changed.add(p)
        pair_count.pop((a, b), None)
        where.pop((a, b), None)
        for p in changed:
            k = pair_count.get(p, 0)
            if k > 0:
                heapq.heappush(heap, (-k, p))
            else:
                pair_count.pop(p, None)
    v = Vocab(tokens, merges, pre, normalizer)
    return v.validate("trained vocabulary")
