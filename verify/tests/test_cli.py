#!/usr/bin/python3
"""ml_run's command-line contract: golden text against llama2.c, --logits, --help/--version, and one
clear line plus a non-zero exit for every misuse. Run by CTest (cmake/Tests.cmake) with
ML_RUN (the binary), ML_EMULATOR ('|'-separated emulator command, may be empty), ML_MODELS (the
fixtures' models), ML_SHARED (../shared)."""
import os
import struct
import subprocess
import sys
import tempfile
import time
import unittest

RUN = os.environ.get("ML_RUN", "")
EMU = [a for a in os.environ.get("ML_EMULATOR", "").split("|") if a]
MODELS = os.environ.get("ML_MODELS", "")
SHARED = os.environ.get("ML_SHARED", "")
TOK512 = os.path.join(SHARED, "models", "stories260K", "tok512.bin")
GOLDEN = os.path.join(SHARED, "golden", "once_upon_a_time.txt")
GOLDEN_IDS = os.path.join(SHARED, "golden", "once_upon_a_time.tokens")
# Builds without a thread pool (ML_THREADS=OFF: WebAssembly) run one thread and refuse -t 2.
THREADS = os.environ.get("ML_THREADS", "ON").upper() not in ("OFF", "0", "FALSE", "NO")
# Under node (the WebAssembly builds), argv reaches the program as JS strings: never invalid UTF-8.
NODE = bool(EMU) and os.path.basename(EMU[0]).startswith("node")


def model(name):
    return os.path.join(MODELS, name)


def ml_run(*args, timeout=300):
    return subprocess.run(EMU + [RUN, *args], capture_output=True, timeout=timeout)


class Base(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not RUN or not os.path.exists(RUN):
            raise unittest.SkipTest("ML_RUN is not set to a built ml_run")
        if not os.path.exists(TOK512):
            print("\n*** SKIPPED: %s is absent (the shared data folder); see README.md\n" % TOK512, file=sys.stderr)
            raise unittest.SkipTest("shared data absent: " + TOK512)

    def assert_one_line_error(self, r, code, needle):
        err = r.stderr.decode("utf-8", "replace")
        self.assertEqual(r.returncode, code, "exit status; stderr: %s" % err)
        self.assertEqual(r.stdout, b"", "nothing on stdout for a failure")
        self.assertEqual(err.count("\n"), 1, "exactly one line on stderr, got: %r" % err)
        self.assertTrue(err.startswith("ml_run: "), err)
        self.assertIn(needle, err)


class Golden(Base):
    def test_f32_greedy_text_is_llama2c_byte_for_byte(self):
        r = ml_run(model("stories260K_f32.mlb"), "-z", TOK512, "-n", "200", "--temp", "0", "-i", "Once upon a time")
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(GOLDEN, "rb") as f:
            self.assertEqual(r.stdout, f.read())

    def test_f32_golden_with_one_and_two_threads(self):
        with open(GOLDEN, "rb") as f:
            want = f.read()
        for t in ("1", "2") if THREADS else ("1",):
            r = ml_run(model("stories260K_f32.mlb"), "-z", TOK512, "-n", "200", "--temp", "0", "-t", t,
                       "-i", "Once upon a time")
            self.assertEqual(r.stdout, want, "threads %s" % t)
        if not THREADS:
            r = ml_run(model("stories260K_f32.mlb"), "-z", TOK512, "-n", "200", "--temp", "0", "-t", "2")
            self.assert_one_line_error(r, 6, "no thread support")

    def test_quantized_models_write_coherent_text(self):
        for w in ("q8_0", "q4_0"):
            r = ml_run(model("stories260K_%s.mlb" % w), "-z", TOK512, "-n", "200", "--temp", "0",
                       "-i", "Once upon a time")
            self.assertEqual(r.returncode, 0, r.stderr)
            text = r.stdout.decode("utf-8")
            self.assertTrue(text.startswith("Once upon a time"), text)
            words = text.split()
            self.assertGreater(len(words), 60, text)
            # TinyStories prose: mostly lower-case dictionary words, the usual function words present.
            for common in ("the", "was", "to", "and"):
                self.assertIn(common, [x.strip('.,!?"\'').lower() for x in words], "%s: %s" % (w, text))
            alpha = sum(c.isalpha() or c.isspace() for c in text) / len(text)
            self.assertGreater(alpha, 0.9, text)

    def test_kv_cache_types_write_the_story(self):
        # stories260K's head_dim is 8: a Q8_0 cache pads each row to one block of 32
        for kv in ("f16", "q8_0"):
            r = ml_run(model("stories260K_q8_0.mlb"), "-z", TOK512, "-n", "60", "--temp", "0", "--kv-type", kv,
                       "-i", "Once upon a time")
            self.assertEqual(r.returncode, 0, r.stderr)
            text = r.stdout.decode("utf-8")
            self.assertTrue(text.startswith("Once upon a time, there was a little girl named Lily."), "%s: %s" % (kv, text))

    def test_empty_prompt_writes_a_story(self):
        r = ml_run(model("stories260K_f32.mlb"), "-z", TOK512, "-n", "40", "--temp", "0")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith(b"Once upon a time"), r.stdout)

    def test_seeded_sampling_is_reproducible(self):
        args = [model("stories260K_q8_0.mlb"), "-z", TOK512, "-n", "80", "--temp", "0.9", "--top-p", "0.9",
                "--seed", "42", "-i", "Lily"]
        a, b = ml_run(*args), ml_run(*args)
        self.assertEqual(a.returncode, 0, a.stderr)
        self.assertEqual(a.stdout, b.stdout)
        c = ml_run(*(args[:-3] + ["43", "-i", "Lily"]))
        self.assertNotEqual(a.stdout, c.stdout)

    def test_stats_go_to_stderr(self):
        r = ml_run(model("stories260K_f32.mlb"), "-z", TOK512, "-n", "20", "--temp", "0", "-i", "Hi")
        err = r.stderr.decode()
        self.assertIn("tok/s", err)
        self.assertIn("loaded in", err)
        self.assertNotIn(b"tok/s", r.stdout)


