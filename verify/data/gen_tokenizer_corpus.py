#!/usr/bin/env python3
"""Writes verify/data/tokenizer_corpus.txt: the strings the tokenizer tests run through our
pre-tokenizers / tokenizers and through outside implementations (node's regex engine, npm
tokenizers), to be compared piece for piece and id for id.

Format: one JSON string literal per line (UTF-8), in order; line k is string k. Besides JSON's own
escapes (\\n, \\r, \\t, \\", \\\\), every other control, format, separator (other than U+0020), mark, private-use or unassigned
character is written as a \\uXXXX escape (so each line is plain to read and no tool splits it at
U+2028 / U+0085). Read it with json.loads / JSON.parse per line, splitting the file at '\\n' only.

The corpus keeps out characters on which Hugging Face tokenizers (Oniguruma regexes) and JavaScript
regexes disagree, so JS implementations can serve as oracles on all of it: U+0085 (White_Space, not
JS \\s), U+FEFF (JS \\s, not White_Space), U+017F (folds to 's' in (?i:'s)). Also out: code points
unassigned in Python's Unicode version or changed since (the JS engines run a newer Unicode).
pretokenize_extra_corpus.txt (same format) holds those for the pre-tokenizer tests only.

Also writes nfc_expected.txt: lines `INPUT<TAB>NFC` (both JSON strings as above), Python's
unicodedata.normalize("NFC", INPUT) (runtime/text/unicode.cc's tables come from the same unicodedata, so
this checks the algorithm and the table encoding, not the data): the canonical decomposition (NFD)
of every code point that has one except Hangul syllables (sampled instead), every corpus string,
and random strings of combining marks, starters and jamo that exercise reordering and blocking.

Deterministic: rerun to regenerate; `--check` fails if the committed files differ (exit 77, skipped,\nunder a Python with another Unicode version).
"""
import json
import os
import random
import sys
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
EXCLUDED = {"\u0085", "\ufeff", "\u017f"}


def encode_line(s):
    out = []
    for ch in s:
        cp = ord(ch)
        cat = unicodedata.category(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch in "\n\r\t":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}[ch])
        elif cp < 0x20 or cat[0] in "CM" or (cat[0] == "Z" and ch != " "):
            if cp >= 0x10000:
                v = cp - 0x10000
                out.append(f"\\u{0xD800 + (v >> 10):04x}\\u{0xDC00 + (v & 0x3FF):04x}")
            else:
                out.append(f"\\u{cp:04x}")
        else:
            out.append(ch)
    line = '"' + "".join(out) + '"'
    assert json.loads(line) == s
    return line


