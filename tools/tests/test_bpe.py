#!/usr/bin/python3
"""tools/bpe.py and the tokenizer paths of tools/convert.py: the MLTK layout of
docs/tokenizer-format.md, the pre-tokenizers of the reference encoder, tokenizer.json /
encoder.json / GGUF readers, one-line refusals that name what they refuse, and the round trips
(a GGUF and the tokenizer.json of the same vocabulary give byte-identical MLTK files; a model
converted from a GGUF or a Hugging Face folder gets the same tokenizer file as --tokenizer-only).
The vocabularies are small ones trained here (bpe.train); the real ones (Qwen, Llama 3, GPT-2)
are checked against outside implementations by verify/tests/test_tokenizers.py."""
import sys

sys.dont_write_bytecode = True

import copy
import json
import os
import shutil
import struct
import subprocess
import tempfile
import unittest

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, TOOLS)

import bpe  # noqa: E402
import gguf  # noqa: E402

TEXTS = ["Hello world, hello World! It's 2024; we've 3.14 apples.", "The the THE theory thesis",
         "  indented code:\n    return x  # comment\r\n", "中文 テキスト 😀 café",
         "don't won't I'M 12345 67890 <|im_start|>user\nhi<|im_end|>"] * 3
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def run_tool(*args):
    return subprocess.run([sys.executable, os.path.join(TOOLS, "convert.py")] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=120)


def trained(pre=bpe.PRE_SMOLLM, n=60, specials=SPECIALS, normalizer=bpe.NORM_NONE):
    return bpe.train(TEXTS, n, pre, specials, normalizer)


