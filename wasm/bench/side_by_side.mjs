// wasm/bench: legacy-ml's npm package against @wllama/wllama (llama.cpp in WebAssembly) in headless
// Chromium, side by side on the same GGUF files. Run by hand through side_by_side.sh, which
// prepares WWW; not a test.
//   NODE_PATH=<playwright-core's node_modules> node side_by_side.mjs --www WWW --models NAME=FILE=CTX,...
//       [--threads 1,2] [--engines legacy-ml,wllama] [--rounds 3] [--tokens 64] [--prompt-tokens 64]
//       [--ctx 0] [--kv f32|f16|q8_0] [--source url|file] [--json OUT.jsonl]
// WWW holds bench.html, bench.js, memhook.js, node_modules/legacy-ml (the installed package),
// wllama/ (@wllama/wllama) and the FILEs (paths relative to WWW); CTX: the model's context, which
// both engines open (legacy-ml max_seq, wllama n_ctx) unless --ctx N sets another; --kv: legacy-ml's
// KV cache (createEngine kv_cache; default f32; wllama keeps its default, F16). WWW is served
// cross-origin isolated by wasm/serve.mjs (COOP/COEP), so both engines may run threads. For each
// model x thread count, each engine gets a fresh browser context and page (bench.js: load,
// warm-up, then --rounds requests of a --prompt-tokens prompt and --tokens greedy tokens);
// afterwards the driver reads the bytes of every WebAssembly.Memory the engine's Worker made
// (memhook.js): the same method for both. Prints one markdown row per cell: median prompt and
// decode tok/s of each engine over the rounds, the wasm memory, and ours / wllama; the log
// (stderr) has each round, wllama's own timings and any note; --json writes the raw figures.
import {spawn} from 'node:child_process';
import fs from 'node:fs';
import {createRequire} from 'node:module';
import path from 'node:path';
import {fileURLToPath, pathToFileURL} from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const a = {threads: '1,2', engines: 'legacy-ml,wllama', rounds: '3', tokens: '64', 'prompt-tokens': '64', ctx: '0', kv: 'f32', source: 'url'};
for (let i = 2; i < process.argv.length; i += 2) {
  const k = process.argv[i].replace(/^--/, '');
  if (!(k in a) && !['www', 'models', 'json'].includes(k) || process.argv[i + 1] === undefined) {
    console.error(`side_by_side.mjs: unknown or incomplete option ${process.argv[i]}`);
    process.exit(2);
  }
  a[k] = process.argv[i + 1];
}
const www = path.resolve(a.www);
const models = a.models.split(',').map((m) => m.split('='));
const threadList = a.threads.split(',').map(Number);
const engines = a.engines.split(',');
const rounds = Number(a.rounds), tokens = Number(a.tokens), promptTokens = Number(a['prompt-tokens']), ctxOpt = Number(a.ctx);
if (!['url', 'file'].includes(a.source)) throw new Error(`--source: ${a.source}: url or file`);
for (const e of engines) if (!['legacy-ml', 'wllama'].includes(e)) throw new Error(`--engines: ${e}: legacy-ml or wllama`);
const say = (s) => process.stderr.write(`side_by_side: ${s}\n`);

// Prompts of exactly promptTokens tokens after BOS in the llama2 vocabulary (the GGUFs' tokenizer),
// made with legacy-ml's tokenizer in node; each round's starts with another word, so that no
// engine can reuse more than BOS of the previous request's KV cache.
const WORDS = ('Once upon a time there was a little girl named Lily who lived in a small house near the ' +
  'forest with her mother and her dog Max and every morning she walked to the river to watch the ' +
  'fish swim under the old wooden bridge while the birds sang in the tall green trees').split(' ');
