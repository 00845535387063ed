#!/usr/bin/python3
"""The sampler chain (runtime/sampler.h) stated in NumPy, one function per stage, and the expected
draws and log-probabilities it gives on fixed logits: verify/data/sampler_chain_expected.txt, which
verify/tests/test_sampler.cc ("[sampler]") compares the C++ chain with, draw for draw.

  verify/sampler_chain_ref.py           rewrite the expected file
  verify/sampler_chain_ref.py --check   exit 1 unless the file is what this statement gives now
                                        (ctest sampler.chain_reference)

Float32 where the runtime computes in float32 (logit_bias, penalties), float64 from the temperature
on (softmax, min_p, top_p, the draw), as the runtime. The coin is the runtime's xorshift64* draw.
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "data", "sampler_chain_expected.txt")
MASK = (1 << 64) - 1
F = np.float32


class Rng:
    """xorshift64*, its top 24 bits as a float in [0, 1) (runtime/sampler.cc random_f32)."""

    def __init__(self, seed):
        self.state = seed if seed else 1

    def coin(self):
        s = self.state
        s ^= s >> 12
        s ^= (s << 25) & MASK
        s ^= s >> 27
        self.state = s
        r = ((s * 0x2545F4914F6CDD1D) & MASK) >> 32
        return float(np.float32((r >> 8) / 16777216.0))


def logit_bias(x, bias):
    x = x.copy()
    for tok, b in bias:
        x[tok] = F(x[tok] + F(b))
    return x


def penalties(x, history, rep, last_n, presence, frequency):
    x = x.copy()
    if rep == 1.0 and presence == 0.0 and frequency == 0.0:
        return x
    window = history if last_n < 0 else history[len(history) - min(len(history), last_n):]
    ids, counts = np.unique(np.array(window, dtype=np.int64), return_counts=True)
    for tok, c in zip(ids, counts):
        v = x[tok]
        if rep != 1.0:
            v = F(v / F(rep)) if v > 0 else F(v * F(rep))
        v = F(v - F(F(F(c) * F(frequency)) + F(presence)))
        x[tok] = v
    return x


def order(x, ids):
    """ids sorted by descending x, ties by ascending id."""
    return ids[np.lexsort((ids, -x[ids].astype(np.float64)))]


def top_k(x, k):
    ids = order(x, np.nonzero(x != -np.inf)[0])
    return ids[:k] if k > 0 else ids


def softmax_t(x, ids, temp):
    z = x[ids].astype(np.float64) / np.float64(F(temp))
    e = np.exp(z - z[0])
    return e / e.sum()


def min_p(p, m):
    n = len(p)
    if m > 0:
        floor = np.float64(F(m)) * p[0]
        while n > 1 and p[n - 1] < floor:
            n -= 1
    return n


def top_p(p, n, tp):
    mass, cut = 0.0, 0
    while cut < n:
        mass += p[cut]
        cut += 1
        if F(tp) < 1 and mass > np.float64(F(tp)):
            break
    return cut, mass


def draw(p, ids, cut, mass, coin):
    r = coin * mass
    cdf = 0.0
    for i in range(cut):
        cdf += p[i]
        if r < cdf:
            return int(ids[i])
    return int(ids[cut - 1])


def chain(logits, history, cfg, rng):
    x = penalties(logit_bias(logits, cfg["bias"]), history, cfg["rep"], cfg["last_n"], cfg["presence"],
                  cfg["frequency"])
    ids = top_k(x, cfg["top_k"])
    if cfg["temp"] == 0:
        return int(ids[0])
    p = softmax_t(x, ids, cfg["temp"])
    n = min_p(p, cfg["min_p"])
    cut, mass = top_p(p, n, cfg["top_p"])
    return draw(p, ids, cut, mass, rng.coin())


def logprobs(logits, history, cfg, n_top):
    x = penalties(logit_bias(logits, cfg["bias"]), history, cfg["rep"], cfg["last_n"], cfg["presence"],
                  cfg["frequency"]).astype(np.float64)
    mx = x.max()
    log_z = mx + np.log(np.exp(x - mx).sum())
    ids = order(x, np.arange(len(x)))[:n_top]
    return [(int(i), x[i] - log_z) for i in ids], x - log_z


BASE = dict(temp=1.0, top_p=1.0, top_k=0, min_p=0.0, rep=1.0, last_n=64, presence=0.0, frequency=0.0, bias=[])
CASES = [
    ("top_k_5", dict(top_k=5)),
    ("top_k_1_is_greedy", dict(top_k=1, temp=0.8)),
    ("min_p", dict(min_p=0.1, temp=1.2)),
    ("top_k_top_p", dict(top_k=20, top_p=0.7)),
    ("repeat_penalty", dict(rep=1.3, last_n=8)),
    ("presence_frequency_all_history", dict(presence=0.5, frequency=0.3, last_n=-1)),
    ("logit_bias_ban_and_boost", dict(bias=[(0, float("-inf")), (17, 5.0)])),
    ("greedy_after_penalties", dict(temp=0.0, rep=2.0, presence=1.0)),
    ("everything", dict(top_k=30, min_p=0.02, top_p=0.9, temp=0.7, rep=1.1, last_n=16, presence=0.2,
                        frequency=0.1, bias=[(3, -2.5), (40, 1.5)])),
]
VOCAB, DRAWS, SEEDS, N_TOP = 64, 40, (1, 7, 12345), 5


def fixed_logits():
    rng = np.random.default_rng(20261203)
    x = (rng.standard_normal(VOCAB) * 2.0).astype(np.float32)
    x[0] = F(x.max() + 1)  # a clear favourite for the ban and the greedy cases
    x[9] = x[10]  # a tie: the lower id first
    x[20], x[21] = F(-0.0), F(0.0)  # -0 and +0 compare equal: a tie too (the radix sort's keys)
    x[23] = x[22] = -abs(x[22])  # a tie among negative values
    return x


def render():
    logits = fixed_logits()
    history = [0, 5, 9, 5, 33, 0, 0, 12, 63, 5, 17, 2]
    lines = ["# written by verify/sampler_chain_ref.py (the NumPy statement of runtime/sampler.h's chain)",
             "logits " + " ".join("%.9g" % v for v in logits),
             "history " + " ".join(str(t) for t in history)]
    for name, over in CASES:
        cfg = dict(BASE, **over)
        bias = " ".join("%d:%r" % (t, b) for t, b in cfg["bias"]).replace("-inf", "-inf")
        lines.append("case %s temp %r top_p %r top_k %d min_p %r rep %r last_n %d presence %r frequency %r bias %s"
                     % (name, cfg["temp"], cfg["top_p"], cfg["top_k"], cfg["min_p"], cfg["rep"], cfg["last_n"],
                        cfg["presence"], cfg["frequency"], bias or "-"))
        for seed in SEEDS:
            rng = Rng(seed)
            lines.append("draws %d %s" % (seed, " ".join(str(chain(logits, history, cfg, rng)) for _ in range(DRAWS))))
        top, allv = logprobs(logits, history, cfg, N_TOP)
        lines.append("top " + " ".join("%d:%.9g" % (t, v) for t, v in top))
        lines.append("chosen 17:%.9g" % allv[17])
    return "\n".join(lines) + "\n"


def main(argv):
    text = render()
    if argv[1:] == ["--check"]:
        with open(OUT, encoding="utf-8") as f:
            if f.read() != text:
                print("%s is not what verify/sampler_chain_ref.py gives: run it to rewrite" % OUT)
                return 1
        print("sampler chain reference: %d cases x %d seeds x %d draws as stated" % (len(CASES), len(SEEDS), DRAWS))
        return 0
    if argv[1:]:
        sys.exit(__doc__)
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(text)
    print("wrote", OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
