#!/usr/bin/env python3
"""Byte-level BPE vocabularies (tools/mltk.py's Vocab) from the formats they come in, and back
(standard library only).

- `from_tokenizer_json(path)`, `from_hf_folder(folder)`: a Hugging Face `tokenizer.json` (with
  `tokenizer_config.json`, `generation_config.json`, `config.json`, `chat_template.jinja` beside
  it when present).
- `from_gpt2_files(encoder_json, vocab_bpe)`: OpenAI's GPT-2 `encoder.json` + `vocab.bpe`.
- `from_gguf_metadata(md, where)`: GGUF `tokenizer.ggml.model = "gpt2"` metadata (tools/gguf.py's
  parsed dict).
- `build(...)`: the Vocab of byte-level strings, which every importer ends in.
- `gguf_metadata(vocab)` / `to_tokenizer_json(vocab)`: the inverse, the GGUF metadata llama.cpp's
  converter would write and a tokenizer.json document (exports, and the tests' inputs).
- `BYTE_TO_CHAR` / `CHAR_TO_BYTE`, `unmap(s)` / `remap(b)`: GPT-2's byte <-> unicode table.

Anything the MLTK format cannot represent (another pre-tokenizer regex, a Unigram/WordPiece
model, byte_fallback, a normalizer other than NFC, a decoder other than ByteLevel, a
post-processor that appends tokens, ...) raises BpeError with one line naming it.

Facts used: GPT-2's byte-to-unicode table (printable bytes 33-126, 161-172, 174-255 stand for
themselves, the other 68 bytes map to U+0100 upwards in byte order); Hugging Face tokenizers'
tokenizer.json schema; llama.cpp's GGUF token types (1 normal, 2 unknown, 3 control, 4 user
defined, 5 unused, 6 byte) and its pre-tokenizer names (llama-bpe: ignore_merges and add_bos by
default).
"""
import json
import os

from bpe_pretokenize import (LLAMA3_REGEX, PRE_GPT2, PRE_LLAMA3, PRE_QWEN2, PRE_SMOLLM,
                             QWEN2_REGEX, SPLIT_REGEXES)
from mltk import (KIND_ABSENT, KIND_ADDED, KIND_NORMAL, KIND_SPECIAL, MAX_TOKENS, NORM_NFC,
                  NORM_NONE, BpeError, Vocab, show)

# GGUF tokenizer.ggml.pre names (llama.cpp) whose regex is one of ours.
GGUF_PRE = {"gpt-2": PRE_GPT2, "llama-bpe": PRE_LLAMA3, "llama3": PRE_LLAMA3,
            "llama-v3": PRE_LLAMA3, "qwen2": PRE_QWEN2, "smollm": PRE_SMOLLM}
GGUF_PRE_OUT = {PRE_GPT2: "gpt-2", PRE_LLAMA3: "llama-bpe", PRE_QWEN2: "qwen2",
                PRE_SMOLLM: "smollm"}
# GGUF token types
GT_NORMAL, GT_UNKNOWN, GT_CONTROL, GT_USER_DEFINED, GT_UNUSED, GT_BYTE = 1, 2, 3, 4, 5, 6

# End-of-turn tokens, in order of preference, when a tokenizer does not name one.
EOT_NAMES = ("<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<EOT>",
             "<end_of_utterance>")


# ------------------------------------------------------------------ GPT-2's byte <-> unicode

# The mutation audit (tools/mutants.sh): ML_PY_MUTANT=<name> switches on one deliberate bug of this
# module, as ML_MUTANT does in a -DML_MUTANTS=ON build of the C++ (kernels/mutants.h). Nothing else
# sets it; unset, every _mutant() is False.
def _mutant(name):
    return os.environ.get("ML_PY_MUTANT") == name


def _byte_chars():
    keep = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra + (1 if _mutant("bpe_byte_table") else 0))  # mutant: shifted by one
            extra += 1
    return table


BYTE_TO_CHAR = _byte_chars()
CHAR_TO_BYTE = {c: b for b, c in BYTE_TO_CHAR.items()}


def unmap(s):
    """Bytes of a byte-level vocabulary string, or None when a character is not in the table."""
    try:
        return bytes(CHAR_TO_BYTE[c] for c in s)
    except KeyError:
        return None