def handwritten():
    c = [""]
    # Whitespace runs of 1-8 spaces: before words, at line ends, before newlines, alone, leading.
    for k in range(1, 9):
        sp = " " * k
        c += [f"word{sp}word", f"{sp}word", f"word{sp}", f"line{sp}\nnext", f"line{sp}\r\nnext", sp,
              f"a{sp}1", f"x{sp}!", f"end.{sp}\n{sp}start", f"\n{sp}indented"]
    c += ["a   b", "a \u00a0b", "a\u3000b", "a\u2003\u2003b", "\u00a0\u00a0x", "x\u2028y", "x\u2029y",
          "\u202f\u205f\u1680 ok", "\u2009thin", "a \u00a0 b"]
    # Tabs, \r\n, lone \r, newline runs.
    c += ["\tindented", "a\tb", "a\t\tb", "\t\t\tx", "x\t", "x\t\n", " \t x", "\t \n\t ", "col1\tcol2\tcol3\n",
          "\n", "\n\n", "\n\n\n", "\r\n", "\r\n\r\n", "\r", "a\rb", "a\r\nb", "a\n\nb", "a\n \nb", "a \n b",
          "a  \n  b", "a \r\n b", " \n \n ", "\n   ", "   \n", "\r\n  \r\n  x", "\x0b\x0cvt ff", "para one.\n\npara two.\n"]
    # Digits and numbers (ASCII and other \p{N}).
    c += ["1", "12", "123", "1234", "12345", "123456", "1234567", "1234567890", "12345678901234567890123",
          "3.14159", "1,000,000", "2024-12-01", "v1.2.3", "$100", "100%", " 42", "  42", "a1b2c3", "x=10**9",
          "1st 2nd 3rd 4th", "0x1F 0b1010", "-5 +5", "1e-10", "call 555-0199", "\u0663\u0664\u0665",
          "\u00b2\u00b3 squared", "\u216b o'clock", "\u00bd cup", "\u0968\u0966\u0968\u096a", "\uff11\uff12\uff13",
          "a 1 b 22 c 333 d 4444", "99 bottles", "7"]
    # Contractions, both cases and mixed.
    c += ["I'm", "I'M", "i'M", "don't", "DON'T", "Don'T", "they're", "they'Re", "THEY'RE", "we've", "WE'VE",
          "we'Ve", "you'll", "YOU'LL", "you'lL", "he'd", "HE'D", "it's", "IT'S", "It'S", "'s", "'S", "'",
          "''", "'''", "'re'", "rock 'n' roll", "O'Neil", "'tis", "'Twas", " 's", " 'S", "l'amour", "'ll've",
          "don''t", "can't've", "'x", "'1", "' s", "'\n", "x'y'z", "'RE", "'rE", "'Ll", "'LL", "'mM", "'D'd",
          "don\u2019t", "\u2018quoted\u2019", "ma'am", "Y'ALL'D'VE", "'ve'VE'Ve"]
    # Punctuation runs, symbols.
    c += ["!!!", "...", "?!?!", "--", "---\n", "--- \n", "(a)", "[1]", "{x}", "<|>", "a, b; c: d.",
          '"quoted"', "@user #tag", "!!!\n\n", " !!!\r\n", "...\n  next", "a.b.c", "...!!!???",
          "#include <stdio.h>", "=> -> <= >= != ==", "a+b=c", "50% off!!", "\u00a9 2024 \u2122", "\u00bfQu\u00e9?",
          "\u00a1Hola!", "\u2014em\u2013en\u2014", "\u00ab guillemets \u00bb", "$$$", " $", "~/path/to/file.txt",
          "https://example.com/a?b=c&d=e#f", "user@example.com", "\\n literal", "`code`", "***bold***",
          "|table|row|", "a||b&&c", "\u2026ellipsis", "\u3002\u3001\uff01", "\u2192 \u2190 \u21d2"]
    # Code with indentation.
    c += [
        "def f(x):\n    return x + 1\n",
        "def g(a, b):\n    if a:\n        return b\n    else:\n        return None\n",
        "int main(void) {\n\tprintf(\"hi\\n\");\n\treturn 0;\n}\n",
        "for (int i = 0; i < n; ++i) {\n        sum += a[i] * b[i];\n}",
        "{\n  \"key\": \"value\",\n  \"n\": 42,\n  \"list\": [1, 2, 3]\n}",
        "key:\n  - item one\n  - item two\n    nested: true\n",
        "#!/bin/sh\nset -e\nif [ -f x ]; then\n  echo \"yes\"\nfi\n",
        "<div class=\"a\">\n  <p>Text</p>\n</div>",
        "SELECT id, name FROM users WHERE age >= 18;",
        "    four spaces\n        eight spaces\n\tone tab\n",
        "x = [i**2 for i in range(10)]  # squares",
        "class A:\n\n    def __init__(self):\n        self.x = 0\n\n\n",
        "fn main() {\r\n    let v: Vec<u32> = vec![1, 2, 3];\r\n}\r\n",
        "    \n    \n",
        "if(x){y();}else{z();}",
    ]
    # CJK, other scripts.
    c += ["\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8", "\u4e2d\u6587\u6d4b\u8bd5\uff0c\u6807\u70b9\u3002",
          "\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8", "\u6771\u4eac2024\u5e74", "\u3053\u3093\u306b\u3061\u306f\u4e16\u754c",
          "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440!", "\u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac",
          "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645", "\u05e9\u05dc\u05d5\u05dd",
          "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e", "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35",
          "Stra\u00dfe \u00fcber \u00e9t\u00e9", "\u4f60\u597d world", "abc\u4e2d\u6587def", " \u4e2d", "  \u4e2d\u6587  ",
          "\u30ab\u30bf\u30ab\u30ca123", "\u1000\u103c\u102d\u102f\u1038"]
    # Emoji (incl. ZWJ sequences, skin tones, flags, keycaps, variation selectors).
    c += ["\U0001f642", "\U0001f44d\U0001f3fd", "\U0001f468\u200d\U0001f469\u200d\U0001f467", "\U0001f1fa\U0001f1f8",
          "a\U0001f642b", " \U0001f642 ", "\U0001f525\U0001f525\U0001f525", "I \u2764\ufe0f NY", "1\ufe0f\u20e3",
          "ok \U0001f44c!", "\U0001f600\n\U0001f600", "  \U0001f389 party", "\u263a", "\U0001f9d1\u200d\U0001f4bb code"]
    # Combining accents: NFD input that NFC changes, reordering, exclusions, singletons, Hangul jamo.
    c += ["e\u0301", "Cafe\u0301", "cafe\u0301 au lait", "n\u0303", "a\u0308\u0304", "a\u0301\u0323",
          "a\u0323\u0301", "Tie\u0302\u0301ng Vie\u0323\u0302t", "\u1100\u1161\u11a8", "\u1100\u1161",
          "\u1112\u1161\u11ab\u1100\u1173\u11af", "\u212b", "\u2126", "\u0344", "\u0958", "\u2adc", "\u0f73",
          "A\u030a", "o\u0308\u0301", "\u0301leading mark", " \u0301", "x\u0301\u0301\u0301", "e\u0301\u0302\u0303 done",
          "\u00e9 vs e\u0301", "\u1e9b\u0323", "q\u0307\u0323", "\u0915\u093c", "\u09c7\u09be", "\u0b47\u0b3e",
          "\u0cc6\u0cc2", "\u0dd9\u0dcf", "u\u0308\u0304 U\u0308\u0301", "i\u0307", "\u03b9\u0308\u0301"]
    # ChatML and other chat formats (special-token-looking text).
    c += [
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n"
        "<|im_start|>assistant\n",
        "<|im_start|>user\nWhat's 2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>\n",
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n",
        "<s>[INST] Tell me a joke. [/INST]", "<|endoftext|>", "text<|endoftext|>more", "<|im_end|>",
        "<|user|>\nhello</s>\n<|assistant|>\n", "< |im_start| >", "<|im_start|><|im_start|>", "<|not_a_token|>",
    ]
    # Prose.
    c += [
        "Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine.",
        "The quick brown fox jumps over the lazy dog.",
        "Hello, world! How's it going? I'm fine, thanks.",
        "It was 3:45 p.m. on Tuesday, March 5th, 2024 \u2014 and it's raining.",
        "  Leading and trailing  ",
        "Mixed\tCASE and   MULTIPLE    spaces\n\n\nand newlines.",
        "E=mc\u00b2 (Einstein, 1905).",
        "\"She said, 'No way!'\" he replied.",
    ]
    return c