class Logits(Base):
    def test_logits_file_teacher_forced_on_golden_tokens(self):
        with open(GOLDEN_IDS) as f:
            ids = f.read().split()
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "logits.f32")
            r = ml_run(model("stories260K_f32.mlb"), "-z", TOK512, "--token-ids", " ".join(ids[:200]), "-n", "200",
                       "--temp", "0", "--logits", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out, "rb") as f:
                raw = f.read()
            self.assertEqual(len(raw), 200 * 512 * 4)
            self.assertEqual(os.listdir(d), ["logits.f32"], "no temporary file left behind")
        agree = 0
        for p in range(200):
            row = struct.unpack_from("<512f", raw, p * 512 * 4)
            agree += max(range(512), key=lambda i: (row[i], -i)) == int(ids[p + 1])
        self.assertEqual(agree, 200, "F32 greedy argmax must agree with llama2.c at every position")


def huge_pages_expected(size):
    """runtime/model.h huge_pages_help on this system: Linux transparent huge pages on, the file
    32 MiB or more and at most half of MemAvailable."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            thp = f.read()
        with open("/proc/meminfo") as f:
            avail = [int(l.split()[1]) * 1024 for l in f if l.startswith("MemAvailable:")][0]
    except (OSError, IndexError):
        return False
    return ("[always]" in thp or "[madvise]" in thp) and size >= 32 << 20 and size <= avail // 2


class HugePages(Base):
    """A .mlb of 32 MiB or more is copied into huge pages unless --mmap (ml_options.map_weights): the
    note says so, and the logits are the mapped file's bit for bit."""

    def test_copied_weights_give_the_mapped_logits(self):
        with tempfile.TemporaryDirectory() as d:
            m = os.path.join(d, "big_f32.mlb")
            gen = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "gen_random.py")
            subprocess.run([sys.executable, gen, m, "--preset", "stories15m", "--vocab", "512", "--layers", "10",
                            "--wtype", "f32", "-q"], check=True)
            size = os.path.getsize(m)
            self.assertGreater(size, 32 << 20)
            # Linux builds only: Windows' (under Wine) and the WebAssembly module (under node) keep
            # the mapping or the read buffer
            linux = not RUN.endswith(".exe") and not NODE
            out = {}
            for mode in ("copied", "mapped"):
                out[mode] = os.path.join(d, mode + ".f32")
                r = ml_run(m, "-z", TOK512, "-n", "6", "--temp", "0", "-i", "Once", "--logits", out[mode],
                           *(["--mmap"] if mode == "mapped" else []))
                self.assertEqual(r.returncode, 0, r.stderr)
                note = b"weights copied into huge pages" in r.stderr
                self.assertEqual(note, mode == "copied" and linux and huge_pages_expected(size), r.stderr)
            with open(out["copied"], "rb") as a, open(out["mapped"], "rb") as b:
                la, lb = a.read(), b.read()
            self.assertEqual(len(la), 6 * 512 * 4)
            self.assertEqual(la, lb)


