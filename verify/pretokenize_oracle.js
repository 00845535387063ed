#!/usr/bin/env node
// The outside witness for runtime/text/pretokenize.cc: applies each family's pre-tokenizer regex, as its
// tokenizer.json states it, with node's own regular-expression engine (V8 irregexp, `u` flag:
// \p{L}, \p{N}, lookahead, backtracking) to the corpora in verify/data/ and writes the pieces.
//
//   node verify/pretokenize_oracle.js            print the expectations to stdout
//   node verify/pretokenize_oracle.js --write    write verify/data/pretokenize_expected.txt
//   node verify/pretokenize_oracle.js --check    exit 1 unless the committed file says the same
//                                                (lines starting with '#' are not compared)
//
// Output: one line per (corpus, string, family): `corpus<TAB>index<TAB>family<TAB>b1,b2,...`, the
// UTF-8 byte lengths of the pieces in order (they tile the string; the empty string has none).
// verify/tests/test_unicode.cc reads it and compares with ml::pretokenize.
//
// Two rewrites make JavaScript's engine run the regexes as Hugging Face tokenizers (Rust,
// Oniguruma) does; both are derived mechanically here, not written from our implementation:
//  - `\s` / `\S`: JavaScript's \s is WhiteSpace + LineTerminator (it has U+FEFF, lacks U+0085);
//    Oniguruma's \s in Unicode mode is U+0009-U+000D, U+0085 and Zs/Zl/Zp: the White_Space
//    property. Both are replaced by that explicit class.
//  - `(?i:...)`: node 20 has no inline modifiers; each letter becomes the class of every code point
//    that JavaScript's own /iu matching equates with it (for 's': s, S and U+017F LONG S, the same
//    simple case folding Oniguruma applies).
// smollm is HF Sequence[Digits(individual_digits: true), ByteLevel(use_regex: true)]: every \p{N}
// character (Rust char::is_numeric) is isolated first, then the gpt2 regex runs on the rest.
'use strict';
const fs = require('fs');
const path = require('path');

const DATA = path.join(__dirname, 'data');
const CORPORA = [['corpus', 'tokenizer_corpus.txt'], ['extra', 'pretokenize_extra_corpus.txt']];
const EXPECTED = path.join(DATA, 'pretokenize_expected.txt');

// The regexes exactly as the families' tokenizer.json files write them (docs/tokenizer-format.md).
const GPT2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const LLAMA3 = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|" +
               "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const QWEN2 = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|" +
              "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// Unicode White_Space (PropList.txt), as class contents.
const WHITE_SPACE = '\\t\\n\\v\\f\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';

// Every code point JavaScript's /iu matching equates with the letter, as class contents.
function caseClass(letter) {
  const re = new RegExp('^' + letter + '$', 'iu');
  let out = '';
  for (let cp = 0; cp <= 0x10ffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    if (re.test(String.fromCodePoint(cp))) out += '\\u{' + cp.toString(16) + '}';
  }
  return out;
}

// Rewrites a tokenizer.json regex (Oniguruma syntax, the subset these families use) for JS.
function toJs(src) {
  let out = '';
  let inClass = false;
  let fold = 0;  // > 0 inside (?i: ... ), counting open groups
  for (let i = 0; i < src.length; i++) {
    const c = src[i];
    if (c === '\\') {
      const e = src[i + 1];
      if (e === 's') out += inClass ? WHITE_SPACE : '[' + WHITE_SPACE + ']';
      else if (e === 'S') {
        if (inClass) throw new Error('\\S inside a class is not supported');
        out += '[^' + WHITE_SPACE + ']';
      } else if (e === 'p') {
        const close = src.indexOf('}', i);
        out += src.slice(i, close + 1);
        i = close;
        continue;
      } else out += c + e;
      i++;
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
      out += c;
      continue;
    }
    if (c === '[') { inClass = true; out += c; continue; }
    if (src.startsWith('(?i:', i)) {
      if (fold) throw new Error('nested (?i: is not supported');
      fold = 1;
      out += '(?:';
      i += 3;
      continue;
    }
    if (fold) {
      if (c === '(') fold++;
      if (c === ')') fold--;
      if (/[a-zA-Z]/.test(c)) { out += '[' + caseClass(c) + ']'; continue; }
    }
    out += c;
  }
  return out;
}

const RE = {
  gpt2: new RegExp(toJs(GPT2), 'gu'),
  llama3: new RegExp(toJs(LLAMA3), 'gu'),
  qwen2: new RegExp(toJs(QWEN2), 'gu'),
};

// The pieces of s under re; throws if the matches do not tile s (HF's Split would keep the gaps).
function splitRe(re, s) {
  const pieces = [];
  let at = 0;
  for (const m of s.matchAll(re)) {
    if (m.index !== at || m[0].length === 0) throw new Error('gap or empty match in ' + JSON.stringify(s));
    pieces.push(m[0]);
    at += m[0].length;
  }
  if (at !== s.length) throw new Error('unmatched tail in ' + JSON.stringify(s));
  return pieces;
}

function pieces(family, s) {
  if (family !== 'smollm') return splitRe(RE[family], s);
  const out = [];
  for (const part of s.split(/(\p{N})/u)) {
    if (part === '') continue;
    if (/^\p{N}$/u.test(part)) out.push(part);
    else out.push(...splitRe(RE.gpt2, part));
  }
  return out;
}

function readCorpus(file) {
  const text = fs.readFileSync(path.join(DATA, file), 'utf8');
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines.map((l) => JSON.parse(l));
}

function render() {
  const out = [
    `# Generated by verify/pretokenize_oracle.js (node ${process.version}, Unicode ${process.versions.unicode}): ` +
      'corpus, index, family, UTF-8 byte lengths of the pieces',
  ];
  for (const [name, file] of CORPORA) {
    readCorpus(file).forEach((s, k) => {
      for (const family of ['gpt2', 'llama3', 'qwen2', 'smollm']) {
        const lens = pieces(family, s).map((p) => Buffer.byteLength(p, 'utf8'));
        out.push(`${name}\t${k}\t${family}\t${lens.join(',')}`);
      }
    });
  }
  return out.join('\n') + '\n';
}

function main() {
  const arg = process.argv[2];
  const text = render();
  if (arg === '--write') {
    fs.writeFileSync(EXPECTED, text);
    console.log(`${EXPECTED}: ${text.split('\n').length - 2} lines`);
  } else if (arg === '--check') {
    const body = (t) => t.split('\n').filter((l) => !l.startsWith('#')).join('\n');
    if (body(fs.readFileSync(EXPECTED, 'utf8')) !== body(text)) {
      console.error(`${EXPECTED} differs from what node's regex engine gives: rerun with --write and review`);
      process.exit(1);
    }
    console.log('pretokenize_expected.txt agrees with node ' + process.version);
  } else {
    process.stdout.write(text);
  }
}

if (require.main === module) main();
module.exports = { pieces, readCorpus };