def generated(seed, count):
    rnd = random.Random(seed)
    frags = ["the", "The", "WORD", "x", "na\u00efve", "\u00e9t\u00e9", "e\u0301", "\u4e2d\u6587", "\ud55c",
             "\U0001f642", "\U0001f44d\U0001f3fd", "0", "7", "42", "123456", "3.5", "\u0663", "\u00bd",
             "'s", "'S", "'re", "'RE", "'ll", "'LL", "'ve", "'d", "'M", "'t", "'T", "'", "''",
             " ", "  ", "   ", "    ", "        ", "\t", "\t\t", "\n", "\n\n", "\r\n", "\r", " \n", "\u00a0",
             "\u3000", ".", ",", "!!", "...", "?", "(", ")", "{", "}", "-", "--", "_", "#", "$", "@", "<|", "|>",
             "\u2014", "\u00bf", "\u0301", "\u0308", "\u200d", "\ufe0f", "\u2028"]
    out = []
    for _ in range(count):
        n = rnd.randint(1, 14)
        out.append("".join(rnd.choice(frags) for _ in range(n)))
    return out


def extra():
    """Strings with the characters kept out of the shared corpus (see the module doc)."""
    return ["a\u0085b", "a \u0085 b", "x\u0085", "\u0085\u0085word", "line\u0085\n", "\ufeffBOM", "a \ufeffb",
            "\ufeff", "  \ufeff", "it'\u017f", "IT'\u017f!", "'\u017f'\u017f", "don'\u017ft", "\u017f's",
            "a\u0085\u0085 b", "\u00a0\u0085\n x"]


