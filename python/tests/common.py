"""Paths and model fixtures of the binding's tests. Environment (cmake/Tests.cmake): ML_SHARED (the
shared data: stories260K, golden text), ML_SOURCE (the checkout: tools/ for the chat model),
ML_BUILD_ISA (the preset's ISA, which the package under test carries)."""
import json
import os
import subprocess
import sys

SOURCE = os.environ.get("ML_SOURCE", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SHARED = os.environ.get("ML_SHARED", os.path.join(SOURCE, "..", "shared"))
STORIES_GGUF = os.path.join(SHARED, "models", "stories260K", "stories260K.gguf")
GOLDEN = os.path.join(SHARED, "golden", "once_upon_a_time.txt")
GOLDEN_IDS = os.path.join(SHARED, "golden", "once_upon_a_time.tokens")
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable  # numpy for tools/

TEXTS = ["Hello there, how are you today? I am fine, thank you.", "What is two plus two? It is four.",
         "<|im_start|>user\nhi<|im_end|>\n", "The quick brown fox jumps over the lazy dog.",
         "Who won the world series in 2020? The team_name was the Dodgers.", "{\"team_name\": \"Dodgers\"}",
         "You are a helpful assistant that outputs in JSON.", "Describe this image in detail please."] * 4


def chatml_gguf(folder):
    """A GGUF with a Qwen2.5-style byte-level tokenizer embedded (trained here by tools/bpe.py, the real
    Qwen2.5 chat template from verify/data/chat_templates.json) on a random qwen2-tiny model."""
    sys.path.insert(0, os.path.join(SOURCE, "tools"))
    import bpe  # noqa: E402
    with open(os.path.join(SOURCE, "verify", "data", "chat_templates.json"), encoding="utf-8") as f:
        template = json.load(f)["templates"]["qwen2.5"]["source"]
    v = bpe.train(TEXTS, 400, bpe.PRE_QWEN2, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    v.eos, v.eot, v.stops, v.template = 2, 2, [0], template
    tok = os.path.join(folder, "qwen.mltk")
    with open(tok, "wb") as f:
        f.write(v.to_mltk())
    mlb = os.path.join(folder, "qwen2-tiny.mlb")
    n = str(len(v.tokens))
    subprocess.run([PY, os.path.join(SOURCE, "tools", "gen_random.py"), mlb, "--preset", "qwen2-tiny", "--seq", "512",
                    "--vocab", n, "--n-tokens", n, "-q"], check=True, timeout=300)
    out = os.path.join(folder, "qwen2-tiny.gguf")
    subprocess.run([PY, os.path.join(SOURCE, "tools", "export.py"), mlb, out, "--format", "gguf", "--tokenizer", tok],
                   check=True, timeout=300, stdout=subprocess.DEVNULL)
    return out, template


def rss_bytes():
    """Resident set size from /proc/self/statm (pages * page size)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
