// demo.html: a small chat over the npm package (wasm/package: index.js, the engine in a Worker).
// The page only talks to the engine (createEngine, engine.chat.completions.create with stream and
// an AbortSignal for Stop); the model comes from the served folder, a URL, or picked files, with a
// progress bar; the build and thread count the engine reports are shown.
// Completion mode: engine.completions.create with echo, the text the native ml_run prints for the
// same model, prompt, steps, temperature, top-p and seed (the page shows that command line).
// For the browser test (wasm/browser_test.js): #stats[data-state=done|error][data-prompt-tokens]
// [data-generated][data-steps]; #output holds the completion (ml_run's stdout without its final
// newline); #module[data-variant] the build; .msg.assistant the chat replies.
import {createEngine} from './index.js';

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(window.location.search);
let engine = null, engineKey = '';  // one engine at a time
let abort = null;
let messages = [];

function setStats(state, text, data = {}) {
  const s = $('stats');
  s.dataset.state = state;
  for (const [k, v] of Object.entries(data)) s.dataset[k] = String(v);
  s.innerHTML = text;
}

function mode() {
  return $('mode-completion').checked ? 'completion' : 'chat';
}

function showMode() {
  const c = mode() === 'completion';
  $('chat-view').hidden = c;
  $('completion-view').hidden = !c;
  $('completion-out').hidden = !c;
  $('cmd-box').hidden = !c;
  $('reset').hidden = c;
  $('generate').textContent = c ? 'Generate' : 'Send';
}

// What the model picker says: {key, model, tokenizer, label, cmdModel, cmdTok, served}.
function choice() {
  const v = $('model').value;
  if (v.startsWith('served:')) {
    const name = v.slice('served:'.length);
    return {key: v, model: `models/${name}`, tokenizer: 'models/tok512.bin', label: `${name} (served)`,
            cmdModel: `models/${name}`, cmdTok: 'models/tok512.bin', served: true};
  }
  if (v === 'url') {
    const url = $('model-url').value.trim(), tok = $('tokenizer-url').value.trim();
    if (!url) throw new Error('enter the model URL');
    return {key: `url:${url}:${tok}`, model: url, tokenizer: tok || undefined, label: url.split('/').pop(),
            cmdModel: url.split('/').pop(), cmdTok: tok.split('/').pop()};
  }
  const mf = $('model-file').files[0], tf = $('tokenizer-file').files[0];
  if (!mf) throw new Error('pick a model file (.gguf, or .mlb with its tokenizer)');
  const id = (f) => (f ? `${f.name}:${f.size}:${f.lastModified}` : '');
  return {key: `files:${id(mf)}:${id(tf)}`, model: mf, tokenizer: tf, label: `${mf.name} (your file)`,
          cmdModel: mf.name, cmdTok: tf ? tf.name : ''};
}

async function ensureEngine(c) {
  const template = $('template').value || (c.served ? 'zephyr' : undefined);
  const key = `${c.key}|${template || ''}|${params.get('module') || ''}`;
  if (engine && engineKey === key) return engine;
  if (engine) await engine.unload();
  engine = null;
  messages = [];
  $('messages').textContent = '';
  $('progress').value = 0;
  setStats('loading', `Loading ${c.label}…`);
  const build = params.get('module');
  engine = await createEngine({
    model: c.model, tokenizer: c.tokenizer, chat_template: template, model_id: c.label,
    build: build === 'simd128' || build === 'scalar' ? build : undefined,
    onProgress: (p) => {
      $('progress').value = p.fraction ?? 0;
      setStats('loading', `Loading ${c.label}: ${(p.loaded / 1048576).toFixed(1)} MB` +
               (p.total ? ` of ${(p.total / 1048576).toFixed(1)} MB` : '') + '…');
    },
  });
  engineKey = key;
  const i = engine.info, el = $('module');
  el.textContent = '';
  const b = document.createElement('b');
  b.textContent = `Build: ${i.build} · threads: ${i.threads}`;
  el.append(b, ` — ml_web_${i.build}.wasm (${i.isa}) in a ${i.worker ? 'Worker' : 'page thread'}; chosen because ${i.build_reason}` +
               (i.threads_note ? `; ${i.threads_note}` : '') + (i.chat_format ? `; chat format ${i.chat_format}` : ''));
  el.dataset.variant = i.build;
  el.dataset.isa = i.isa;
  el.dataset.threads = String(i.threads);
  return engine;
}