class Base(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="test_bpe_")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, *names):
        return os.path.join(self.dir, *names)

    def write_json(self, doc, *names):
        p = self.path(*names)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w", encoding="utf-8") as f:
            json.dump(doc, f, ensure_ascii=False)
        return p

    def refused(self, doc, needle, config=None):
        """tokenizer.json doc is refused, in-process and by the CLI, with one line holding needle."""
        d = self.path("t%d" % len(os.listdir(self.dir)))
        p = self.write_json(doc, os.path.basename(d), "tokenizer.json")
        if config is not None:
            self.write_json(config, os.path.basename(d), "tokenizer_config.json")
        with self.assertRaises(bpe.BpeError) as cm:
            bpe.from_tokenizer_json(p)
        msg = str(cm.exception)
        self.assertIn(needle, msg)
        self.assertNotIn("\n", msg)
        out = self.path("out.bin")
        r = run_tool("--tokenizer-only", p, out)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
        self.assertTrue(r.stderr.startswith("convert.py: "), r.stderr)
        self.assertIn(needle, r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        self.assertFalse(os.path.exists(out))
        self.assertEqual([f for f in os.listdir(self.dir) if f.startswith(".")], [], "no temporary")
        return msg


class Format(Base):
    def test_header_and_sections_at_the_documented_offsets(self):
        v = trained(bpe.PRE_LLAMA3)
        v.bos, v.eos, v.eot, v.pad, v.add_bos, v.ignore_merges = 1, 0, 2, -1, True, True
        v.stops, v.template = [0, 1], "{{ messages }}"
        v.normalizer = bpe.NORM_NFC
        b = v.to_mltk()
        self.assertEqual(b[:4], b"MLTK")
        self.assertEqual(struct.unpack_from("<III", b, 4), (1, len(v.tokens), len(v.merges)))
        self.assertEqual(tuple(b[16:20]), (bpe.PRE_LLAMA3, 1, 3, 0))
        self.assertEqual(struct.unpack_from("<iiiiII", b, 20), (1, 0, 2, -1, 2, 14))
        self.assertEqual(b[44:64], bytes(20))
        off = 64
        for kind, tb in v.tokens:
            self.assertEqual(struct.unpack_from("<BH", b, off), (kind, len(tb)))
            self.assertEqual(b[off + 3:off + 3 + len(tb)], tb)
            off += 3 + len(tb)
        for m in v.merges:
            self.assertEqual(struct.unpack_from("<iii", b, off), m)
            off += 12
        self.assertEqual(struct.unpack_from("<ii", b, off), (0, 1))
        self.assertEqual(b[off + 8:], b"{{ messages }}")
        # a little-endian int32 "MLTK" is far outside llama2.c's max_token_length range
        self.assertEqual(struct.unpack("<i", b"MLTK")[0], 1263815757)

    def test_read_back_equals(self):
        v = trained()
        w = bpe.read_mltk(v.to_mltk())
        self.assertEqual((w.tokens, w.merges, w.pre, w.bos, w.eos), (v.tokens, v.merges, v.pre, v.bos, v.eos))
        self.assertEqual(w.to_mltk(), v.to_mltk())

    def test_every_byte_and_kinds(self):
        v = trained()
        self.assertEqual([k for k, _ in v.tokens[:3]], [bpe.KIND_SPECIAL] * 3)
        normal = {b for k, b in v.tokens if k == bpe.KIND_NORMAL}
        self.assertTrue(all(bytes([x]) in normal for x in range(256)))
        self.assertEqual(len(normal), sum(1 for k, _ in v.tokens if k == bpe.KIND_NORMAL))

    def test_reader_rejects_damage(self):
        b = trained().to_mltk()
        for bad, needle in ((b[:-1], "end"), (b + b"x", "end"), (b"MLTX" + b[4:], "magic"),
                            (b[:4] + struct.pack("<I", 2) + b[8:], "version"), (b[:30], "too short")):
            with self.assertRaises(bpe.BpeError) as cm:
                bpe.read_mltk(bad)
            self.assertIn(needle, str(cm.exception))


class PreTokenizers(unittest.TestCase):
    """Splits the families' regexes give (worked out from the regexes by hand)."""

    def check(self, pre, text, want):
        got = bpe.pretokenize(pre, text)
        self.assertEqual(got, want, "%s %r" % (bpe.PRE_NAMES[pre], text))
        self.assertEqual("".join(got), text)

    def test_gpt2(self):
        g = bpe.PRE_GPT2
        self.check(g, "Hello  world", ["Hello", " ", " world"])
        self.check(g, "I'M it's", ["I", "'", "M", " it", "'s"])
        self.check(g, "a   \n", ["a", "   \n"])
        self.check(g, " 12345!!", [" 12345", "!!"])
        self.check(g, "x \t y", ["x", " \t", " y"])
        self.check(g, "", [])

    def test_llama3(self):
        l3 = bpe.PRE_LLAMA3
        self.check(l3, "I'M it's", ["I", "'M", " it", "'s"])
        self.check(l3, "1234567", ["123", "456", "7"])
        self.check(l3, "x\r\n\r\ny", ["x", "\r\n\r\n", "y"])
        self.check(l3, "(Hello) !!\n\nz", ["(Hello", ")", " !!\n\n", "z"])
        self.check(l3, "a  \n  b", ["a", "  \n", " ", " b"])
        self.check(l3, "\tword", ["\tword"])

    def test_qwen2_and_smollm(self):
        self.check(bpe.PRE_QWEN2, "ab 123", ["ab", " ", "1", "2", "3"])

    def test_qwen2_digits_stay_single_under_multi_digit_merges(self):
        # Real Qwen vocabularies have no multi-digit tokens, so this vocabulary adds some: only the
        # one-digit rule keeps "2024" four tokens; Llama 3's threes merge under the same merges.
        tokens = [(bpe.KIND_NORMAL, bytes([x])) for x in range(256)] + [(bpe.KIND_NORMAL, b"20"),
                                                                        (bpe.KIND_NORMAL, b"202")]
        merges = [(ord("2"), ord("0"), 256), (256, ord("2"), 257)]
        qwen = bpe.Vocab(list(tokens), list(merges), bpe.PRE_QWEN2).validate()
        llama3 = bpe.Vocab(list(tokens), list(merges), bpe.PRE_LLAMA3).validate()
        self.assertEqual(qwen.encode("2024"), list(b"2024"))
        self.assertEqual(qwen.encode("x 20"), list(b"x 20"))
        self.assertEqual(llama3.encode("2024"), [257, ord("4")])
        self.check(bpe.PRE_SMOLLM, "a1 b22 ١٢", ["a", "1", " b", "2", "2", " ", "١", "٢"])


class ByteTable(unittest.TestCase):
    """GPT-2's byte -> character table, entry by entry where it matters: every byte-level vocabulary
    (GPT-2, Qwen, Llama 3, SmolLM2) spells its tokens in it, so one entry off garbles every token
    holding that byte. Facts of the published table: printable ASCII and Latin-1 stand for
    themselves; the 68 other bytes take U+0100 upwards in byte order (space is 'Ġ', newline 'Ċ')."""

    def test_pinned_entries(self):
        t = bpe.BYTE_TO_CHAR
        pinned = {0x00: "\u0100", 0x09: "\u0109", 0x0A: "\u010a", 0x0D: "\u010d", 0x20: "\u0120",
                  0x21: "!", 0x41: "A", 0x7E: "~", 0x7F: "\u0121", 0x80: "\u0122", 0xA0: "\u0142",
                  0xA1: "\u00a1", 0xAC: "\u00ac", 0xAD: "\u0143", 0xAE: "\u00ae", 0xFF: "\u00ff"}
        for b, c in pinned.items():
            self.assertEqual(t[b], c, "byte 0x%02X" % b)

    def test_a_bijection_onto_the_published_characters(self):
        t = bpe.BYTE_TO_CHAR
        self.assertEqual(sorted(t), list(range(256)))
        shifted = sorted(ord(c) for b, c in t.items() if ord(c) != b)
        self.assertEqual(shifted, list(range(0x100, 0x100 + 68)))
        self.assertEqual({bpe.CHAR_TO_BYTE[c] for c in t.values()}, set(range(256)))

    def test_tokens_as_vocabularies_spell_them(self):
        self.assertEqual(bpe.remap(b" the"), "\u0120the")  # GPT-2's 'Ġthe'
        self.assertEqual(bpe.remap(b"\n\n"), "\u010a\u010a")  # 'ĊĊ'
        self.assertEqual(bpe.remap("é".encode()), "\u00c3\u00a9")  # 'Ã©'
        self.assertEqual(bpe.unmap("\u0120world\u010a"), b" world\n")
        self.assertIsNone(bpe.unmap("\u0200"))  # not a character of the table


class Encoder(Base):
    def hand(self, merges, extra=(), ignore=False):
        tokens = [(bpe.KIND_NORMAL, bytes([x])) for x in range(256)]
        ids = {t[1]: i for i, t in enumerate(tokens)}
        out = []
        for a, b in merges:
            c = a + b
            if c not in ids:
                ids[c] = len(tokens)
                tokens.append((bpe.KIND_NORMAL, c))
            out.append((ids[a], ids[b], ids[c]))
        for kind, s in extra:
            tokens.append((kind, s))
        return bpe.Vocab(tokens, out, bpe.PRE_GPT2, ignore_merges=ignore).validate(), ids

    def test_leftmost_among_equal_ranks(self):
        v, ids = self.hand([(b"a", b"a")])
        self.assertEqual(v.encode("aaa"), [ids[b"aa"], ids[b"a"]])

    def test_rank_order(self):
        v, ids = self.hand([(b"b", b"c"), (b"a", b"b")])
        self.assertEqual(v.encode("abc"), [ids[b"a"], ids[b"bc"]])

    def test_ignore_merges(self):
        v, ids = self.hand([(b"b", b"c"), (b"a", b"b"), (b"ab", b"c")], ignore=False)
        self.assertEqual(v.encode("abc"), [ids[b"a"], ids[b"bc"]])
        v, ids = self.hand([(b"b", b"c"), (b"a", b"b"), (b"ab", b"c")], ignore=True)
        self.assertEqual(v.encode("abc"), [ids[b"abc"]])

    def test_special_and_added_tokens(self):
        v, ids = self.hand([], [(bpe.KIND_SPECIAL, b"<s>"), (bpe.KIND_SPECIAL, b"<s><t>"),
                                (bpe.KIND_ADDED, b"<t>")])
        s, st, t = 256, 257, 258
        self.assertEqual(v.encode("x<s><t>y"), [ord("x"), st, ord("y")])  # longest first
        self.assertEqual(v.encode("<s>", parse_special=False), [ord("<"), ord("s"), ord(">")])
        self.assertEqual(v.encode("a<t>", parse_special=False), [ord("a"), t])  # added: always
        self.assertEqual(v.decode([s, 999, ord("!")]), b"<s>!")

    def test_nfc(self):
        v = trained(bpe.PRE_QWEN2, normalizer=bpe.NORM_NFC)
        self.assertEqual(v.decode(v.encode("e\u0301")), "\u00e9".encode())

    def test_round_trip(self):
        for pre in range(4):
            v = trained(pre)
            for t in TEXTS:
                self.assertEqual(v.decode(v.encode(t)), t.encode(), (pre, t))


class Readers(Base):
    def doc(self, pre=bpe.PRE_SMOLLM):
        return bpe.to_tokenizer_json(trained(pre))

    def test_tokenizer_json_round_trip_every_family(self):
        for pre in range(4):
            v = trained(pre)
            p = self.write_json(bpe.to_tokenizer_json(v), "f%d" % pre, "tokenizer.json")
            w = bpe.from_tokenizer_json(p)
            self.assertEqual(w.pre, pre)
            self.assertEqual((w.tokens, w.merges), (v.tokens, v.merges))

    def test_merges_as_strings_or_pairs(self):
        d = self.doc()
        p1 = self.write_json(d, "a", "tokenizer.json")
        d2 = copy.deepcopy(d)
        d2["model"]["merges"] = [" ".join(m) for m in d["model"]["merges"]]
        p2 = self.write_json(d2, "b", "tokenizer.json")
        self.assertEqual(bpe.from_tokenizer_json(p1).to_mltk(), bpe.from_tokenizer_json(p2).to_mltk())

    def test_configs(self):
        d = self.doc(bpe.PRE_LLAMA3)
        d["post_processor"] = {"type": "Sequence", "processors": [
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
            {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<|im_start|>", "type_id": 0}},
                                                      {"Sequence": {"id": "A", "type_id": 0}}],
             "pair": [], "special_tokens": {"<|im_start|>": {"id": "<|im_start|>", "ids": [1],
                                                             "tokens": ["<|im_start|>"]}}}]}
        p = self.write_json(d, "c", "tokenizer.json")
        v = bpe.from_tokenizer_json(p)
        self.assertEqual((v.add_bos, v.bos, v.eot), (True, 1, 2))  # eot: <|im_end|> by name
        self.write_json({"eos_token": {"content": "<|endoftext|>", "special": True},
                         "add_bos_token": False, "chat_template": [
                             {"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]},
                        "c", "tokenizer_config.json")
        self.write_json({"eos_token_id": [0, 2, 5]}, "c", "generation_config.json")
        v = bpe.from_tokenizer_json(p)
        self.assertEqual((v.add_bos, v.eos, v.eot, v.stops, v.template), (False, 0, 2, [5], "D"))
        os.unlink(self.path("c", "tokenizer_config.json"))
        with open(self.path("c", "chat_template.jinja"), "w") as f:
            f.write("J")
        v = bpe.from_tokenizer_json(p)
        self.assertEqual((v.eos, v.template), (0, "J"))  # eos: generation_config's first

    def test_gpt2_files(self):
        v = trained(bpe.PRE_GPT2, specials=[])
        enc = {bpe.remap(b): i for i, (k, b) in enumerate(v.tokens)}
        enc["<|endoftext|>"] = len(enc)
        self.write_json(enc, "g", "encoder.json")
        with open(self.path("g", "vocab.bpe"), "w", encoding="utf-8") as f:
            f.write("#version: 0.2\n" + "".join("%s %s\n" % (bpe.remap(v.tokens[a][1]), bpe.remap(v.tokens[b][1]))
                                                for a, b, _ in v.merges))
        w = bpe.from_hf_folder(self.path("g"))
        self.assertEqual((w.pre, w.bos, w.eos, w.tokens[-1]),
                         (bpe.PRE_GPT2, len(enc) - 1, len(enc) - 1, (bpe.KIND_SPECIAL, b"<|endoftext|>")))
        out = self.path("g.bin")
        r = run_tool("--tokenizer-only", self.path("g", "encoder.json"), out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out, "rb") as f:
            self.assertEqual(f.read(), w.to_mltk())


class Refusals(Base):
    def doc(self):
        return bpe.to_tokenizer_json(trained())

    def test_models(self):
        d = self.doc()
        d["model"]["type"] = "Unigram"
        self.refused(d, "model type Unigram (SentencePiece unigram) is not a byte-level BPE")
        d["model"]["type"] = "WordPiece"
        self.refused(d, "model type WordPiece")
        d = self.doc()
        d["model"]["byte_fallback"] = True
        self.refused(d, "byte_fallback")

    def test_pre_tokenizers(self):
        d = self.doc()
        d["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": "\\p{N}{1,3}|[a-z]+"}, "behavior": "Isolated",
             "invert": False}, {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}]}
        msg = self.refused(d, 'Split(regex "\\\\p{N}{1,3}|[a-z]+")')
        self.assertIn("pre-tokenizer", msg)
        d["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": True, "use_regex": True}
        self.refused(d, "ByteLevel(add_prefix_space=true, use_regex=true)")
        d["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581"}
        self.refused(d, "pre-tokenizer Metaspace")
        d["pre_tokenizer"] = None
        self.refused(d, "pre-tokenizer none")

    def test_normalizer_decoder_post_processor(self):
        d = self.doc()
        d["normalizer"] = {"type": "NFKC"}
        self.refused(d, "normalizer NFKC is not supported")
        d = self.doc()
        d["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                                                               {"type": "Replace"}]}
        self.refused(d, "normalizer Sequence[Prepend, Replace]")
        d = self.doc()
        d["decoder"] = {"type": "Sequence", "decoders": [{"type": "Replace"}, {"type": "ByteFallback"},
                                                         {"type": "Fuse"}]}
        self.refused(d, "decoder Sequence[Replace, ByteFallback, Fuse]")
        d = self.doc()
        d["post_processor"] = {"type": "TemplateProcessing", "single": [
            {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}}]}
        self.refused(d, "TemplateProcessing adds $A, <|endoftext|>")
        d["post_processor"] = {"type": "RobertaProcessing"}
        self.refused(d, "post-processor RobertaProcessing")

    def test_vocabulary_problems(self):
        d = self.doc()
        d["added_tokens"][0]["rstrip"] = True
        self.refused(d, "added token '<|endoftext|>' has rstrip = true")
        d = self.doc()
        d["model"]["vocab"]["\u2581word"] = 9999
        self.refused(d, "vocabulary entry '\u2581word' (id 9999) is not a byte-level string")
        d = self.doc()
        del d["model"]["vocab"]["\u0100"]  # the byte 0x00 (GPT-2's table: U+0100)
        self.refused(d, "no token for the byte 0x00")
        d = self.doc()
        d["model"]["merges"].append(["Q", "Z"])
        self.refused(d, "'QZ' is not in the vocabulary")
        d = self.doc()
        d["added_tokens"][1]["id"] = 40
        self.refused(d, "added token '<|im_start|>' has id 40, which the vocabulary gives to")
        self.refused(self.doc(), "add_bos_token is true but there is no BOS token",
                     config={"add_bos_token": True, "bos_token": None})

    def test_bad_json(self):
        p = self.path("bad.json")
        with open(p, "w") as f:
            f.write('{"model": {"type": "BPE", "vocab": {')
        r = run_tool("--tokenizer-only", p, self.path("o.bin"))
        self.assertEqual((r.returncode, r.stderr.count("\n")), (1, 1), r.stderr)
        self.assertIn("invalid JSON", r.stderr)