def remap(b):
    return "".join(BYTE_TO_CHAR[x] for x in b)


# --------------------------------------------------------------------- building a vocabulary

def _find_eot(content_ids, kinds):
    for name in EOT_NAMES:
        i = content_ids.get(name)
        if i is not None and kinds[i] == KIND_SPECIAL:
            return i
    return -1


def build(where, vocab, merges, added, pre, normalizer=NORM_NONE, add_bos=None,
          ignore_merges=False, bos=None, eos=None, eot=None, pad=None, stop_ids=(),
          template="", n_tokens=None):
    """A Vocab from byte-level strings.

    vocab: {byte-level string: id} (the BPE model's vocabulary); merges: [(left, right)] as
    byte-level strings; added: [(id, content, special)]; bos/eos/pad: a token content (str), an
    id (int) or None; stop_ids: ids that end generation (eos/eot among them are dropped)."""
    ids = {}
    for s, i in vocab.items():
        if not isinstance(s, str) or isinstance(i, bool) or not isinstance(i, int):
            raise BpeError("%s: vocabulary entry %s: %r is not a token id" % (where, show(str(s)), i))
        if not 0 <= i < MAX_TOKENS:
            raise BpeError("%s: vocabulary entry %s has id %d (outside [0, 2^24))"
                           % (where, show(s), i))
        if i in ids:
            raise BpeError("%s: id %d is given to %s and to %s" % (where, i, show(ids[i]), show(s)))
        ids[i] = s
    added_by_id = {}
    for i, content, special in added:
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < MAX_TOKENS:
            raise BpeError("%s: added token %s has id %r" % (where, show(str(content)), i))
        if not isinstance(content, str) or not content:
            raise BpeError("%s: added token %d has no content" % (where, i))
        if i in added_by_id and added_by_id[i][0] != content:
            raise BpeError("%s: added tokens %s and %s share id %d"
                           % (where, show(added_by_id[i][0]), show(content), i))
        if i in ids and ids[i] != content:
            raise BpeError("%s: added token %s has id %d, which the vocabulary gives to %s"
                           % (where, show(content), i, show(ids[i])))
        added_by_id[i] = (content, bool(special))
    n = max(list(ids) + list(added_by_id) + [-1]) + 1 if n_tokens is None else n_tokens
    if n == 0:
        raise BpeError("%s: the vocabulary is empty" % where)
    if n > MAX_TOKENS:
        raise BpeError("%s: %d tokens (the format holds at most 2^24)" % (where, n))
    tokens = [(KIND_ABSENT, b"")] * n
    for i, s in ids.items():
        if i >= n:
            raise BpeError("%s: token id %d is past the %d tokens" % (where, i, n))
        if i in added_by_id:
            continue
        b = unmap(s)
        if b is None:
            raise BpeError("%s: vocabulary entry %s (id %d) is not a byte-level string (a character "
                           "outside GPT-2's byte-to-unicode table)" % (where, show(s), i))
        if not b:
            raise BpeError("%s: vocabulary entry %d is empty" % (where, i))
        tokens[i] = (KIND_NORMAL, b)
    for i, (content, special) in added_by_id.items():
        if i >= n:
            raise BpeError("%s: added token id %d is past the %d tokens" % (where, i, n))
        tokens[i] = (KIND_SPECIAL if special else KIND_ADDED, content.encode("utf-8"))
    string_id = {s: i for i, s in ids.items()}
    out_merges = []
    seen = {}
    kinds = [k for k, _ in tokens]
    for r, (a, b) in enumerate(merges):
        ia, ib, ic = string_id.get(a), string_id.get(b), string_id.get(a + b)
        if ia is None or ib is None or ic is None or kinds[ia] or kinds[ib] or kinds[ic]:
            for s, x in ((a, ia), (b, ib), (a + b, ic)):
                if x is None:
                    raise BpeError("%s: merge %d (%s %s): %s is not in the vocabulary"
                                   % (where, r, show(a), show(b), show(s)))
                if kinds[x] != KIND_NORMAL:
                    raise BpeError("%s: merge %d (%s %s) involves the added token %s"
                                   % (where, r, show(a), show(b), show(s)))
        key = (ia, ib)
        if key in seen:  # Hugging Face keeps the later rank of a repeated merge
            out_merges[seen[key]] = None
        seen[key] = len(out_merges)
        out_merges.append((ia, ib, ic))
    out_merges = [m for m in out_merges if m is not None]

    content_ids = {}
    for i, (k, b) in enumerate(tokens):
        if k in (KIND_SPECIAL, KIND_ADDED):
            content_ids.setdefault(b.decode("utf-8"), i)

    def resolve(what, v):
        if v is None:
            return -1
        if isinstance(v, bool):
            raise BpeError("%s: %s token %r is not a token" % (where, what, v))
        if isinstance(v, int):
            if not 0 <= v < n:
                raise BpeError("%s: %s id %d is outside the %d tokens" % (where, what, v, n))
            return v
        if not isinstance(v, str):
            raise BpeError("%s: %s token %s is not a token" % (where, what, show(v)))
        if v in content_ids:
            return content_ids[v]
        if v in string_id:
            return string_id[v]
        raise BpeError("%s: %s token %s is not in the vocabulary" % (where, what, show(v)))

    bos_id, eos_id, pad_id = resolve("BOS", bos), resolve("EOS", eos), resolve("PAD", pad)
    kinds = [k for k, _ in tokens]
    eot_id = resolve("EOT", eot) if eot is not None else _find_eot(content_ids, kinds)
    stops = []
    for s in stop_ids:
        s = resolve("stop", s)
        if s not in (eos_id, eot_id) and s not in stops:
            stops.append(s)
    if add_bos and bos_id < 0:
        raise BpeError("%s: add_bos_token is true but there is no BOS token" % where)
    v = Vocab(tokens, out_merges, pre, normalizer, bool(add_bos), ignore_merges, bos_id, eos_id,
              eot_id, pad_id, stops, template)
    return v.validate(where)