function shellQuote(s) {
  return /^[A-Za-z0-9_./:=,+-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

function sampling() {
  const max_tokens = Math.max(1, parseInt($('tokens').value, 10) || 1);
  const temperature = Number($('temp').value), top_p = Number($('topp').value), seed = Number($('seed').value);
  if (!(temperature >= 0) || !(top_p > 0 && top_p <= 1) || !(Number.isSafeInteger(seed) && seed >= 1))
    throw new Error('temperature must be ≥ 0, top-p in (0, 1], seed an integer ≥ 1');
  return {max_tokens, temperature, top_p, seed};
}

const tps = (n, ms) => (ms > 0 ? (n / ms * 1000).toFixed(1) : '–');

function bubble(role, text) {
  const d = document.createElement('div');
  d.className = `msg ${role}`;
  d.textContent = text;
  $('messages').append(d);
  d.scrollIntoView({block: 'nearest'});
  return d;
}

async function chatTurn(e, s) {
  const text = $('message').value.trim();
  if (!text) throw new Error('write a message');
  messages.push({role: 'user', content: text});
  bubble('user', text);
  $('message').value = '';
  const out = bubble('assistant', '');
  let reply = '', usage = null, first = 0;
  const t0 = performance.now();
  setStats('running', 'Reading the conversation…');
  try {
    for await (const chunk of await e.chat.completions.create({messages, stream: true, stream_options: {include_usage: true},
                                                                signal: abort.signal, ...s})) {
      if (chunk.usage) usage = chunk.usage;
      const piece = chunk.choices[0]?.delta.content ?? '';
      if (!piece) continue;
      if (!first) first = performance.now();
      reply += piece;
      out.textContent = reply;
      out.scrollIntoView({block: 'nearest'});
      setStats('running', `generating… <b>${reply.length}</b> characters`);
    }
  } catch (err) {
    if (err.name !== 'AbortError') throw err;
    out.classList.add('stopped');
  } finally {
    messages.push({role: 'assistant', content: reply});  // a stopped reply stays in the conversation
  }
  const t1 = performance.now();
  if (usage) {
    setStats('done', `prompt <b>${usage.prompt_tokens}</b> tokens (<b>${usage.prompt_tokens_details.cached_tokens}</b> kept from the last turn) · ` +
             `generated <b>${usage.completion_tokens}</b> tokens, <b>${tps(usage.completion_tokens, t1 - (first || t1))}</b> tok/s · ${engine.info.model.name}`,
             {promptTokens: usage.prompt_tokens, cachedTokens: usage.prompt_tokens_details.cached_tokens, generated: usage.completion_tokens});
  } else {
    setStats('done', `Stopped after ${((t1 - t0) / 1000).toFixed(1)} s.`, {generated: 0});
  }
}

async function completion(e, s, c) {
  const out = $('output');
  out.textContent = '';
  const prompt = $('prompt').value;
  const promptTokens = (await e.tokenize(prompt)).length;
  const steps = promptTokens - 1 + s.max_tokens;  // ml_run -n counts positions, the prompt's included
  $('cmd').textContent = `build/scalar/ml_run ${shellQuote(c.cmdModel)}${c.cmdTok ? ` -z ${shellQuote(c.cmdTok)}` : ''} -i ` +
                         `${shellQuote(prompt)} -n ${steps} --temp ${s.temperature} --top-p ${s.top_p} --seed ${s.seed}`;
  setStats('running', 'Reading the prompt…', {promptTokens, steps});
  let text = '', usage = null, first = 0, stopped = false;
  try {
    for await (const chunk of await e.completions.create({prompt, echo: true, stream: true, stream_options: {include_usage: true},
                                                          signal: abort.signal, ...s})) {
      if (chunk.usage) usage = chunk.usage;
      else {
        if (!first) first = performance.now();
        text += chunk.choices[0].text;
        out.textContent = text;
      }
    }
  } catch (err) {
    if (err.name !== 'AbortError') throw err;
    stopped = true;
  }
  const t1 = performance.now();
  const generated = usage ? usage.completion_tokens : 0;
  setStats('done', `${stopped ? 'Stopped. ' : ''}prompt <b>${promptTokens}</b> tokens · generated <b>${generated}</b> tokens, ` +
           `<b>${tps(generated, t1 - (first || t1))}</b> tok/s · ${c.label}, ${engine.info.model.n_layers} layers, dim ${engine.info.model.dim}`,
           {promptTokens, generated, steps});
}

async function run() {
  $('generate').disabled = true;
  $('stop').disabled = false;
  abort = new AbortController();
  try {
    const c = choice();
    const s = sampling();
    const e = await ensureEngine(c);
    if (mode() === 'chat') await chatTurn(e, s);
    else await completion(e, s, c);
  } catch (err) {
    setStats('error', '<span class="error"></span>');
    $('stats').firstChild.textContent = `Error: ${err.message}`;
  } finally {
    $('generate').disabled = false;
    $('stop').disabled = true;
  }
}

for (const id of ['model-file', 'tokenizer-file']) $(id).addEventListener('change', () => { $('model').value = 'files'; });
$('model-url').addEventListener('input', () => { $('model').value = 'url'; });
for (const id of ['mode-chat', 'mode-completion']) $(id).addEventListener('change', showMode);
$('form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  run();
});
$('message').addEventListener('keydown', (ev) => {
  if (ev.key === 'Enter' && !ev.shiftKey) {
    ev.preventDefault();
    if (!$('generate').disabled) run();
  }
});
$('stop').addEventListener('click', () => abort && abort.abort());
$('reset').addEventListener('click', () => {
  messages = [];
  $('messages').textContent = '';
  setStats('ready', 'New chat.');
});
showMode();
