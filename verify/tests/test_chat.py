"""ml_run --chat end to end (issue 15 item 1), and models handed over in another format (item 8).

Chat fixtures: tiny random models (tools/gen_random.py presets qwen2-tiny, llama3-tiny and qwen3-tiny,
context 512) with byte-level MLTK tokenizers trained here by tools/bpe.py that carry the real Qwen2.5,
Llama 3 and Qwen3 chat templates (verify/data/chat_templates.json). Named cases:
  - greedy: every turn of a KV-continued chat gives exactly the tokens (text) of a fresh one-shot
    ml_run over the whole rendered conversation (--token-ids from ml_tokenize);
  - turn 2 evaluates only the new tokens: its "prompt N tokens (K kept in the KV cache)" line keeps
    at least all of turn 1's prompt and evaluates the rest only;
  - Llama 3: BOS comes from the template text once (not doubled by the tokenizer's add_bos);
  - Qwen3 (head_dim != dim / heads, q/k norm): the template is detected as qwen3, and with
    --no-thinking each KV-continued turn equals a fresh run over the rendering that ends with the
    empty <think></think> block;
  - a full context: said on stderr, the chat ends with exit status 0 and the text generated so far;
    also a first prompt longer than the context;
  - errors in one line: no template (names --chat-template chatml|zephyr|llama2|llama3|qwen3), an unknown
    --chat-template, a format the tokenizer lacks the tokens of, --chat with -i, --system alone;
  - a llama2.c tokenizer.bin with --chat-template zephyr (</s> as EOS id 2) runs two turns;
  - "> " on stderr before each line when stdin is a terminal (a pty), never from a pipe;
  - EOF with no input: exit 0, nothing on stdout; empty lines are no turns; a line that is not
    valid UTF-8 is skipped with one line on stderr.
Foreign formats: stories260K.bin (llama2.c checkpoint) and a Hugging Face folder
given to ml_run are named, with the tools/convert.py command; a truncated checkpoint is not.
Environment: ML_RUN, ML_TOKENIZE, ML_EMULATOR ('|'-separated), ML_MODELS, ML_SHARED, ML_SOURCE.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

RUN = os.environ.get("ML_RUN", "")
TOKENIZE = os.environ.get("ML_TOKENIZE", "")
EMU = [a for a in os.environ.get("ML_EMULATOR", "").split("|") if a]
MODELS = os.environ.get("ML_MODELS", "")
SHARED = os.environ.get("ML_SHARED", "")
SOURCE = os.environ.get("ML_SOURCE", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(SOURCE, "tools"))

import bpe  # noqa: E402

TEXTS = ["Hello there, how are you today? I am fine, thank you.", "What is two plus two? It is four.",
         "<|im_start|>user\nhi<|im_end|>\n", "The quick brown fox jumps over the lazy dog.",
         "system user assistant\n\n", "Once upon a time there was a little girl who liked to play in the garden.",
         "She found a shiny stone and showed it to everyone she met, smiling all the while.",
         "Questions and answers: why is the sky blue? Because of scattering of sunlight."] * 4
REPLY = 6  # -n: tokens per reply


def run(args, stdin="", timeout=300):
    return subprocess.run(EMU + args, input=stdin.encode("utf-8"), capture_output=True, timeout=timeout)


def tokenize(tok, text):
    r = subprocess.run(EMU + [TOKENIZE, tok, "-i", text, "--no-bos"], capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return [int(x) for x in r.stdout.split()]


def chatml(messages, default_system):
    out = ""
    if messages[0][0] != "system":
        out += "<|im_start|>system\n%s<|im_end|>\n" % default_system
    for role, content in messages:
        out += "<|im_start|>%s\n%s<|im_end|>\n" % (role, content)
    return out + "<|im_start|>assistant\n"


def qwen3(messages, no_thinking):
    """Qwen3's template for replies without </think>: ChatML, no default system prompt."""
    out = ""
    for role, content in messages:
        out += "<|im_start|>%s\n%s<|im_end|>\n" % (role, content)
    return out + "<|im_start|>assistant\n" + ("<think>\n\n</think>\n\n" if no_thinking else "")