# ------------------------------------------------------------------------- tokenizer.json

def _load_json(path, what=None):
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise BpeError("%s: no such file" % path)
    except IsADirectoryError:
        raise BpeError("%s: is a directory" % path)
    except OSError as e:
        raise BpeError("cannot read %s: %s" % (path, e.strerror or e))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BpeError("%s: not UTF-8 (byte %d)" % (path, e.start))
    if text.startswith("\ufeff"):
        text = text[1:]

    def no_constants(c):
        raise ValueError("%s is not JSON" % c)

    try:
        return json.loads(text, parse_constant=no_constants)
    except RecursionError:
        raise BpeError("%s: invalid JSON: nested too deeply" % path)
    except ValueError as e:
        raise BpeError("%s: invalid JSON%s: %s" % (path, " (%s)" % what if what else "",
                                                  str(e).splitlines()[0]))


def _obj(v, where, what):
    if not isinstance(v, dict):
        raise BpeError("%s: %s is not a JSON object" % (where, what))
    return v


def _type(v):
    return v.get("type") if isinstance(v, dict) else None


def _describe(node):
    """A short name of a tokenizer.json component: Split(regex ...), Sequence[A, B]."""
    if node is None:
        return "none"
    if not isinstance(node, dict):
        return "%s" % type(node).__name__
    t = node.get("type")
    if t == "Sequence":
        items = None
        for k in ("pretokenizers", "normalizers", "decoders", "processors"):
            if isinstance(node.get(k), list):
                items = node[k]
        if items is not None:
            return "Sequence[%s]" % ", ".join(_describe(x) for x in items)
    if t == "Split":
        pat = node.get("pattern")
        if isinstance(pat, dict) and "Regex" in pat:
            return "Split(regex %s)" % json.dumps(pat["Regex"], ensure_ascii=False)
        if isinstance(pat, dict) and "String" in pat:
            return "Split(string %s)" % json.dumps(pat["String"], ensure_ascii=False)
    if t == "ByteLevel":
        return "ByteLevel(add_prefix_space=%s, use_regex=%s)" % (
            json.dumps(node.get("add_prefix_space")), json.dumps(node.get("use_regex", True)))
    if t == "Digits":
        return "Digits(individual_digits=%s)" % json.dumps(node.get("individual_digits"))
    return str(t)


