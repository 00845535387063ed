#!/usr/bin/env python3
"""Byte-level BPE tokenizers (GPT-2 style: Qwen2, SmolLM2, Llama 3, GPT-2) for tools/convert.py.

The command line (`bpe.py encode|decode|info TOKENIZER ...`) and, for the scripts and tests that
`import bpe`, every name of the modules it is made of (standard library only):

- tools/mltk.py: the MLTK file and `Vocab` (`read_mltk`, `Vocab.to_mltk()`, the naive reference
  encoder `Vocab.encode(text)` / `Vocab.decode(ids)`), `BpeError`.
- tools/bpe_pretokenize.py: the pre-tokenizer kinds, their regexes, `pretokenize(pre, text)`.
- tools/bpe_import.py: `from_tokenizer_json`, `from_hf_folder`, `from_gpt2_files`,
  `from_gguf_metadata`, and back: `gguf_metadata`, `to_tokenizer_json`; GPT-2's byte table.
- tools/bpe_train.py: `train(texts, n_merges, ...)`.
"""
import argparse
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

# Re-exported (callers use bpe.X); flake8: E402 (after the sys.path line), F401 (unused here).
from bpe_pretokenize import (  # noqa: E402,F401
    GPT2_REGEX, LLAMA3_REGEX, PRE_GPT2, PRE_LLAMA3, PRE_NAMES, PRE_QWEN2, PRE_SMOLLM, QWEN2_REGEX,
    SPLIT_REGEXES, WHITE_SPACE, pretokenize)
from mltk import (  # noqa: E402,F401
    FLAG_ADD_BOS, FLAG_IGNORE_MERGES, HEADER, KIND_ABSENT, KIND_ADDED, KIND_NORMAL, KIND_SPECIAL,
    MAGIC, MAX_STOP, MAX_TEMPLATE, MAX_TOKENS, NORM_NFC, NORM_NONE, VERSION, BpeError, Vocab,
    is_mltk, read_mltk)
from bpe_import import (  # noqa: E402,F401
    BYTE_TO_CHAR, CHAR_TO_BYTE, EOT_NAMES, GGUF_PRE, GGUF_PRE_OUT, GT_BYTE, GT_CONTROL, GT_NORMAL,
    GT_UNKNOWN, GT_UNUSED, GT_USER_DEFINED, build, from_gguf_metadata, from_gpt2_files,
    from_hf_folder, from_tokenizer_json, gguf_metadata, pre_tokenizer_kind, remap,
    to_tokenizer_json, unmap)
from bpe_train import train  # noqa: E402,F401


# ------------------------------------------------------------------------------------ CLI

def main(argv=None):
    """bpe.py encode|decode TOKENIZER ...: the naive reference encoder on a tokenizer file
    (MLTK, tokenizer.json, a folder); prints ids or writes bytes."""
    ap = argparse.ArgumentParser(prog="bpe.py", description="The reference byte-level BPE "
                                 "encoder/decoder of tools/bpe.py (slow; for tests).")
    ap.add_argument("command", choices=["encode", "decode", "info"])
    ap.add_argument("tokenizer", help="an MLTK file, a tokenizer.json or a Hugging Face folder")
    ap.add_argument("text", nargs="?", help="encode: the text (default: stdin); decode: ids")
    ap.add_argument("--bos", action="store_true", help="add BOS when the tokenizer says so")
    ap.add_argument("--no-special", action="store_true", help="do not split special tokens")
    args = ap.parse_args(argv)
    try:
        t = args.tokenizer
        if os.path.isdir(t):
            v = from_hf_folder(t)
        elif is_mltk(t):
            with open(t, "rb") as f:
                v = read_mltk(f.read(), t)
        else:
            v = from_tokenizer_json(t)
        if args.command == "info":
            print(v.describe())
        elif args.command == "encode":
            text = args.text if args.text is not None else sys.stdin.buffer.read().decode("utf-8")
            print(" ".join(map(str, v.encode(text, args.bos, not args.no_special))))
        else:
            ids = [int(x) for x in (args.text or sys.stdin.read()).split()]
            sys.stdout.buffer.write(v.decode(ids))
    except (BpeError, ValueError, UnicodeDecodeError) as e:
        sys.stderr.write("bpe.py: %s\n" % e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