def llama3(messages):
    out = "<|begin_of_text|>"
    for role, content in messages:
        out += "<|start_header_id|>%s<|end_header_id|>\n\n%s<|eot_id|>" % (role, content.strip())
    return out + "<|start_header_id|>assistant<|end_header_id|>\n\n"


def turn_lines(stderr):
    return [(int(a), int(b), int(c)) for a, b, c in
            re.findall(r"turn (\d+): prompt (\d+) tokens \((\d+) kept in the KV cache\)", stderr)]


class Chat(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not RUN or not os.path.exists(RUN) or not TOKENIZE:
            raise unittest.SkipTest("ML_RUN / ML_TOKENIZE are not set to built programs")
        cls.dir = tempfile.mkdtemp(prefix="test_chat_")
        with open(os.path.join(SOURCE, "verify", "data", "chat_templates.json"), encoding="utf-8") as f:
            templates = json.load(f)["templates"]
        cls.qwen_tmpl = templates["qwen2.5"]["source"]
        # Qwen2.5-style: <|endoftext|> 0, <|im_start|> 1, <|im_end|> 2 (EOS and EOT), no BOS.
        v = bpe.train(TEXTS, 400, bpe.PRE_QWEN2, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
        v.eos, v.eot, v.stops, v.template = 2, 2, [0], cls.qwen_tmpl
        cls.qwen_tok = cls.write(v, "qwen.mltk")
        qwen_vocab = len(v.tokens)
        # Llama 3-style: BOS 0 added by the tokenizer, EOS 1, EOT <|eot_id|> 4.
        v = bpe.train(TEXTS, 400, bpe.PRE_LLAMA3, ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                                                    "<|end_header_id|>", "<|eot_id|>"])
        v.bos, v.add_bos, v.eos, v.eot, v.stops, v.template = 0, True, 1, 4, [], templates["llama3"]["source"]
        cls.llama3_tok = cls.write(v, "llama3.mltk")
        llama3_vocab = len(v.tokens)
        # Qwen3-style: the Qwen2.5 specials and <think>, </think> (added tokens in Qwen3's vocabulary).
        v = bpe.train(TEXTS, 400, bpe.PRE_QWEN2, ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>",
                                                   "</think>"])
        v.eos, v.eot, v.stops, v.template = 2, 2, [0], templates["qwen3"]["source"]
        cls.qwen3_tok = cls.write(v, "qwen3.mltk")
        qwen3_vocab = len(v.tokens)
        # No template at all.
        v = bpe.train(TEXTS, 20, bpe.PRE_QWEN2, ["<|endoftext|>"])
        cls.plain_tok = cls.write(v, "plain.mltk")
        # The qwen2-tiny / llama3-tiny shapes with a context of 512 (the fixtures' 64 is too short for
        # a conversation with this small vocabulary) and the tokenizers' sizes as vocab, so that every
        # sampled id has text (ids past a tokenizer decode to "": empty replies would prove little).
        cls.qwen_model = cls.random_model("qwen2-tiny", qwen_vocab)
        cls.llama3_model = cls.random_model("llama3-tiny", llama3_vocab)
        cls.qwen3_model = cls.random_model("qwen3-tiny", qwen3_vocab)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    @classmethod
    def random_model(cls, preset, vocab):
        py = sys.executable
        try:
            import numpy  # noqa: F401
        except ImportError:
            py = "/usr/bin/python3"  # Debian's python3-numpy (docs: docs/toolchain.md)
        out = os.path.join(cls.dir, preset + ".mlb")
        subprocess.run([py, os.path.join(SOURCE, "tools", "gen_random.py"), out, "--preset", preset, "--seq", "512",
                        "--vocab", str(vocab), "--n-tokens", str(vocab), "-q"], check=True, timeout=300)
        return out

    @classmethod
    def write(cls, vocab, name):
        p = os.path.join(cls.dir, name)
        with open(p, "wb") as f:
            f.write(vocab.to_mltk())
        return p

    def chat(self, model, tok, turns, *extra, max_seq=None):
        args = [RUN, model, "-z", tok, "--chat", "--temp", "0", "-n", str(REPLY), "-t", "1"] + list(extra)
        if max_seq:
            args += ["--max-seq", str(max_seq)]
        return run(args, "".join(t + "\n" for t in turns))

    def fresh(self, model, tok, prompt_text):
        """One-shot greedy ml_run over the rendered conversation: the reply's bytes."""
        ids = tokenize(tok, prompt_text)
        r = run([RUN, model, "-z", tok, "--token-ids", " ".join(map(str, ids)), "--temp", "0", "-t", "1",
                 "-n", str(len(ids) + REPLY - 1)])
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout
        echo = prompt_text.replace("<|begin_of_text|>", "").encode("utf-8")  # BOS is not echoed
        self.assertTrue(out.startswith(echo), out[:200])
        self.assertTrue(out.endswith(b"\n"))
        # ml_run --chat keeps only valid UTF-8 characters of a reply (it becomes a message)
        return out[len(echo):-1].decode("utf-8", "ignore")

    def check_equals_fresh(self, model, tok, render, system=None, turns=("Hello there", "What is two plus two?",
                                                                        "fine"), no_thinking=False):
        extra = (["--system", system] if system else []) + (["--no-thinking"] if no_thinking else [])
        r = self.chat(model, tok, turns, *extra)
        self.assertEqual(r.returncode, 0, r.stderr)
        messages = [("system", system)] if system else []
        want = ""
        for t in turns:
            messages.append(("user", t))
            reply = self.fresh(model, tok, render(messages))
            want += reply + "\n"
            messages.append(("assistant", reply))
        self.assertEqual(r.stdout.decode("utf-8"), want)
        self.assertEqual(len(turn_lines(r.stderr.decode())), len(turns))
        self.assertGreater(len(want.strip()), 2 * len(turns), "the replies have (almost) no text: %r" % want)
        return r

    def test_chatml_kv_continued_turns_equal_fresh_runs(self):
        self.check_equals_fresh(self.qwen_model, self.qwen_tok, lambda m: chatml(m, "You are Qwen, created by "
                                "Alibaba Cloud. You are a helpful assistant."), system="Be brief.")

    def test_chatml_default_system_prompt_of_the_template(self):
        self.check_equals_fresh(self.qwen_model, self.qwen_tok, lambda m: chatml(m, "You are Qwen, created by "
                                "Alibaba Cloud. You are a helpful assistant."), turns=("hi", "again"))

    def test_llama3_kv_continued_turns_equal_fresh_runs(self):
        self.check_equals_fresh(self.llama3_model, self.llama3_tok, llama3, system=" You are a dog. ")

    def test_qwen3_no_thinking_kv_continued_turns_equal_fresh_runs(self):
        r = self.check_equals_fresh(self.qwen3_model, self.qwen3_tok, lambda m: qwen3(m, True), system="Be brief.",
                                    no_thinking=True)
        self.assertIn("chat format qwen3 (the tokenizer's template)", r.stderr.decode())
        self.assertIn("4/2 heads of 24", r.stderr.decode())
        # without --no-thinking, turn 1's prompt is that much shorter: the block is the switch's alone
        plain = self.chat(self.qwen3_model, self.qwen3_tok, ["Hello there"], "--system", "Be brief.")
        self.assertEqual(plain.returncode, 0, plain.stderr)
        n_plain = turn_lines(plain.stderr.decode())[0][1]
        self.assertEqual(n_plain, len(tokenize(self.qwen3_tok, qwen3([("system", "Be brief."), ("user", "Hello there")],
                                                                     False))))
        self.assertEqual(turn_lines(r.stderr.decode())[0][1],
                         len(tokenize(self.qwen3_tok, qwen3([("system", "Be brief."), ("user", "Hello there")], True))))

    def test_turn2_evaluates_only_the_new_tokens(self):
        turns = ["Hello there", "What is two plus two?"]
        r = self.chat(self.qwen_model, self.qwen_tok, turns, "--system", "S")
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = turn_lines(r.stderr.decode())
        self.assertEqual([t for t, _, _ in lines], [1, 2])
        full1 = tokenize(self.qwen_tok, chatml([("system", "S"), ("user", turns[0])], ""))
        self.assertEqual(lines[0][1:], (len(full1), 0))  # turn 1: everything is new
        reply = r.stdout.decode().split("\n")[0] if "\n" not in r.stdout.decode()[:-1] else None
        _, n2, kept2 = lines[1]
        self.assertGreaterEqual(kept2, len(full1))  # all of turn 1's prompt stayed in the cache
        if reply is not None:
            full2 = tokenize(self.qwen_tok, chatml([("system", "S"), ("user", turns[0]), ("assistant", reply),
                                                    ("user", turns[1])], ""))
            self.assertEqual(n2 + kept2, len(full2))
            new_turn = tokenize(self.qwen_tok, "<|im_end|>\n<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n"
                                % turns[1])
            self.assertGreaterEqual(n2, len(new_turn))
            self.assertLessEqual(n2, len(new_turn) + REPLY)  # at most the reply is evaluated again

    def test_llama3_bos_once_from_the_template(self):
        r = self.chat(self.llama3_model, self.llama3_tok, ["hi"])
        self.assertEqual(r.returncode, 0, r.stderr)
        ids = tokenize(self.llama3_tok, llama3([("user", "hi")]))
        self.assertEqual(ids[0], 0)
        self.assertEqual(ids.count(0), 1)
        self.assertEqual(turn_lines(r.stderr.decode()), [(1, len(ids), 0)])

    def test_context_full_ends_the_chat_cleanly(self):
        full1 = len(tokenize(self.qwen_tok, chatml([("system", "S"), ("user", "Hello there")], "")))
        max_seq = full1 + 3  # the first reply runs into the end of the context
        r = self.chat(self.qwen_model, self.qwen_tok, ["Hello there", "more"], "--system", "S", max_seq=max_seq)
        err = r.stderr.decode()
        self.assertEqual(r.returncode, 0, err)
        self.assertIn("the context is full", err)
        self.assertEqual(len(turn_lines(err)), 1)  # turn 2 never started
        want = self.fresh(self.qwen_model, self.qwen_tok, chatml([("system", "S"), ("user", "Hello there")], ""))
        self.assertTrue(want.startswith(r.stdout.decode()[:-1]), (want, r.stdout))  # what was generated
        self.assertTrue(r.stdout.endswith(b"\n"))

    def test_context_full_at_the_first_prompt(self):
        r = self.chat(self.qwen_model, self.qwen_tok, ["Hello there " * 20], max_seq=16)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(b"the context is full: turn 1's prompt is", r.stderr)
        self.assertEqual(r.stdout, b"")

    def test_invalid_utf8_line_is_skipped(self):
        args = EMU + [RUN, self.qwen_model, "-z", self.qwen_tok, "--chat", "--temp", "0", "-n", "2", "-t", "1"]
        r = subprocess.run(args, input=b"caf\xe9\nhi\n", capture_output=True, timeout=300)
        err = r.stderr.decode("utf-8", "replace")
        self.assertEqual(r.returncode, 0, err)
        self.assertIn("line skipped: chat message 0: content is not valid UTF-8 (byte 3)", err)
        self.assertEqual([t for t, _, _ in turn_lines(err)], [1])  # "hi" is turn 1

    def test_prompt_on_stderr_only_when_stdin_is_a_terminal(self):
        import pty
        master, slave = pty.openpty()
        try:
            p = subprocess.Popen(EMU + [RUN, self.qwen_model, "-z", self.qwen_tok, "--chat", "--temp", "0", "-n", "2",
                                        "-t", "1"], stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            os.write(master, b"hi\n\x04")  # a line, then Ctrl-D at the start of the next: EOF
            out, err = p.communicate(timeout=300)
        finally:
            os.close(master)
            os.close(slave)
        self.assertEqual(p.returncode, 0, err)
        if not any("node" in os.path.basename(a) for a in EMU[:1]):  # (WebAssembly: node owns the terminal)
            self.assertEqual(err.count(b"> "), 2, err)  # before turn 1 and before the EOF
        self.assertEqual(len(turn_lines(err.decode())), 1)
        r = self.chat(self.qwen_model, self.qwen_tok, ["hi"])  # a pipe: no prompt
        self.assertNotIn(b"> ", r.stderr)

    def test_eof_and_empty_lines(self):
        r = self.chat(self.qwen_model, self.qwen_tok, [])
        self.assertEqual((r.returncode, r.stdout), (0, b""))
        r = self.chat(self.qwen_model, self.qwen_tok, ["", "hi", ""])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(turn_lines(r.stderr.decode())), 1)

    def assert_one_line_error(self, r, code, needle):
        err = r.stderr.decode()
        self.assertEqual(r.returncode, code, err)
        self.assertEqual(r.stdout, b"")
        self.assertIn(needle, err)
        self.assertEqual(len([l for l in err.splitlines() if l.startswith("ml_run: ") and needle in l]), 1)

    def test_errors(self):
        self.assert_one_line_error(self.chat(self.qwen_model, self.plain_tok, ["hi"]), 2,
                                   "--chat-template chatml|zephyr|llama2|llama3|qwen3")
        self.assert_one_line_error(self.chat(self.qwen_model, self.qwen_tok, ["hi"], "--chat-template", "jinja"), 6,
                                   "chatml|zephyr|llama2|llama3|qwen3")
        self.assert_one_line_error(self.chat(self.qwen_model, self.plain_tok, ["hi"], "--chat-template", "llama3"), 2,
                                   "no <|start_header_id|> token")
        self.assert_one_line_error(run([RUN, self.qwen_model, "-z", self.qwen_tok, "--chat", "-i", "x"]), 6,
                                   "--chat reads its turns from stdin")
        self.assert_one_line_error(run([RUN, self.qwen_model, "-z", self.qwen_tok, "--system", "x"]), 6,
                                   "--system needs --chat")

    def test_help_describes_chat(self):
        r = run([RUN, "--help"])
        self.assertEqual(r.returncode, 0)
        for opt in (b"--chat ", b"--system TEXT", b"--chat-template F", b"chatml", b"zephyr", b"llama2", b"llama3"):
            self.assertIn(opt, r.stdout)

    def test_llama2c_tokenizer_with_zephyr(self):
        tok = os.path.join(SHARED, "models", "stories260K", "tok512.bin")
        model = os.path.join(MODELS, "stories260K_f32.mlb")
        if not os.path.exists(tok) or not os.path.exists(model):
            self.skipTest("no stories260K (ML_SHARED)")
        r = self.chat(model, tok, ["Once upon a time", "The end"], "--chat-template", "zephyr", "--system", "Tell")
        err = r.stderr.decode()
        self.assertEqual(r.returncode, 0, err)
        self.assertIn("chat format zephyr", err)
        lines = turn_lines(err)
        self.assertEqual([t for t, _, _ in lines], [1, 2])
        self.assertGreater(lines[1][2], lines[0][1] - 1)  # turn 1's prompt kept