def _byte_level(node, use_regex):
    """A ByteLevel pre-tokenizer with add_prefix_space false and the given use_regex."""
    return (_type(node) == "ByteLevel" and node.get("add_prefix_space", False) is False
            and node.get("use_regex", True) is use_regex)


def pre_tokenizer_kind(pt, where):
    """Our pre-tokenizer kind for a tokenizer.json pre_tokenizer, or BpeError naming it."""
    items = pt.get("pretokenizers") if _type(pt) == "Sequence" else [pt]
    if isinstance(items, list):
        if len(items) == 1 and _byte_level(items[0], True):
            return PRE_GPT2
        if len(items) == 2 and _byte_level(items[1], False) and _type(items[0]) == "Split":
            sp = items[0]
            pat = sp.get("pattern")
            if (isinstance(pat, dict) and list(pat) == ["Regex"] and pat["Regex"] in SPLIT_REGEXES
                    and sp.get("behavior") == "Isolated" and sp.get("invert", False) is False):
                return SPLIT_REGEXES[pat["Regex"]]
        if (len(items) == 2 and _type(items[0]) == "Digits"
                and items[0].get("individual_digits") is True and _byte_level(items[1], True)):
            return PRE_SMOLLM
    raise BpeError("%s: pre-tokenizer %s is not one this runtime implements (GPT-2's ByteLevel, "
                   "Llama 3's or Qwen2's Split regex + ByteLevel, SmolLM2's Digits + ByteLevel)"
                   % (where, _describe(pt)))


def _normalizer(node, where):
    if node is None:
        return NORM_NONE
    items = node.get("normalizers") if _type(node) == "Sequence" else [node]
    if isinstance(items, list):
        types = [_type(x) for x in items]
        if types == []:
            return NORM_NONE
        if types == ["NFC"]:
            return NORM_NFC
    raise BpeError("%s: normalizer %s is not supported (none or NFC are)" % (where, _describe(node)))


def _decoder(node, where):
    items = node.get("decoders") if _type(node) == "Sequence" else [node]
    if isinstance(items, list) and len(items) == 1 and _type(items[0]) == "ByteLevel":
        return
    raise BpeError("%s: decoder %s is not supported (ByteLevel is)" % (where, _describe(node)))


def _post_processor(node, where):
    """BOS content that the post-processor puts first, or None."""
    if node is None:
        return None
    items = node.get("processors") if _type(node) == "Sequence" else [node]
    if not isinstance(items, list):
        raise BpeError("%s: post-processor %s is not supported" % (where, _describe(node)))
    bos = None
    for p in items:
        t = _type(p)
        if t == "ByteLevel":
            continue
        if t != "TemplateProcessing":
            raise BpeError("%s: post-processor %s is not supported (ByteLevel and TemplateProcessing "
                           "are)" % (where, _describe(node)))
        single = p.get("single")
        if not isinstance(single, list):
            raise BpeError("%s: TemplateProcessing without a 'single' template" % where)
        before, seen_a, after = [], False, []
        for item in single:
            if isinstance(item, dict) and "Sequence" in item:
                seen_a = True
            elif isinstance(item, dict) and isinstance(item.get("SpecialToken"), dict):
                (after if seen_a else before).append(item["SpecialToken"].get("id"))
            else:
                raise BpeError("%s: TemplateProcessing item %s is not understood"
                               % (where, json.dumps(item)[:80]))
        if after or len(before) > 1:
            raise BpeError("%s: post-processor TemplateProcessing adds %s; only one BOS token "
                           "before the text is supported"
                           % (where, ", ".join(map(str, before + ["$A"] + after))))
        if before:
            name = before[0]
            st = p.get("special_tokens")
            if isinstance(st, dict) and isinstance(st.get(name), dict):
                tids = st[name].get("ids")
                if isinstance(tids, list) and len(tids) == 1:
                    return tids[0]
            bos = name
    return bos


def _token_content(v):
    """A tokenizer_config token value: a string, an AddedToken dict, or None."""
    if isinstance(v, dict):
        v = v.get("content")
    return v if isinstance(v, str) else None


