#!/usr/bin/env python3
"""Writes runtime/text/unicode_data.inc: the Unicode tables of runtime/text/unicode.cc, from Python's unicodedata.

Usage: tools/gen_unicode.py [OUT]   (default: runtime/text/unicode_data.inc next to this script's repo)
       tools/gen_unicode.py --check  (exit 1 if the committed file differs from what this Python makes;
                                      77, skipped, when this Python's Unicode version is another)

Standard library only. The tables (all sorted, all searched by binary search in unicode.cc):
  kCategoryRuns   uint32 start << 3 | major class, one entry per run of equal class over
                  0..0x10FFFF (class numbers as ml::unicode::Category: 0 C, 1 L, 2 M, 3 N, 4 P, 5 S, 6 Z)
  kWhiteSpace     {first, last} ranges of the White_Space property (PropList.txt; unicodedata has no
                  such property, so the list is written here, below)
  kCccRuns        uint32 start << 8 | canonical combining class, one entry per run of equal class
  kNfcUnsafe      uint32 toggle points: code points in [t[2k], t[2k+1]) are NOT an NFC boundary, i.e.
                  have ccc != 0 or NFC_Quick_Check No/Maybe (a segment starting at a boundary can be
                  normalized independently of what precedes it)
  kDecomp         {cp, first, second} one step of the canonical decomposition (second = 0 for a
                  singleton); applied recursively in unicode.cc. Hangul syllables are algorithmic, not here.
  kComp           {first, second, composite} canonical pairs whose composite NFC produces (the pair's
                  composite is not a composition exclusion), sorted by (first, second). Hangul algorithmic.
"""
import os
import sys
import unicodedata

MAX_CP = 0x10FFFF
MAJOR = {"C": 0, "L": 1, "M": 2, "N": 3, "P": 4, "S": 5, "Z": 6}

# The White_Space property of PropList.txt (unchanged since Unicode 6.3).
WHITE_SPACE = [(0x0009, 0x000D), (0x0020, 0x0020), (0x0085, 0x0085), (0x00A0, 0x00A0), (0x1680, 0x1680),
               (0x2000, 0x200A), (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000)]

# Hangul syllables (Unicode chapter 3.12), handled by algorithm in unicode.cc.
S_BASE, S_COUNT = 0xAC00, 11172
V_BASE, V_COUNT = 0x1161, 21
T_BASE, T_COUNT = 0x11A7, 28


def is_hangul_syllable(cp):
    return S_BASE <= cp < S_BASE + S_COUNT


def canonical_mapping(cp):
    """One step of cp's canonical decomposition as a list of code points, or None."""
    d = unicodedata.decomposition(chr(cp))
    if not d or d.startswith("<"):
        return None
    return [int(x, 16) for x in d.split()]


def runs(values):
    """[(start, value)] for each run of equal value in values (indexed by code point)."""
    out = []
    prev = None
    for cp, v in enumerate(values):
        if v != prev:
            out.append((cp, v))
            prev = v
    return out


def build():
    cats = [MAJOR[unicodedata.category(chr(cp))[0]] for cp in range(MAX_CP + 1)]
    ccc = [unicodedata.combining(chr(cp)) for cp in range(MAX_CP + 1)]

    decomp = {}  # cp -> (first, second or 0)
    for cp in range(MAX_CP + 1):
        if is_hangul_syllable(cp) or 0xD800 <= cp <= 0xDFFF:
            continue
        m = canonical_mapping(cp)
        if m is None:
            continue
        assert 1 <= len(m) <= 2, (hex(cp), m)
        decomp[cp] = (m[0], m[1] if len(m) == 2 else 0)

    # Composition: a canonical pair whose composite NFC would produce. Derived, not read from
    # CompositionExclusions.txt: the composite is kept iff NFC(NFD(c)) == c.
    comp = []
    excluded = []
    for cp, (a, b) in decomp.items():
        if b == 0:
            continue  # singletons never compose
        c = chr(cp)
        if unicodedata.normalize("NFC", unicodedata.normalize("NFD", c)) == c:
            comp.append((a, b, cp))
        else:
            excluded.append(cp)
    comp.sort()
    assert len({(a, b) for a, b, _ in comp}) == len(comp)

    # NFC_Quick_Check: No = has a canonical decomposition and is not NFC-stable; Maybe = can be the
    # second of a composing pair (Hangul vowels and trailing consonants included).
    unsafe = [ccc[cp] != 0 for cp in range(MAX_CP + 1)]
    for cp in decomp:
        if unicodedata.normalize("NFC", chr(cp)) != chr(cp):
            unsafe[cp] = True
    for _, b, _ in comp:
        unsafe[b] = True
    for cp in list(range(V_BASE, V_BASE + V_COUNT)) + list(range(T_BASE + 1, T_BASE + T_COUNT)):
        unsafe[cp] = True
    assert not any(unsafe[:0x300]), "unicode.cc's fast path assumes every cp < U+0300 is an NFC boundary"
    # Cross-check against Python: a boundary (not unsafe) character is NFC-stable and has ccc 0.
    for cp in range(MAX_CP + 1):
        if not unsafe[cp] and not (0xD800 <= cp <= 0xDFFF):
            assert ccc[cp] == 0 and unicodedata.is_normalized("NFC", chr(cp)), hex(cp)

    toggles = [cp for cp in range(MAX_CP + 1) if unsafe[cp] != (unsafe[cp - 1] if cp else False)]
    return runs(cats), runs(ccc), toggles, sorted(decomp.items()), comp, excluded