class Usage(Base):
    def test_help(self):
        r = ml_run("--help")
        self.assertEqual(r.returncode, 0)
        text = r.stdout.decode()
        for opt in ("-z", "-i", "--token-ids", "-n", "--temp", "--top-p", "--seed", "-t", "--logits", "--max-seq",
                    "--reference", "--version"):
            self.assertIn(opt, text)

    def test_version_names_every_kernel(self):
        r = ml_run("--version")
        self.assertEqual(r.returncode, 0)
        text = r.stdout.decode()
        self.assertIn("ISA " + os.environ.get("ML_ISA", ""), text)
        for k in ("matvec_q8", "matvec_q4", "matvec_f32", "quantize_q8", "rmsnorm", "softmax", "rope", "silu_mul",
                  "add", "dot_f32", "axpy_f32"):
            self.assertIn(k, text)


class OptionTable(Base):
    """native/options.h: every program beside ml_run (ml_tokenize, ml_bench, ml_server where built)
    parses its options from one table: an unknown option is named as unknown even when it is the
    last argument, a bad value names the option as spelled, and --help lists the table."""

    def programs(self):
        d = os.path.dirname(RUN)
        ext = os.path.splitext(RUN)[1]
        names = ["ml_run", "ml_tokenize", "ml_bench", "ml_server"]
        return [(n, os.path.join(d, n + ext)) for n in names if os.path.exists(os.path.join(d, n + ext))]

    def test_unknown_option_is_named_for_every_program(self):
        progs = self.programs()
        self.assertGreaterEqual(len(progs), 3, progs)
        for name, exe in progs:
            for args in (["x", "--frobnicate"], ["--frobnicate", "1", "x"]):
                r = subprocess.run(EMU + [exe, *args], capture_output=True, timeout=120)
                err = r.stderr.decode("utf-8", "replace").replace("\r\n", "\n")
                self.assertEqual(r.returncode, 6, "%s %s: %s" % (name, args, err))
                self.assertEqual(err, "%s: unknown option --frobnicate (%s --help for usage)\n" % (name, name))

    def test_bad_value_names_the_option_as_spelled(self):
        r = ml_run("x", "--steps", "0")
        self.assert_one_line_error(r, 6, "--steps 0: steps must be an integer >= 1")
        r = ml_run("x", "--max-seq")
        self.assert_one_line_error(r, 6, "option --max-seq needs a value")

    def test_help_lists_each_program_table(self):
        for name, exe in self.programs():
            r = subprocess.run(EMU + [exe, "--help"], capture_output=True, timeout=120)
            self.assertEqual(r.returncode, 0, name)
            out = r.stdout.decode()
            self.assertIn("\noptions:\n", out, name)
            self.assertIn("  -h, --help            this text\n", out, name)

    def test_tokenize_empty_file_is_bos_alone(self):
        exe = dict(self.programs()).get("ml_tokenize")
        if not exe:
            self.skipTest("no ml_tokenize beside ml_run")
        with tempfile.TemporaryDirectory() as d:
            empty = os.path.join(d, "empty.txt")
            open(empty, "wb").close()
            r = subprocess.run(EMU + [exe, TOK512, "-f", empty], capture_output=True, timeout=120)
            self.assertEqual((r.returncode, r.stdout.replace(b"\r\n", b"\n")), (0, b"1\n"), r.stderr)
            r = subprocess.run(EMU + [exe, TOK512, "-f", empty, "--no-bos"], capture_output=True, timeout=120)
            self.assertEqual((r.returncode, r.stdout.replace(b"\r\n", b"\n")), (0, b"\n"), r.stderr)