def _chat_template(cfg, folder):
    t = cfg.get("chat_template") if isinstance(cfg, dict) else None
    if isinstance(t, list):  # [{"name": ..., "template": ...}]
        named = {x.get("name"): x.get("template") for x in t if isinstance(x, dict)}
        t = named.get("default", next(iter(named.values()), None))
    if not isinstance(t, str) and folder:
        p = os.path.join(folder, "chat_template.jinja")
        if os.path.isfile(p):
            try:
                with open(p, "rb") as f:
                    t = f.read().decode("utf-8")
            except (OSError, UnicodeDecodeError) as e:
                raise BpeError("%s: cannot read: %s" % (p, e))
    return t if isinstance(t, str) else ""


def from_tokenizer_json(path, folder=None):
    """Vocab of a Hugging Face tokenizer.json; folder: where tokenizer_config.json,
    generation_config.json, config.json and chat_template.jinja are looked for (default: the
    file's own folder)."""
    if folder is None:
        folder = os.path.dirname(os.path.abspath(path))
    j = _obj(_load_json(path), path, "the document")
    where = path
    model = _obj(j.get("model"), where, "model")
    mt = model.get("type", "BPE" if "merges" in model else None)
    if mt != "BPE":
        what = {"Unigram": " (SentencePiece unigram)", "WordPiece": " (BERT)"}.get(mt, "")
        raise BpeError("%s: model type %s%s is not a byte-level BPE" % (where, mt, what))
    if model.get("byte_fallback"):
        raise BpeError("%s: a BPE model with byte_fallback (SentencePiece style, <0x..> byte "
                       "tokens) is not a byte-level BPE" % where)
    if model.get("dropout") not in (None, 0, 0.0):
        raise BpeError("%s: BPE dropout %r is not supported" % (where, model.get("dropout")))
    for k in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(k) not in (None, ""):
            raise BpeError("%s: BPE %s %r is not supported" % (where, k, model.get(k)))
    pt = j.get("pre_tokenizer")
    if not isinstance(pt, dict):
        raise BpeError("%s: pre-tokenizer %s is not one this runtime implements" % (where, _describe(pt)))
    pre = pre_tokenizer_kind(pt, where)
    norm = _normalizer(j.get("normalizer"), where)
    _decoder(j.get("decoder"), where)
    post_bos = _post_processor(j.get("post_processor"), where)
    vocab = model.get("vocab")
    if not isinstance(vocab, dict):
        raise BpeError("%s: model.vocab is not a JSON object" % where)
    raw_merges = model.get("merges", [])
    if not isinstance(raw_merges, list):
        raise BpeError("%s: model.merges is not a list" % where)
    merges = []
    for r, m in enumerate(raw_merges):
        parts = m.split(" ") if isinstance(m, str) else m
        if (not isinstance(parts, list) or len(parts) != 2 or type(parts[0]) is not str
                or type(parts[1]) is not str or not parts[0] or not parts[1]):
            raise BpeError("%s: merge %d %s is not two tokens" % (where, r, json.dumps(m)[:60]))
        merges.append((parts[0], parts[1]))
    added = []
    at = j.get("added_tokens", [])
    if not isinstance(at, list):
        raise BpeError("%s: added_tokens is not a list" % where)
    for t in at:
        if not isinstance(t, dict):
            raise BpeError("%s: an added token is not a JSON object" % where)
        content = t.get("content")
        for flag in ("lstrip", "rstrip", "single_word"):
            if t.get(flag):
                raise BpeError("%s: added token %s has %s = true (not supported)"
                               % (where, show(str(content)), flag))
        added.append((t.get("id"), content, t.get("special") is True))

    cfg, gen, conf = {}, {}, {}
    if folder:
        for name in ("tokenizer_config.json", "generation_config.json", "config.json"):
            p = os.path.join(folder, name)
            if os.path.isfile(p):
                d = _load_json(p)
                if not isinstance(d, dict):
                    raise BpeError("%s: not a JSON object" % p)
                {"tokenizer_config.json": cfg, "generation_config.json": gen,
                 "config.json": conf}[name].update(d)

    def pick(key, what):
        v = cfg.get(key + "_token")  # tokenizer_config: a string, an AddedToken, or null
        if v is not None:
            c = _token_content(v)
            if c is None:
                raise BpeError("%s: tokenizer_config.json %s_token %r is not a token"
                               % (folder, key, v))
            return c
        for d in (gen, conf):
            v = d.get(key + "_token_id")
            if isinstance(v, list):
                v = v[0] if v else None
            if v is not None:
                if isinstance(v, bool) or not isinstance(v, int):
                    raise BpeError("%s: %s_token_id %r is not an id" % (folder, key, v))
                return v
        return None

    bos = pick("bos", "BOS")
    if bos is None and post_bos is not None:
        bos = post_bos
    eos, pad = pick("eos", "EOS"), pick("pad", "PAD")
    if "add_bos_token" in cfg:
        add_bos = cfg["add_bos_token"]
        if not isinstance(add_bos, bool):
            raise BpeError("%s: tokenizer_config.json add_bos_token %r is not true/false"
                           % (folder, add_bos))
    else:
        add_bos = post_bos is not None
    if add_bos and post_bos is not None:
        bos = post_bos  # the token the post-processor actually puts first
    stops = []
    for d in (gen,):
        v = d.get("eos_token_id")
        for s in (v if isinstance(v, list) else [v] if v is not None else []):
            if isinstance(s, bool) or not isinstance(s, int):
                raise BpeError("%s: generation_config.json eos_token_id %r is not an id" % (folder, s))
            stops.append(s)
    if eos is None and stops:
        eos = stops[0]
    ignore = model.get("ignore_merges", False)
    if not isinstance(ignore, bool):
        raise BpeError("%s: model.ignore_merges %r is not true/false" % (where, ignore))
    return build(where, vocab, merges, added, pre, norm, add_bos, ignore, bos, eos, None, pad,
                 stops, _chat_template(cfg, folder))