def emit_u32_list(name, values, per_line=8):
    lines = [f"static constexpr uint32_t {name}[] = {{"]
    for k in range(0, len(values), per_line):
        lines.append("    " + ", ".join(f"0x{v:x}" for v in values[k:k + per_line]) + ",")
    lines.append("};")
    return lines


def render():
    cat_runs, ccc_runs, toggles, decomp, comp, excluded = build()
    out = [
        "// Generated by tools/gen_unicode.py from Python's unicodedata: do not edit; rerun the script.",
        f'#define ML_UNICODE_VERSION "{unicodedata.unidata_version}"',
        f"// Unicode {unicodedata.unidata_version}: {len(cat_runs)} category runs, {len(ccc_runs)} ccc runs, "
        f"{len(decomp)} canonical mappings,",
        f"// {len(comp)} composing pairs, {len(excluded)} pairs excluded from composition "
        "(NFC(NFD(c)) != c).",
        "",
        "// start << 3 | major class (ml::unicode::Category), one entry per run.",
    ]
    out += emit_u32_list("kCategoryRuns", [s << 3 | v for s, v in cat_runs])
    out.append("")
    out.append("// White_Space: {first, last}.")
    out.append("static constexpr uint32_t kWhiteSpace[][2] = {")
    out.append("    " + ", ".join(f"{{0x{a:x}, 0x{b:x}}}" for a, b in WHITE_SPACE) + ",")
    out.append("};")
    out.append("")
    out.append("// start << 8 | canonical combining class, one entry per run.")
    out += emit_u32_list("kCccRuns", [s << 8 | v for s, v in ccc_runs])
    out.append("")
    out.append("// Toggle points of 'not an NFC boundary' (ccc != 0 or NFC_QC No/Maybe); starts off.")
    out += emit_u32_list("kNfcUnsafe", toggles)
    out.append("")
    out.append("// One step of canonical decomposition: {cp, first, second (0: singleton)}, sorted by cp.")
    out.append("static constexpr uint32_t kDecomp[][3] = {")
    for k in range(0, len(decomp), 4):
        out.append("    " + " ".join(f"{{0x{cp:x}, 0x{a:x}, 0x{b:x}}}," for cp, (a, b) in decomp[k:k + 4]))
    out.append("};")
    out.append("")
    out.append("// Canonical composition: {first, second, composite}, sorted by (first, second).")
    out.append("static constexpr uint32_t kComp[][3] = {")
    for k in range(0, len(comp), 4):
        out.append("    " + " ".join(f"{{0x{a:x}, 0x{b:x}, 0x{c:x}}}," for a, b, c in comp[k:k + 4]))
    out.append("};")
    return "\n".join(out) + "\n"


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    args = sys.argv[1:]
    check = "--check" in args
    args = [a for a in args if a != "--check"]
    path = args[0] if args else os.path.join(root, "runtime", "text", "unicode_data.inc")
    text = render()
    if check:
        with open(path, encoding="utf-8") as f:
            committed = f.read()
        made_with = committed.split('ML_UNICODE_VERSION "', 1)[-1].split('"', 1)[0]
        if made_with != unicodedata.unidata_version:  # another Python: its tables would differ anyway
            print(f"skipped: {path} states Unicode {made_with}, this Python has {unicodedata.unidata_version}")
            return 77
        if committed != text:
            print(f"{path} differs from what tools/gen_unicode.py makes with Unicode "
                  f"{unicodedata.unidata_version}", file=sys.stderr)
            return 1
        return 0
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"{path}: Unicode {unicodedata.unidata_version}, {len(text)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