class Gguf(Base):
    """GGUF 'gpt2' metadata (as llama.cpp's converter writes it) and tokenizer.json of the same
    vocabulary give the same MLTK bytes; and the model converter writes that file beside models."""

    def gguf_of(self, v, name, extra=(), pad=0):
        """A GGUF of v's 'gpt2' metadata; pad: [PAD<i>] unused tokens appended (llama.cpp pads
        the tokens to the model's vocabulary, e.g. Qwen2.5's 151936 rows)."""
        w = gguf.GgufWriter(self.path(name))
        for k, t, val in gguf.gpt2_tokenizer_metadata(v):
            if k == "tokenizer.ggml.tokens":
                val = val + ["[PAD%d]" % i for i in range(len(val), len(val) + pad)]
            elif k == "tokenizer.ggml.token_type":
                val = list(val) + [bpe.GT_UNUSED] * pad
            w.add(k, t, val)
        for k, t, val in extra:
            w.add(k, t, val)
        w.write(lambda n: [])
        return self.path(name)

    def test_same_mltk_from_gguf_and_tokenizer_json(self):
        for pre in range(4):
            v = trained(pre, normalizer=bpe.NORM_NFC if pre == bpe.PRE_QWEN2 else bpe.NORM_NONE)
            v.ignore_merges = pre == bpe.PRE_LLAMA3  # llama.cpp's llama-bpe always ignores merges
            v.bos, v.eos, v.pad, v.add_bos = 1, 2, 0, pre == bpe.PRE_LLAMA3
            v.template = "{{ bos_token }}"
            tj = self.write_json(bpe.to_tokenizer_json(v), "hf%d" % pre, "tokenizer.json")
            self.write_json({"bos_token": "<|im_start|>", "eos_token": "<|im_end|>",
                             "pad_token": "<|endoftext|>", "add_bos_token": v.add_bos,
                             "chat_template": v.template}, "hf%d" % pre, "tokenizer_config.json")
            g = self.gguf_of(bpe.from_tokenizer_json(tj), "t%d.gguf" % pre, pad=3 * pre)
            a, b = self.path("a%d.bin" % pre), self.path("b%d.bin" % pre)
            for src, out in ((tj, a), (g, b)):
                r = run_tool("--tokenizer-only", src, out)
                self.assertEqual(r.returncode, 0, r.stderr)
            with open(a, "rb") as fa, open(b, "rb") as fb:
                self.assertEqual(fa.read(), fb.read(), bpe.PRE_NAMES[pre])

    def test_gguf_refusals(self):
        v = trained()
        g = self.gguf_of(v, "x.gguf")
        md = gguf.GgufFile(g).metadata
        for key, val, needle in (("tokenizer.ggml.pre", "deepseek-llm", "tokenizer.ggml.pre 'deepseek-llm'"),
                                 ("tokenizer.ggml.model", "bert", "tokenizer.ggml.model is 'bert'"),
                                 ("tokenizer.ggml.pre", None, "missing metadata key tokenizer.ggml.pre")):
            m = dict(md)
            if val is None:
                del m[key]
            else:
                m[key] = val
            with self.assertRaises(bpe.BpeError) as cm:
                bpe.from_gguf_metadata(m, "x.gguf")
            self.assertIn(needle, str(cm.exception))
        m = dict(md)
        m["tokenizer.ggml.token_type"] = list(m["tokenizer.ggml.token_type"])[:-1]
        with self.assertRaises(bpe.BpeError):
            bpe.from_gguf_metadata(m, "x.gguf")

    def test_llama_gguf_tokenizer_only(self):
        """A GGUF with a 'llama' (SentencePiece) tokenizer still gives a llama2.c tokenizer.bin."""
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from test_fuzz_convert import tiny_tokenizer
        tok = self.path("tok8.bin")
        tiny_tokenizer(tok, 8)
        w = gguf.GgufWriter(self.path("l.gguf"))
        for k, t, val in gguf.gguf_tokenizer_metadata(tok):
            w.add(k, t, val)
        w.write(lambda n: [])
        out = self.path("l.tokenizer.bin")
        r = run_tool("--tokenizer-only", self.path("l.gguf"), out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out, "rb") as f, open(tok, "rb") as g:
            self.assertEqual(f.read(), g.read())

    def test_model_conversion_writes_mltk_beside_the_model(self):
        import gen_random
        v = trained(bpe.PRE_QWEN2, normalizer=bpe.NORM_NFC)
        tj = self.write_json(bpe.to_tokenizer_json(v), "tj", "tokenizer.json")
        want = bpe.from_tokenizer_json(tj).to_mltk()
        n = len(v.tokens)
        reader = gen_random.RandomReader(32, 64, 1, 2, 1, n + 7, 16, seed=1)
        gguf.write_gguf(reader, self.path("m.gguf"), tokenizer=tj)
        # tools/export.py: the GGUF again as GGUF and as a Hugging Face folder, tokenizer embedded
        for fmt in ("gguf", "hf"):
            r = subprocess.run([sys.executable, os.path.join(TOOLS, "export.py"), self.path("m.gguf"),
                                self.path("e." + fmt), "--format", fmt, "--tokenizer", tj],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr)
        for src in ("m.gguf", "e.gguf", "e.hf"):
            out = self.path("o_%s.mlb" % src)
            r = run_tool(self.path(src), out)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("wrote the tokenizer (%d tokens, MLTK)" % n, r.stderr)
            with open(self.path("o_%s.tokenizer.bin" % src), "rb") as f:
                got = f.read()
            # e.hf too: export.py's config.json names the tokenizer's own BOS/EOS ids (none here)
            self.assertEqual(got, want, src)
        # a tokenizer with more tokens than the model's vocabulary: a note, no tokenizer
        reader = gen_random.RandomReader(32, 64, 1, 2, 1, n - 1, 16, seed=1)
        src = self.path("small.gguf")
        gguf.write_gguf(reader, src, tokenizer=tj)
        r = run_tool(src, self.path("small.mlb"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("note: no tokenizer written: the tokenizer has %d tokens but the model's "
                      "vocabulary is %d" % (n, n - 1), r.stderr)
        self.assertFalse(os.path.exists(self.path("small.tokenizer.bin")))
        # a folder whose tokenizer.json is not byte-level: a note; --tokenizer PATH: an error
        d = bpe.to_tokenizer_json(v)
        d["model"]["byte_fallback"] = True
        self.write_json(d, "e.hf", "tokenizer.json")
        r = run_tool(self.path("e.hf"), self.path("bf.mlb"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("note: no tokenizer written: ", r.stderr)
        self.assertIn("byte_fallback", r.stderr)
        r = run_tool(self.path("e.hf"), self.path("bf2.mlb"), "--tokenizer", self.path("bf2.bin"))
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("cannot write the tokenizer", r.stderr)

    def test_tokenizer_only_usage(self):
        v = trained()
        tj = self.write_json(bpe.to_tokenizer_json(v), "u", "tokenizer.json")
        r = run_tool("--tokenizer-only", tj, tj)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("would overwrite the input", r.stderr)
        r = run_tool("--tokenizer-only", tj, self.path("o.bin"), "--wtype", "q8_0")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--tokenizer-only takes no --wtype", r.stderr)
        out = self.path("o.bin")
        r = run_tool("--tokenizer-only", tj, out)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = run_tool("--tokenizer-only", out, self.path("o2.bin"))
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("already an MLTK tokenizer file", r.stderr)
        r = run_tool("--tokenizer-only", self.path("u"), self.path("o3.bin"), "-q")
        self.assertEqual((r.returncode, r.stderr), (0, ""))


if __name__ == "__main__":
    unittest.main()
