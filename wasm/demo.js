// demo.html: text generation in the browser through the public C API (wasm/ml.js): the session of
// runtime/ml.h, as native/ml_run.cc drives it: the prompt is encoded with BOS and prefilled in
// batches (its text echoed), then tokens are sampled until `new tokens` are generated, the context
// is full, or the model emits BOS. Same model, prompt, temperature, top-p and seed give ml_run's text byte for byte:
// the page prints the equivalent ml_run command line.
// For the browser test (wasm/browser_test.js): #stats[data-state=done][data-prompt-tokens]
// [data-generated][data-steps]; #output holds the text (ml_run's stdout without its final newline).
import {describeModule, fetchBytes, loadModule, Model, pageParams, writeFile} from './ml.js';

const $ = (id) => document.getElementById(id);
const params = pageParams();
let mod = null;          // the loaded module (loadModule)
const opened = new Map();  // model key -> {model: Model, label, cmdModel, cmdTok}
let stopRequested = false;

// Yields to the browser (paint, input) without setTimeout's 4 ms clamp.
const yieldToBrowser = () => new Promise((r) => {
  const ch = new MessageChannel();
  ch.port1.onmessage = () => r();
  ch.port2.postMessage(0);
});

function setStats(state, text, data = {}) {
  const s = $('stats');
  s.dataset.state = state;
  for (const [k, v] of Object.entries(data)) s.dataset[k] = String(v);
  s.innerHTML = text;
}

// Opens (once) the chosen model: served next to the page, or the two files the user picked.
async function openModel() {
  const choice = $('model').value;
  if (choice.startsWith('served:')) {
    const name = choice.slice('served:'.length);
    if (opened.has(choice)) return opened.get(choice);
    setStats('loading', `Fetching models/${name}…`);
    const [m, t] = await Promise.all([fetchBytes(`models/${name}`), fetchBytes('models/tok512.bin')]);
    const mp = writeFile(mod.M, `/served/${name}`, m), tp = writeFile(mod.M, '/served/tok512.bin', t);
    const model = new Model(mod.M, mp, tp);
    mod.M.FS.unlink(mp);  // ml_open read it into the module's memory (ML_MMAP=OFF)
    const entry = {model, label: `${name} (served)`, cmdModel: `models/${name}`, cmdTok: 'models/tok512.bin'};
    opened.set(choice, entry);
    return entry;
  }
  const mf = $('model-file').files[0], tf = $('tokenizer-file').files[0];
  if (!mf || !tf) throw new Error('pick both a .mlb model file and its tokenizer.bin');
  const key = `files:${mf.name}:${mf.size}:${mf.lastModified}:${tf.name}:${tf.size}:${tf.lastModified}`;
  if (opened.has(key)) return opened.get(key);
  for (const [k, e] of opened) if (k.startsWith('files:')) { e.model.close(); opened.delete(k); }  // one user model at a time
  setStats('loading', `Reading ${mf.name} (${(mf.size / 1048576).toFixed(1)} MB)…`);
  const mp = writeFile(mod.M, `/user/${mf.name}`, new Uint8Array(await mf.arrayBuffer()));
  const tp = writeFile(mod.M, `/user/${tf.name}`, new Uint8Array(await tf.arrayBuffer()));
  let model;
  try {
    model = new Model(mod.M, mp, tp);
  } finally {
    mod.M.FS.unlink(mp);
    mod.M.FS.unlink(tp);
  }
  const entry = {model, label: `${mf.name} (your file)`, cmdModel: mf.name, cmdTok: tf.name};
  opened.set(key, entry);
  return entry;
}