def from_gpt2_files(encoder_json, vocab_bpe):
    """OpenAI's GPT-2 encoder.json ({byte-level string: id}) + vocab.bpe ("#version" line, then
    one merge "a b" per line): pre-tokenizer gpt2, <|endoftext|> special and BOS = EOS."""
    vocab = _load_json(encoder_json)
    if not isinstance(vocab, dict):
        raise BpeError("%s: not a JSON object" % encoder_json)
    try:
        with open(vocab_bpe, "rb") as f:
            text = f.read().decode("utf-8")
    except FileNotFoundError:
        raise BpeError("%s: no such file (encoder.json needs vocab.bpe beside it)" % vocab_bpe)
    except (OSError, UnicodeDecodeError) as e:
        raise BpeError("cannot read %s: %s" % (vocab_bpe, getattr(e, "strerror", None) or e))
    merges = []
    for ln, line in enumerate(text.split("\n")):
        line = line.rstrip("\r")
        if not line or (ln == 0 and line.startswith("#version")):
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not all(parts):
            raise BpeError("%s: line %d %s is not a merge (two tokens)" % (vocab_bpe, ln + 1, show(line)))
        merges.append((parts[0], parts[1]))
    eot = "<|endoftext|>"
    added = [(vocab[eot], eot, True)] if isinstance(vocab.get(eot), int) else []
    special = eot if added else None
    return build(encoder_json, vocab, merges, added, PRE_GPT2, bos=special, eos=special)


def from_hf_folder(folder):
    """Vocab of a folder: tokenizer.json (+ configs), or encoder.json + vocab.bpe."""
    p = os.path.join(folder, "tokenizer.json")
    if os.path.isfile(p):
        return from_tokenizer_json(p, folder)
    if os.path.isfile(os.path.join(folder, "encoder.json")):
        return from_gpt2_files(os.path.join(folder, "encoder.json"), os.path.join(folder, "vocab.bpe"))
    if os.path.isfile(os.path.join(folder, "tokenizer.model")):
        raise BpeError("%s: no tokenizer.json, only a SentencePiece tokenizer.model (not a "
                       "byte-level BPE)" % folder)
    raise BpeError("%s: no tokenizer.json (nor GPT-2's encoder.json + vocab.bpe)" % folder)


# ------------------------------------------------------------------------------------ GGUF