const STARTS = ['Once', 'One', 'Yesterday', 'Tom', 'The', 'Long', 'Sam', 'Today', 'Anna', 'A'];
async function makePrompts(modelPath) {
  const {createEngine} = await import(pathToFileURL(path.join(www, 'node_modules/legacy-ml/index.js')).href);
  const e = await createEngine({model: modelPath, max_seq: 256});
  const out = [];
  for (let r = 0; r < rounds; r++) {
    const text = [STARTS[r % STARTS.length], ...WORDS.slice(r % 7), ...WORDS, ...WORDS].join(' ');
    const ids = await e.tokenize(text);
    const prompt = (await e.detokenize(ids.slice(1, 1 + promptTokens))).trim();
    const n = (await e.tokenize(prompt)).length - 1;
    if (n !== promptTokens) throw new Error(`prompt ${r}: ${n} tokens after BOS, not ${promptTokens}: ${JSON.stringify(prompt)}`);
    out.push(prompt);
  }
  await e.unload();
  return out;
}

function startServer() {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [path.join(here, '..', 'serve.mjs'), www], {stdio: ['ignore', 'pipe', 'inherit']});
    p.stdout.on('data', (d) => {
      const m = /on (http:\/\/[^ ]+)/.exec(String(d));
      if (m) resolve({proc: p, base: m[1]});
    });
    p.on('exit', (c) => reject(new Error(`serve.mjs exited ${c}`)));
  });
}

const median = (xs) => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((x, y) => x - y);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : NaN;
};

async function cell(browser, base, engine, file, threads, ctx) {
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
    say(`  [${engine}${m.type() === 'log' ? '' : ' ' + m.type()}] ${m.text()}`);
  });
  page.on('worker', (w) => w.on('console', (m) => say(`  [${engine} worker ${m.type()}] ${m.text()}`)));
  try {
    await page.goto(`${base}bench.html`);
    await page.waitForFunction(() => window.ready === true, null, {timeout: 60000});
    const r = await page.evaluate((o) => window.bench.run(o), {engine, model: file, source: a.source, threads, ctx, kv: a.kv,
                                                            prompts, maxTokens: tokens});
    // Every Worker the page started holds memhook.js's list; the pthreads' own workers (started by
    // those) do not, and one blocked in Atomics.wait never answers: 5 s each, then skipped.
    const mems = [];
    for (const w of page.workers()) {
      const m = await Promise.race([
        w.evaluate(() => (self.__wasmMemories ? self.__wasmMemories.map((x) => x.buffer.byteLength) : null)).catch(() => null),
        new Promise((r) => setTimeout(r, 5000, null))]);
      if (m) mems.push(...m);
    }
    r.wasm_bytes = mems.reduce((s, x) => s + x, 0);
    r.memories = mems;
    r.errors = errors;
    const notes = [];
    if (!r.isolated) notes.push('page not cross-origin isolated');
    if (r.info.threads !== threads) notes.push(`${r.info.threads} threads ran`);
    for (const [i, x] of r.rounds.entries()) {
      if (x.chunks !== tokens) notes.push(`round ${i}: ${x.chunks} chunks for ${tokens} tokens`);
      if (x.usage && x.usage.completion_tokens !== tokens) notes.push(`round ${i}: ${x.usage.completion_tokens} tokens generated`);
      x.prompt_tps = x.usage && x.usage.prompt_evaluated ? x.usage.prompt_evaluated / (x.prompt_ms / 1000) : NaN;
      x.decode_tps = x.chunks > 1 ? (x.chunks - 1) / (x.decode_ms / 1000) : NaN;
    }
    if (r.own_memory !== null && r.own_memory !== r.wasm_bytes) notes.push(`engine.memory() says ${r.own_memory} B`);
    r.notes = notes;
    r.prompt_tps = median(r.rounds.map((x) => x.prompt_tps));
    r.decode_tps = median(r.rounds.map((x) => x.decode_tps));
    r.prompt_evaluated = [...new Set(r.rounds.map((x) => x.usage && x.usage.prompt_evaluated))].join('/');
    return r;
  } catch (e) {
    return {error: String(e.message || e).split('\n')[0], errors};
  } finally {
    await context.close();
  }
}