class ForeignFormats(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not RUN or not os.path.exists(RUN):
            raise unittest.SkipTest("ML_RUN is not set to a built ml_run")
        cls.dir = tempfile.mkdtemp(prefix="test_foreign_")
        cls.tok = os.path.join(SHARED, "models", "stories260K", "tok512.bin")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def refused(self, path, kind, out):
        r = run([RUN, path, "-z", self.tok, "-n", "4"])
        err = r.stderr.decode()
        self.assertEqual(r.returncode, 2, err)
        self.assertEqual(r.stdout, b"")
        self.assertEqual(err.count("\n"), 1, err)
        self.assertIn("is a %s, not a .mlb file" % kind, err)
        self.assertIn("python3 tools/convert.py %s %s" % (path, out), err)

    def shared(self, name):
        p = os.path.join(SHARED, "models", "stories260K", name)
        if not os.path.exists(p):
            self.skipTest("no %s (ML_SHARED)" % p)
        return p

    def test_llama2c_checkpoint(self):
        p = self.shared("stories260K.bin")
        self.refused(p, "llama2.c checkpoint", p[:-4] + ".mlb")

    def test_hugging_face_folder(self):
        self.shared("tok512.bin")
        d = os.path.join(self.dir, "hf-model")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "config.json"), "w") as f:
            f.write("{}")
        self.refused(d + "/", "Hugging Face folder", d + ".mlb")

    def test_truncated_checkpoint_is_not_recognised(self):
        p = self.shared("stories260K.bin")
        t = os.path.join(self.dir, "cut.bin")
        with open(p, "rb") as f, open(t, "wb") as g:
            g.write(f.read()[:-4])
        r = run([RUN, t, "-z", self.tok])
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"bad magic", r.stderr)
        self.assertNotIn(b"convert.py", r.stderr)


if __name__ == "__main__":
    unittest.main()