def from_gguf_metadata(md, where):
    """Vocab of GGUF tokenizer.ggml.* metadata with model "gpt2". md: {key: value} as
    tools/gguf.py parses it (string arrays as lists of bytes, numeric arrays as sequences)."""
    model = md.get("tokenizer.ggml.model")
    if model is None:
        raise BpeError("%s: the GGUF has no tokenizer (missing metadata key tokenizer.ggml.model)"
                       % where)
    if not isinstance(model, str) or model != "gpt2":
        raise BpeError("%s: tokenizer.ggml.model is '%s', not 'gpt2' (byte-level BPE)"
                       % (where, model))
    pre_name = md.get("tokenizer.ggml.pre")
    if pre_name is None:
        raise BpeError("%s: missing metadata key tokenizer.ggml.pre (which pre-tokenizer)" % where)
    if not isinstance(pre_name, str) or pre_name not in GGUF_PRE:
        raise BpeError("%s: tokenizer.ggml.pre '%s' is not a pre-tokenizer this runtime implements "
                       "(%s)" % (where, pre_name, ", ".join(sorted(GGUF_PRE))))
    pre = GGUF_PRE[pre_name]
    tokens = md.get("tokenizer.ggml.tokens")
    merges = md.get("tokenizer.ggml.merges")
    types = md.get("tokenizer.ggml.token_type")
    if not isinstance(tokens, list) or not tokens or not all(isinstance(t, bytes) for t in tokens):
        raise BpeError("%s: tokenizer.ggml.tokens is missing or not an array of strings" % where)
    if merges is None:
        merges = []
    if not isinstance(merges, list) or not all(isinstance(m, bytes) for m in merges):
        raise BpeError("%s: tokenizer.ggml.merges is not an array of strings" % where)
    n = len(tokens)
    if types is None:
        types = [GT_NORMAL] * n
    try:
        types = [int(t) for t in types]
    except (TypeError, ValueError):
        raise BpeError("%s: tokenizer.ggml.token_type is not an array of integers" % where)
    if len(types) != n:
        raise BpeError("%s: tokenizer.ggml.token_type has %d entries, tokenizer.ggml.tokens %d"
                       % (where, len(types), n))
    if n > MAX_TOKENS:
        raise BpeError("%s: %d tokens (the format holds at most 2^24)" % (where, n))
    vocab, added = {}, []
    for i, (t, tt) in enumerate(zip(tokens, types)):
        try:
            s = t.decode("utf-8")
        except UnicodeDecodeError:
            raise BpeError("%s: token %d is not UTF-8" % (where, i))
        if tt in (GT_NORMAL, GT_BYTE):
            if s in vocab:
                raise BpeError("%s: tokens %d and %d are both %s" % (where, vocab[s], i, show(s)))
            vocab[s] = i
        elif tt in (GT_CONTROL, GT_USER_DEFINED):
            added.append((i, s, tt == GT_CONTROL))
        elif tt in (GT_UNUSED, GT_UNKNOWN):
            pass  # no token (llama.cpp pads a larger model vocabulary with [PAD<i>] unused ones)
        else:
            raise BpeError("%s: token %d has token type %d" % (where, i, tt))
    pairs = []
    for r, m in enumerate(merges):
        try:
            parts = m.decode("utf-8").split(" ")
        except UnicodeDecodeError:
            raise BpeError("%s: merge %d is not UTF-8" % (where, r))
        if len(parts) != 2 or not all(parts):
            raise BpeError("%s: merge %d %s is not two tokens" % (where, r, show(m)))
        pairs.append((parts[0], parts[1]))

    def key_id(k):
        v = md.get(k)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, int):
            raise BpeError("%s: metadata %s = %r is not a token id" % (where, k, v))
        if not 0 <= v < n:
            raise BpeError("%s: metadata %s = %d is outside the %d tokens" % (where, k, v, n))
        return v

    def key_bool(k, default):
        v = md.get(k)
        if v is None:
            return default
        if not isinstance(v, bool):
            raise BpeError("%s: metadata %s = %r is not a bool" % (where, k, v))
        return v

    tmpl = md.get("tokenizer.chat_template", "")
    if not isinstance(tmpl, str):
        raise BpeError("%s: metadata tokenizer.chat_template is not a string" % where)
    llama3 = pre == PRE_LLAMA3  # llama.cpp: llama-bpe ignores merges and adds BOS by default
    eom = key_id("tokenizer.ggml.eom_token_id")
    # Qwen2's tokenizer.json declares NFC; GGUF has no normalizer key, so the family implies it
    norm = NORM_NFC if pre == PRE_QWEN2 else NORM_NONE
    ids = [key_id("tokenizer.ggml.%s_token_id" % k) for k in ("bos", "eos", "eot", "padding")]
    # llama.cpp pads the tokens to the model's vocabulary with unused [PAD<i>] entries: trailing
    # ones are left out (ids past n_tokens are absent anyway), so the file equals the one made
    # from the model's tokenizer.json
    used = [i for i in ids + [eom] if i is not None]
    n_keep = max([i for i, tt in enumerate(types) if tt not in (GT_UNUSED, GT_UNKNOWN)] + used + [-1]) + 1
    return build(where, vocab, pairs, added, pre, norm, key_bool("tokenizer.ggml.add_bos_token", llama3),
                 llama3, ids[0], ids[1], ids[2], ids[3], [eom] if eom is not None else [], tmpl,
                 n_tokens=max(n_keep, 1))


