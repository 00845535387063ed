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


class Misuse(Base):
    def run_bad(self, code, needle, *args):
        r = ml_run(*args)
        self.assert_one_line_error(r, code, needle)

    def test_missing_model(self):
        self.run_bad(1, "cannot open model file", model("nope.mlb"), "-z", TOK512)

    def test_directory_as_model(self):
        self.run_bad(1, "is a directory", MODELS, "-z", TOK512)

    def test_missing_tokenizer_option(self):
        self.run_bad(6, "no tokenizer", model("stories260K_f32.mlb"))

    def test_tokenizer_vocab_mismatch(self):
        self.run_bad(2, "tokenizer", model("tiny_q8_0.mlb"), "-z", TOK512)

    def test_unknown_option(self):
        self.run_bad(6, "unknown option --frobnicate", model("stories260K_f32.mlb"), "-z", TOK512, "--frobnicate", "1")

    def test_steps_zero(self):
        self.run_bad(6, "-n 0", model("stories260K_f32.mlb"), "-z", TOK512, "-n", "0")

    def test_bad_temperature(self):
        for t in ("-1", "nan", "inf", "warm"):
            self.run_bad(6, "--temp", model("stories260K_f32.mlb"), "-z", TOK512, "--temp", t)

    def test_bad_top_p(self):
        for p in ("0", "1.5", "-0.1", "nan"):
            self.run_bad(6, "--top-p", model("stories260K_f32.mlb"), "-z", TOK512, "--top-p", p)

    def test_bad_threads(self):
        for t in ("0", "100000", "-2", "two"):
            self.run_bad(6, "-t", model("stories260K_f32.mlb"), "-z", TOK512, "-t", t)

    def test_invalid_utf8_prompt(self):
        if NODE:
            self.skipTest("node passes argv as JS strings, so invalid UTF-8 cannot reach ml_run")
        self.run_bad(6, "not valid UTF-8", model("stories260K_f32.mlb"), "-z", TOK512, "-i", b"ab\xffcd")

    def test_prompt_longer_than_context(self):
        self.run_bad(6, "context holds 4 positions", model("stories260K_f32.mlb"), "-z", TOK512, "--max-seq", "4",
                     "-i", "Once upon a time there was")

    def test_bad_token_ids(self):
        self.run_bad(6, "--token-ids", model("stories260K_f32.mlb"), "-z", TOK512, "--token-ids", "1 403 9999")

    def test_unwritable_logits_path(self):
        with tempfile.TemporaryDirectory() as d:
            target = os.path.join(d, "missing-dir", "logits.f32")
            self.run_bad(1, "cannot write --logits file", model("stories260K_f32.mlb"), "-z", TOK512, "-n", "4",
                         "--logits", target)
            self.assertEqual(os.listdir(d), [])


if __name__ == "__main__":
    unittest.main()