def corpus():
    c = handwritten() + generated(20261201, 120)
    seen, out = set(), []
    for s in c:
        assert not (set(s) & EXCLUDED), s
        for ch in s:
            assert unicodedata.category(ch) != "Cn" or ch == "", hex(ord(ch))
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


def write_or_check(path, text, check, summary):
    """--check: the committed file must be `text`; else writes it and prints the summary."""
    if check:
        with open(path, encoding="utf-8") as f:
            if f.read() != text:
                print(f"{path} is out of date: rerun {os.path.basename(__file__)}", file=sys.stderr)
                return False
        return True
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"{path}: {summary}")
    return True


def write(path, strings, check):
    text = "".join(encode_line(s) + "\n" for s in strings)
    return write_or_check(path, text, check, f"{len(strings)} strings")


def nfc_inputs(strings):
    out = []
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF or 0xAC00 <= cp <= 0xD7A3:
            continue
        d = unicodedata.decomposition(chr(cp))
        if d and not d.startswith("<"):
            out.append(unicodedata.normalize("NFD", chr(cp)))
    out += [unicodedata.normalize("NFD", chr(cp)) for cp in range(0xAC00, 0xD7A4, 97)]
    out += strings
    rnd = random.Random(15)
    pool = ([cp for cp in range(0x300, 0x370)] + [0x323, 0x328, 0x31B, 0x345, 0x5B0, 0x93C, 0x94D, 0x3099, 0x309A]
            + [ord(c) for c in "aeouAOUnsSz"] + [0x1100, 0x1112, 0x1161, 0x1175, 0x11A8, 0x11C2, 0xAC00, 0xAC01]
            + [0x9C7, 0x9BE, 0x9D7, 0xB47, 0xB3E, 0x3B1, 0x3B9, 0x1F00, 0x212B, 0x0344, 0x0958, 0x2ADC])
    for _ in range(400):
        out.append("".join(chr(rnd.choice(pool)) for _ in range(rnd.randint(1, 10))))
    return out


def write_nfc(path, inputs, check):
    text = "".join(f"{encode_line(s)}\t{encode_line(unicodedata.normalize('NFC', s))}\n" for s in inputs)
    return write_or_check(path, text, check, f"{len(inputs)} cases (Unicode {unicodedata.unidata_version})")


UNICODE = "14.0.0"  # the unicodedata version the committed files were made with (runtime/text/unicode_data.inc's)


def main():
    check = "--check" in sys.argv[1:]
    if check and unicodedata.unidata_version != UNICODE:
        print(f"skipped: the files were made with Unicode {UNICODE}, this Python has {unicodedata.unidata_version}")
        return 77
    strings = corpus()
    ok = write(os.path.join(HERE, "tokenizer_corpus.txt"), strings, check)
    ok &= write(os.path.join(HERE, "pretokenize_extra_corpus.txt"), extra(), check)
    ok &= write_nfc(os.path.join(HERE, "nfc_expected.txt"), nfc_inputs(strings), check)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