const t0 = Date.now();
const firstModel = path.join(www, models.map(([, f]) => f).sort((x, y) => fs.statSync(path.join(www, x)).size - fs.statSync(path.join(www, y)).size)[0]);
const prompts = await makePrompts(firstModel);
const server = await startServer();
const playwright = require('playwright-core');
const browser = await playwright.chromium.launch({
  executablePath: process.env.ML_CHROMIUM || '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync'],
});
const json = a.json ? fs.createWriteStream(a.json) : null;
const f1 = (x) => (Number.isFinite(x) ? x.toFixed(1) : '—');
const ratio = (x, y) => (Number.isFinite(x) && Number.isFinite(y) && y > 0 ? `${(x / y).toFixed(2)}x` : '—');
const mib = (b) => (b ? (b / 1048576).toFixed(1) : '—');
const rows = [];
try {
  console.log(`\n${tokens} greedy tokens after a ${promptTokens}-token prompt${ctxOpt ? `, context ${ctxOpt}` : ''}, median of ${rounds} rounds; tok/s by wall time in the page ` +
              `(prompt: request to first token; decode: first to last token); wasm MiB: every WebAssembly.Memory of the engine's Worker after the run\n`);
  console.log('| model | threads | legacy-ml prompt tok/s | wllama prompt tok/s | ours/wllama | legacy-ml decode tok/s | wllama decode tok/s | ours/wllama | legacy-ml wasm MiB | wllama wasm MiB | ours/wllama |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const [name, file, modelCtx] of models) {
    const ctx = ctxOpt || Number(modelCtx);
    if (!(ctx > 0)) throw new Error(`--models ${name}: no context length (NAME=FILE=CTX)`);
    for (const threads of threadList) {
      const res = {};
      for (const engine of engines) {
        const c0 = Date.now();
        res[engine] = await cell(browser, server.base, engine, file, threads, ctx);
        const r = res[engine];
        say(`${name} ${threads} thread(s) ${engine}: ${((Date.now() - c0) / 1000).toFixed(0)} s` +
            (r.error ? `: FAILED ${r.error}` : `: ${JSON.stringify(r.info)}, load ${r.load_ms.toFixed(0)} ms, prompt tokens evaluated ${r.prompt_evaluated}, ` +
             `prompt ${r.rounds.map((x) => f1(x.prompt_tps)).join(' ')} tok/s, decode ${r.rounds.map((x) => f1(x.decode_tps)).join(' ')} tok/s, ` +
             `wasm ${r.memories.join(' + ')} B` + (r.rounds.some((x) => x.own) ? `, wllama's own timings ${r.rounds.map((x) => x.own && `${f1(x.own.prompt_per_second)}/${f1(x.own.predicted_per_second)}`).join(' ')}` : '') +
             (r.notes.length ? `; NOTE ${r.notes.join('; ')}` : '')) + (r.errors && r.errors.length ? `; page errors: ${r.errors.slice(0, 3).join(' | ')}` : ''));
        if (json) json.write(JSON.stringify({model: name, file, threads, engine, ...res[engine]}) + '\n');
      }
      const o = res['legacy-ml'] || {}, w = res.wllama || {};
      const mark = (r) => (r.error ? ' (failed)' : r.notes && r.notes.length ? ' *' : '');
      const row = `| ${name} | ${threads} | ${f1(o.prompt_tps)}${mark(o)} | ${f1(w.prompt_tps)}${mark(w)} | ${ratio(o.prompt_tps, w.prompt_tps)} | ` +
                  `${f1(o.decode_tps)} | ${f1(w.decode_tps)} | ${ratio(o.decode_tps, w.decode_tps)} | ` +
                  `${mib(o.wasm_bytes)} | ${mib(w.wasm_bytes)} | ${ratio(o.wasm_bytes, w.wasm_bytes)} |`;
      console.log(row);
      rows.push(row);
    }
  }
  console.log(`\n(* a note in the log above; ${((Date.now() - t0) / 1000).toFixed(0)} s in all)`);
} finally {
  await browser.close();
  server.proc.kill();
  if (json) json.end();
}