def gguf_metadata(v):
    """[(key, value)] of GGUF tokenizer metadata for Vocab v, as llama.cpp's converter writes it
    (normal tokens byte-level mapped, special/added tokens as their text, absent ids [PAD<i>])."""
    toks, types = [], []
    for i, (kind, b) in enumerate(v.tokens):
        if kind == KIND_NORMAL:
            toks.append(remap(b))
            types.append(GT_NORMAL)
        elif kind == KIND_ABSENT:
            toks.append("[PAD%d]" % i)
            types.append(GT_UNUSED)
        else:
            toks.append(b.decode("utf-8"))
            types.append(GT_CONTROL if kind == KIND_SPECIAL else GT_USER_DEFINED)
    md = [("tokenizer.ggml.model", "gpt2"), ("tokenizer.ggml.pre", GGUF_PRE_OUT[v.pre]),
          ("tokenizer.ggml.tokens", toks), ("tokenizer.ggml.token_type", types),
          ("tokenizer.ggml.merges", ["%s %s" % (remap(v.tokens[a][1]), remap(v.tokens[b][1]))
                                     for a, b, _ in v.merges])]
    for k, x in (("bos", v.bos), ("eos", v.eos), ("eot", v.eot), ("padding", v.pad)):
        if x >= 0:
            md.append(("tokenizer.ggml.%s_token_id" % k, x))
    md.append(("tokenizer.ggml.add_bos_token", v.add_bos))
    if v.template:
        md.append(("tokenizer.chat_template", v.template))
    return md


def to_tokenizer_json(v):
    """A Hugging Face tokenizer.json document (dict) for Vocab v (pre-tokenizers as the families
    spell them; used by the tests to write trained vocabularies)."""
    bl = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    if v.pre == PRE_GPT2:
        pt = bl
    elif v.pre == PRE_SMOLLM:
        pt = {"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True}, bl]}
    else:
        rx = LLAMA3_REGEX if v.pre == PRE_LLAMA3 else QWEN2_REGEX
        pt = {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": rx}, "behavior": "Isolated", "invert": False},
            dict(bl, use_regex=False, trim_offsets=False)]}
    added = [{"id": i, "content": b.decode("utf-8"), "single_word": False, "lstrip": False,
              "rstrip": False, "normalized": False, "special": k == KIND_SPECIAL}
             for i, (k, b) in enumerate(v.tokens) if k in (KIND_SPECIAL, KIND_ADDED)]
    vocab = {}
    for i, (k, b) in enumerate(v.tokens):
        if k == KIND_NORMAL:
            vocab[remap(b)] = i
        elif k in (KIND_SPECIAL, KIND_ADDED):
            vocab[b.decode("utf-8")] = i
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
            "normalizer": {"type": "NFC"} if v.normalizer == NORM_NFC else None,
            "pre_tokenizer": pt,
            "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                               "use_regex": True},
            "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                        "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": None,
                      "continuing_subword_prefix": None, "end_of_word_suffix": None,
                      "fuse_unk": False, "byte_fallback": False, "ignore_merges": v.ignore_merges,
                      "vocab": vocab,
                      "merges": [[remap(v.tokens[a][1]), remap(v.tokens[b][1])]
                                 for a, b, _ in v.merges]}}