function shellQuote(s) {
  return /^[A-Za-z0-9_./:=,+-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

async function generate() {
  const out = $('output');
  out.textContent = '';
  stopRequested = false;
  $('generate').disabled = true;
  $('stop').disabled = false;
  try {
    const entry = await openModel();
    const model = entry.model;
    const promptText = $('prompt').value;
    const newTokens = Math.max(1, parseInt($('tokens').value, 10) || 1);
    const temp = Number($('temp').value), topp = Number($('topp').value), seed = Number($('seed').value);
    if (!(temp >= 0) || !(topp > 0 && topp <= 1) || !(Number.isSafeInteger(seed) && seed >= 1))
      throw new Error('temperature must be ≥ 0, top-p in (0, 1], seed an integer ≥ 1');
    const prompt = model.encode(promptText, true);
    const info = model.info, bos = info.bos_id ?? 1, stops = new Set(info.stop_ids || []);
    if (prompt.length === 0) {  // byte-level without BOS: start from EOS, as ml_run
      if (info.eos_id === undefined || info.eos_id < 0) throw new Error('empty prompt and no BOS or EOS to start from');
      prompt.push(info.eos_id);
    }
    if (prompt.length > model.info.max_seq)
      throw new Error(`the prompt is ${prompt.length} tokens but the context holds ${model.info.max_seq} positions`);
    // Positions to run, as ml_run -n: the last prompt position already samples the first new token.
    const steps = Math.min(prompt.length - 1 + newTokens, model.info.max_seq);
    $('cmd').textContent = `build/scalar/ml_run ${shellQuote(entry.cmdModel)} -z ${shellQuote(entry.cmdTok)} -i ` +
                           `${shellQuote(promptText)} -n ${steps} --temp ${temp} --top-p ${topp} --seed ${seed}`;
    setStats('running', `Generating with ${entry.label}…`, {promptTokens: prompt.length, steps});

    // ml_run's run.c semantics: a BOS inside the prompt ends it (before it is fed), `steps`
    // positions at most (the last prompt position samples the first new token); a sampled BOS (and
    // for byte-level tokenizers an EOS, EOT or stop id) ends the text; their first prompt token is
    // text when it is not BOS.
    let stop = prompt.length;
    for (let j = 1; j < prompt.length; ++j) if (prompt[j] === bos) { stop = j; break; }
    const nPre = Math.min(steps, stop);
    const stopIds = bos >= 0 ? [bos, ...stops] : [...stops];
    model.start(prompt.slice(0, nPre), {temperature: temp, topp, seed, maxTokens: steps - nPre + 1, stopIds});
    let text = '', pos = 0, generated = 0;
    if (info.tok_kind === 1 && prompt[0] !== bos && !stops.has(prompt[0])) text += model.echo(-1, prompt[0]);
    const tStart = performance.now();
    let tPromptEnd = tStart, lastYield = tStart;
    const show = async () => {  // stream: show the text so far, keep the page responsive
      const now = performance.now();
      if (now - lastYield <= 30) return;
      out.textContent = text;
      const secs = (now - tPromptEnd) / 1000;
      setStats('running', `generated <b>${generated}</b> tokens, <b>${secs > 0 ? (generated / secs).toFixed(1) : '–'}</b> tok/s…`);
      await yieldToBrowser();
      lastYield = performance.now();
    };
    while (pos < nPre && !stopRequested) {  // prefill, in batches
      const n = model.prefill();
      for (let t = 0; t < n; ++t) if (pos + t + 1 < stop) text += model.echo(prompt[pos + t], prompt[pos + t + 1]);
      pos += n;
      await show();
    }
    tPromptEnd = performance.now();
    let finish = nPre === prompt.length && stop === prompt.length ? 0 : 3;
    while (finish === 0 && !stopRequested) {  // decode
      const r = model.next();
      ++generated;
      text += r.text;
      finish = r.finish;
      await show();
    }
    const tEnd = performance.now();
    out.textContent = text;
    const promptPos = Math.min(pos, prompt.length);
    const promptMs = (pos >= prompt.length ? tPromptEnd : tEnd) - tStart;
    const genMs = tEnd - (pos >= prompt.length ? tPromptEnd : tEnd);
    const tps = (n, ms) => (ms > 0 ? (n / ms * 1000).toFixed(1) : '–');
    setStats('done',
      `${stopRequested ? 'Stopped. ' : ''}prompt <b>${promptPos}</b> tokens, ${tps(promptPos, promptMs)} tok/s · ` +
      `generated <b>${generated}</b> tokens, <b>${tps(generated, genMs)}</b> tok/s · ${entry.label}, ` +
      `${model.info.n_layers} layers, dim ${model.info.dim}, ${mod.build.isa} build`,
      {promptTokens: prompt.length, generated, steps, tokPerSec: tps(generated, genMs)});
  } catch (e) {
    setStats('error', `<span class="error"></span>`);
    $('stats').firstChild.textContent = `Error: ${e.message}`;
  } finally {
    $('generate').disabled = false;
    $('stop').disabled = true;
  }
}

async function main() {
  try {
    mod = await loadModule({force: params.get('module') || ''});
  } catch (e) {
    $('module').textContent = `Could not load the WebAssembly module: ${e.message}`;
    setStats('error', 'No module.');
    return;
  }
  const el = $('module');
  el.textContent = '';
  const b = document.createElement('b');
  b.textContent = `Module: ${mod.variant}`;
  el.append(b, ` — ${describeModule(mod)}`);
  el.dataset.variant = mod.variant;
  el.dataset.isa = mod.build.isa;
  for (const id of ['model-file', 'tokenizer-file'])
    $(id).addEventListener('change', () => { $('model').value = 'files'; });
  $('form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    generate();
  });
  $('stop').addEventListener('click', () => { stopRequested = true; });
  $('generate').disabled = false;
  setStats('ready', 'Ready. Pick a model and press Generate.');
}

main();