class ChainAndJson(Base):
    """ml_run's sampler-chain flags and --json-schema (runtime/sampler.h, structured/ml_structured.h)."""

    GGUF = os.path.join(SHARED, "models", "stories260K", "stories260K.gguf")
    SCHEMA = {"type": "object", "additionalProperties": False, "required": ["name", "age", "tags"],
              "properties": {"name": {"type": "string", "maxLength": 12}, "age": {"type": "integer"},
                             "tags": {"type": "array", "maxItems": 2, "items": {"enum": ["a", "b"]}}}}

    def test_top_k_1_is_greedy(self):
        greedy = ml_run(self.GGUF, "-n", "60", "--temp", "0", "-i", "Once upon a time")
        for seed in ("1", "77"):
            r = ml_run(self.GGUF, "-n", "60", "--temp", "1", "--top-k", "1", "--seed", seed, "-i", "Once upon a time")
            self.assertEqual((r.returncode, r.stdout), (0, greedy.stdout), r.stderr)

    def test_json_schema_text_parses_and_validates(self):
        import json
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "schema.json")
            with open(path, "w") as f:
                json.dump(self.SCHEMA, f)
            for seed in ("1", "2", "3"):
                r = ml_run(self.GGUF, "-n", "200", "--temp", "1", "--seed", seed, "-i", "Tim", "--json-schema", path)
                self.assertEqual(r.returncode, 0, r.stderr)
                out = r.stdout.decode("utf-8").replace("\r\n", "\n")
                self.assertTrue(out.startswith("Tim") and out.endswith("\n"), out)
                v = json.loads(out[3:-1])
                self.assertEqual(set(v), {"name", "age", "tags"}, out)
                self.assertTrue(isinstance(v["name"], str) and len(v["name"]) <= 12, out)
                self.assertTrue(isinstance(v["age"], int) and not isinstance(v["age"], bool), out)
                self.assertTrue(len(v["tags"]) <= 2 and all(t in ("a", "b") for t in v["tags"]), out)

    def test_misuse_names_the_option(self):
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "bad.json")
            with open(bad, "w") as f:
                f.write('{"type":"string","pattern":"a+"}')
            r = ml_run(self.GGUF, "--json-schema", bad)
            self.assertEqual(r.returncode, 6, r.stderr)
            self.assertIn(b'schema keyword "pattern" at / is not supported', r.stderr)
            r = ml_run(self.GGUF, "--json-schema", os.path.join(d, "none.json"))
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn(b"cannot open --json-schema file", r.stderr)
        self.assert_one_line_error(ml_run(self.GGUF, "--logit-bias", "5"), 6, "--logit-bias 5: must be TOKEN_ID=BIAS")
        self.assert_one_line_error(ml_run(self.GGUF, "--min-p", "1.5"), 6, "--min-p 1.5")


