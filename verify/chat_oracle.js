#!/usr/bin/env node
// The outside reference for runtime/text/chat.cc (chat_render; ml_chat_render in runtime/chat_api.cc): renders the real chat templates of
// verify/data/chat_templates.json with a real Jinja engine (@huggingface/jinja, as bundled in
// tools/npm's @lenml/tokenizers: apply_chat_template with trim_blocks and lstrip_blocks, as
// Hugging Face transformers renders) for every conversation there, with and without
// add_generation_prompt, and writes the results as verify/data/chat_expected.txt, which the
// Catch2 cases [chat] (verify/tests/test_chat.cc) compare ml::chat_render with byte for byte.
//
//   node verify/chat_oracle.js --write   (re)writes verify/data/chat_expected.txt
//   node verify/chat_oracle.js --check   renders again and fails when the committed file differs
//
// chat_expected.txt, one record per line, values escaped (\\ \n \r \t):
//   today DATE                      what strftime_now("%d %b %Y") returns (Llama 3.2's system block)
//   template NAME FORMAT            the template's expected format (chatml|zephyr|llama2|llama3|unknown)
//   vars BOS EOS                    bos_token and eos_token (escaped; "-" for an empty one)
//   source TEXT                     the Jinja source
//   case GEN N NAME                 add_generation_prompt 0|1, N messages follow, then the result
//   msg ROLE TEXT
//   want TEXT | error TEXT          the rendering, or the template's exception (raise_exception)
//   note TEXT                       before a want taken from the file's js_engine_differences: where
//                                   this engine differs from Python's jinja2, jinja2's text is expected
// Cases "case 2 ..." (templates with an enable_thinking switch: Qwen3): add_generation_prompt with
// enable_thinking = false. A template marked js_engine_fails in chat_templates.json (Qwen3's: this
// engine cannot parse it) must still fail here; its renderings are Python jinja2's
// (verify/chat_jinja2.py --print, run with python3), after a note line saying so.
// Exit 77 when tools/npm/node_modules is missing (tools/setup.sh --all installs it).
'use strict';
const fs = require('fs');
const path = require('path');

const NODE_MODULES = process.env.NODE_MODULES || path.join(__dirname, '..', 'tools', 'npm', 'node_modules');
const DATA = path.join(__dirname, 'data');

function die(msg, code) {
  process.stderr.write('chat_oracle.js: ' + msg + '\n');
  process.exit(code === undefined ? 1 : code);
}

function esc(s) {
  return s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/\r/g, '\\r').replace(/\t/g, '\\t');
}

function render() {
  const pkg = path.join(NODE_MODULES, '@lenml', 'tokenizer-llama3');
  if (!fs.existsSync(path.join(pkg, 'package.json'))) die(pkg + ' is not installed (tools/setup.sh --all)', 77);
  const tok = require(pkg).fromPreTrained();  // any tokenizer: only its template engine is used
  const doc = JSON.parse(fs.readFileSync(path.join(DATA, 'chat_templates.json'), 'utf8'));
  const out = ['# Written by verify/chat_oracle.js --write from verify/data/chat_templates.json: do not edit.',
               'today ' + esc(doc.today)];
  let rendered = 0;
  let jinja2 = null;  // verify/chat_jinja2.py --print rows, read once when a template needs them
  const jinja2Row = (name, conv, gen) => {
    if (jinja2 === null) {
      const { execFileSync } = require('child_process');
      const py = process.env.PYTHON || 'python3';
      jinja2 = execFileSync(py, [path.join(__dirname, 'chat_jinja2.py'), '--print'], { encoding: 'utf8' })
        .split('\n').filter((l) => l).map((l) => JSON.parse(l));
    }
    const row = jinja2.find((r) => r.template === name && r.conversation === conv && r.gen === gen);
    if (!row) die('chat_jinja2.py --print has no rendering of ' + name + ' / ' + conv + ' / ' + gen);
    return row;
  };
  for (const [name, t] of Object.entries(doc.templates)) {
    out.push('template ' + name + ' ' + t.format);
    out.push('vars ' + (t.bos ? esc(t.bos) : '-') + ' ' + (t.eos ? esc(t.eos) : '-'));
    out.push('source ' + esc(t.source));
    if (t.format === 'unknown') continue;  // only detection is checked
    for (const conv of doc.conversations) {
      for (const gen of t.source.includes('enable_thinking') ? [0, 1, 2] : [0, 1]) {
        out.push('case ' + gen + ' ' + conv.messages.length + ' ' + conv.name);
        const messages = conv.messages.map(([role, content]) => ({ role, content }));
        for (const m of messages) out.push('msg ' + m.role + ' ' + esc(m.content));
        const known = (doc.js_engine_differences || []).find((d) => d.template === name && d.conversation === conv.name);
        let text, failed = null;
        try {
          text = tok.apply_chat_template(messages, {
            tokenize: false, add_generation_prompt: gen >= 1, chat_template: t.source,
            bos_token: t.bos, eos_token: t.eos, strftime_now: () => doc.today,  // transformers' clock, fixed
            ...(gen === 2 ? { enable_thinking: false } : {}),
          });
        } catch (e) {
          failed = e;
        }
        if (t.js_engine_fails) {  // this engine cannot render the template: jinja2's text
          if (!failed) die('template ' + name + ' is marked js_engine_fails but @huggingface/jinja renders it now');
          const row = jinja2Row(name, conv.name, gen);
          out.push('note @huggingface/jinja fails (' + esc(String(failed.message || failed).split('\n')[0]) +
                   "); jinja2's rendering");
          if ('want' in row) {
            out.push('want ' + esc(row.want));
            ++rendered;
          } else {
            out.push('error ' + esc(row.error.split('\n')[0]));
          }
          continue;
        }
        try {
          if (failed) throw failed;
          if (known) {  // jinja2's text (transformers' engine) where this engine differs from it
            out.push('note @huggingface/jinja renders ' + esc(text) + ' here; jinja2: ' + esc(known.why));
            out.push('want ' + esc(known.want));
          } else {
            out.push('want ' + esc(text));
          }
          ++rendered;
        } catch (e) {
          out.push('error ' + esc(String(e.message || e).split('\n')[0]));
        }
      }
    }
  }
  if (rendered === 0) die('nothing was rendered');
  return out.join('\n') + '\n';
}

const mode = process.argv[2];
const file = path.join(DATA, 'chat_expected.txt');
if (mode === '--write') {
  fs.writeFileSync(file, render());
} else if (mode === '--check') {
  const now = render();
  const old = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  if (now !== old) {
    const a = old.split('\n'), b = now.split('\n');
    let i = 0;
    while (i < a.length && i < b.length && a[i] === b[i]) ++i;
    die('verify/data/chat_expected.txt differs from what the Jinja engine renders now, first at line ' + (i + 1) +
        ':\n  committed: ' + (a[i] || '').slice(0, 200) + '\n  rendered:  ' + (b[i] || '').slice(0, 200));
  }
  const lines = now.split('\n');
  process.stdout.write('chat_oracle.js: verify/data/chat_expected.txt is what @huggingface/jinja renders: ' +
                       lines.filter((l) => l.startsWith('want ')).length + ' renderings (' +
                       lines.filter((l) => l.startsWith('note ')).length + " of them jinja2's, where the engines differ)\n");
} else {
  die('usage: node verify/chat_oracle.js --write | --check', 2);
}