class Misuse(Base):
    """The misuse table: each case exits non-zero with one line on stderr naming the problem,
    nothing on stdout, and no file left where --logits pointed (not even its temporary)."""

    def run_bad(self, code, needle, *args, logits=True, timeout=300):
        with tempfile.TemporaryDirectory() as d:
            extra = ["--logits", os.path.join(d, "logits.f32")] if logits else []
            r = ml_run(*args, *extra, timeout=timeout)
            self.assert_one_line_error(r, code, needle)
            self.assertEqual(os.listdir(d), [], "no output file, not even a temporary one")

    def small_tokenizer(self, d, n):
        """The first n tokens of tok512.bin: a tokenizer of a smaller vocabulary."""
        with open(TOK512, "rb") as f:
            b = f.read()
        off = 4
        for _ in range(n):
            (length,) = struct.unpack_from("<i", b, off + 4)
            off += 8 + length
        path = os.path.join(d, "tok%d.bin" % n)
        with open(path, "wb") as f:
            f.write(b[:off])
        return path

    def test_missing_model(self):
        self.run_bad(1, "cannot open model file", model("nope.mlb"), "-z", TOK512)

    def test_directory_as_model(self):
        self.run_bad(1, "is a directory", MODELS, "-z", TOK512)

    def test_truncated_model(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "cut.mlb")
            with open(model("tiny_q8_0.mlb"), "rb") as f:
                b = f.read()
            with open(path, "wb") as f:
                f.write(b[:len(b) - 100])
            self.run_bad(2, "runs past the end of the file", path, "-z", TOK512)

    def test_missing_tokenizer_option(self):
        self.run_bad(6, "no tokenizer", model("stories260K_f32.mlb"))

    def test_missing_tokenizer_file(self):
        self.run_bad(1, "cannot open tokenizer file", model("stories260K_f32.mlb"), "-z", model("nope.bin"))

    def test_directory_as_tokenizer(self):
        self.run_bad(1, "is a directory", model("stories260K_f32.mlb"), "-z", MODELS)

    def test_tokenizer_vocab_mismatch(self):
        # the tokenizer has more tokens than the model (512 for 64) ...
        self.run_bad(2, "larger vocabulary than the model", model("tiny_q8_0.mlb"), "-z", TOK512)
        # ... or fewer (64 for 512)
        with tempfile.TemporaryDirectory() as d:
            self.run_bad(2, "ends after 64 tokens but the model's vocab is 512", model("stories260K_f32.mlb"),
                         "-z", self.small_tokenizer(d, 64))

    def test_unknown_option(self):
        self.run_bad(6, "unknown option --frobnicate", model("stories260K_f32.mlb"), "-z", TOK512, "--frobnicate", "1")

    def test_bad_kv_type(self):
        for t in ("q4_0", "F16", ""):
            self.run_bad(6, "choose f32, f16 or q8_0", model("stories260K_f32.mlb"), "-z", TOK512, "--kv-type", t)

    def test_steps_zero(self):
        for n in ("0", "-1", "many", ""):
            self.run_bad(6, "-n %s" % n, model("stories260K_f32.mlb"), "-z", TOK512, "-n", n)

    def test_bad_temperature(self):
        for t in ("-1", "-0.5", "nan", "-nan", "inf", "warm"):
            self.run_bad(6, "--temp", model("stories260K_f32.mlb"), "-z", TOK512, "--temp", t)

    def test_bad_top_p(self):
        for p in ("0", "1.5", "2", "-0.1", "nan", "inf"):
            self.run_bad(6, "--top-p", model("stories260K_f32.mlb"), "-z", TOK512, "--top-p", p)

    def test_bad_threads(self):
        for t in ("0", "100000", "1025", "-2", "two"):
            self.run_bad(6, "-t", model("stories260K_f32.mlb"), "-z", TOK512, "-t", t)

    def test_invalid_utf8_prompt(self):
        if NODE:
            self.skipTest("node passes argv as JS strings, so invalid UTF-8 cannot reach ml_run")
        for bad in (b"ab\xffcd", b"\xc0\xaf overlong", b"\xed\xa0\x80 surrogate", b"cut at the end \xe4\xbd",
                    b"\xf4\x90\x80\x80 past U+10FFFF"):
            self.run_bad(6, "not valid UTF-8", model("stories260K_f32.mlb"), "-z", TOK512, "-i", bad)

    def test_prompt_longer_than_context(self):
        self.run_bad(6, "context holds 4 positions", model("stories260K_f32.mlb"), "-z", TOK512, "--max-seq", "4",
                     "-i", "Once upon a time there was")

    def test_prompt_far_longer_than_context_fails_fast(self):
        # ~120 KB (under Linux's 128 KiB limit for one argument): the encoder used to need minutes
        prompt = "Once upon a time, there was a little girl named Lily. " * 2200
        t0 = time.time()
        self.run_bad(6, "but the context holds 512 positions", model("stories260K_f32.mlb"), "-z", TOK512,
                     "-i", prompt)
        self.assertLess(time.time() - t0, 60 if EMU else 20, "a long prompt must be refused quickly")

    def test_bad_token_ids(self):
        self.run_bad(6, "--token-ids", model("stories260K_f32.mlb"), "-z", TOK512, "--token-ids", "1 403 9999")

    def test_unwritable_logits_path(self):
        with tempfile.TemporaryDirectory() as d:
            target = os.path.join(d, "missing-dir", "logits.f32")
            self.run_bad(1, "cannot write --logits file", model("stories260K_f32.mlb"), "-z", TOK512, "-n", "4",
                         "--logits", target, logits=False)
            self.assertEqual(os.listdir(d), [])

    def test_logits_path_is_a_directory(self):
        with tempfile.TemporaryDirectory() as d:
            self.run_bad(1, "is a directory", model("stories260K_f32.mlb"), "-z", TOK512, "-n", "4",
                         "--logits", d, logits=False)
            self.assertEqual(os.listdir(d), [])

    def test_logits_path_is_the_model(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.mlb")
            with open(model("tiny_q8_0.mlb"), "rb") as f:
                b = f.read()
            with open(path, "wb") as f:
                f.write(b)
            tok = self.small_tokenizer(d, 64)
            self.run_bad(1, "it is the model file", path, "-z", tok, "-n", "4", "--logits", path, logits=False)
            self.run_bad(1, "it is the tokenizer file", path, "-z", tok, "-n", "4", "--logits", tok, logits=False)
            with open(path, "rb") as f:
                self.assertEqual(f.read(), b, "the model is untouched")
            self.assertEqual(sorted(os.listdir(d)), ["m.mlb", "tok64.bin"])


if __name__ == "__main__":
    unittest.main()
