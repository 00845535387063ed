// wasm.npm, Chromium half (npm_test.sh): the installed package in a page, the engine in its Worker.
//   NODE_PATH=<playwright-core's node_modules> node browser_test.mjs --dir CONSUMER --out BUILD --ml-run ML_RUN
// CONSUMER holds node_modules/legacy-ml (installed from the tarball), page.html/page.js,
// stories260K.gguf, stories15m_q4_0.mlb and tokenizer.bin. Checks:
//   - createEngine from a URL runs in a Worker (engine.info.worker, a Worker target exists), picks
//     the simd128 build, reports load progress;
//   - greedy completion = native ml_run's text; a model passed as a Blob gives the same;
//   - chat (zephyr): two turns, the second reuses the KV cache, replies = native ml_run --chat;
//   - AbortSignal stops a stream at once;
//   - off the main thread: loading, a 100-token prompt (batched prefill) and 32 generated tokens
//     of a stories15M-shape Q4_0 model with no main-thread long task (> 50 ms) and the animation
//     drawing frames throughout (asserted when the machine is not overloaded: load average at most
//     its CPUs and a CPU-burning Worker alone causes no long task; printed otherwise); the control (the engine on the main thread) is seen by the
//     same observer, so the check can fail;
//   - unload ends the Worker (its memory goes with it) and further calls reject;
//   - a cross-origin-isolated page (wasm/serve.mjs: COOP/COEP): the engine runs the threaded build
//     (engine.info: build simd128_threads, threaded, threads = the browser's cores) and its greedy
//     text = native ml_run's; {threads: 1} there runs the single-thread simd128 build; the second
//     load of the same URL comes from the Cache API (no second GET of the file).
// Screenshot: BUILD/screenshot_npm_page.png.
import {spawn, execFileSync} from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import {createRequire} from 'node:module';
import path from 'node:path';
import {fileURLToPath} from 'node:url';

const require = createRequire(import.meta.url);
const a = {};
for (let i = 2; i < process.argv.length; i += 2) a[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
const dir = path.resolve(a.dir), out = path.resolve(a.out), mlRun = path.resolve(a['ml-run']);
let failures = 0;
function check(ok, what) {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures++;
}
const playwright = require('playwright-core');

function startServer() {
  return new Promise((resolve, reject) => {
    const p = spawn('python3', ['-u', '-m', 'http.server', '0', '--bind', '127.0.0.1', '--directory', dir], {stdio: ['ignore', 'pipe', 'pipe']});
    let buf = '';
    p.stdout.on('data', (d) => {
      buf += d;
      const m = /port (\d+)/.exec(buf);
      if (m) resolve({proc: p, base: `http://127.0.0.1:${m[1]}/`});
    });
    p.stderr.on('data', () => {});
    p.on('exit', (code) => reject(new Error(`http.server exited (${code}): ${buf}`)));
  });
}

// A cross-origin-isolated server (wasm/serve.mjs), which also counts requests.
function startIsolatedServer() {
  const serve = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'serve.mjs');
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [serve, dir], {stdio: ['ignore', 'pipe', 'inherit']});
    p.stdout.on('data', (d) => {
      const m = /on (http:\/\/[^ ]+)/.exec(String(d));
      if (m) resolve({proc: p, base: m[1]});
    });
    p.on('exit', (c) => reject(new Error(`serve.mjs exited ${c}`)));
  });
}

const gguf = path.join(dir, 'stories260K.gguf');
const run = (argv, input) => execFileSync(mlRun, argv, {encoding: 'utf8', input: input || '', stdio: ['pipe', 'pipe', 'ignore']});
const nativeGreedy = run([gguf, '-i', 'Once upon a time', '-n', '99', '--temp', '0']);  // 5 prompt positions - 1 + 95
const nativeChat = run([gguf, '--chat', '--chat-template', 'zephyr', '--temp', '0', '-n', '40', '--seed', '1'],
                       'Tell me a story\nWhat happened next?\n');

const server = await startServer();
const browser = await playwright.chromium.launch({
  executablePath: process.env.ML_CHROMIUM || '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync'],
});
try {
  const page = await (await browser.newContext({viewport: {width: 800, height: 300}})).newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(`${server.base}page.html`);
  await page.waitForFunction(() => window.ready === true, null, {timeout: 60000});

  // Loading, greedy text, the Blob path, chat with prefix reuse, abort.
  const r = await page.evaluate(async () => {
    const {createEngine} = window.t;
    const progress = [];
    const engine = await createEngine({model: 'stories260K.gguf', chat_template: 'zephyr', onProgress: (p) => progress.push(p)});
    const greedy = await engine.completions.create({prompt: 'Once upon a time', temperature: 0, max_tokens: 95});
    const blob = new Blob([await (await fetch('stories260K.gguf')).arrayBuffer()]);
    const e2 = await createEngine({model: blob});
    const viaBlob = await e2.completions.create({prompt: 'Once upon a time', temperature: 0, max_tokens: 95});
    await e2.unload();
    const messages = [{role: 'user', content: 'Tell me a story'}];
    const t1 = await engine.chat.completions.create({messages, temperature: 0, max_tokens: 40});
    messages.push(t1.choices[0].message, {role: 'user', content: 'What happened next?'});
    let t2 = '', usage = null;
    for await (const c of await engine.chat.completions.create({messages, temperature: 0, max_tokens: 40, stream: true,
                                                                 stream_options: {include_usage: true}})) {
      if (c.usage) usage = c.usage;
      else t2 += c.choices[0].delta.content;
    }
    const ac = new AbortController();
    let seen = 0, abortError = '';
    try {
      for await (const c of await engine.completions.create({prompt: 'Once', temperature: 0, max_tokens: 150, stream: true, signal: ac.signal}))
        if (++seen === 5) ac.abort();
    } catch (e) {
      abortError = e.name;
    }
    const after = await engine.completions.create({prompt: 'Once upon a time', temperature: 0, max_tokens: 95});
    const info = engine.info;
    await engine.unload();
    let unloaded = '';
    try {
      await engine.tokenize('x');
    } catch (e) {
      unloaded = e.message;
    }
    return {info, progress: progress.at(-1), nProgress: progress.length, greedy: greedy.choices[0].text, viaBlob: viaBlob.choices[0].text,
            t1: t1.choices[0].message.content, t1usage: t1.usage, t2, usage, seen, abortError, after: after.choices[0].text, unloaded};
  });
  check(r.info.worker === true && r.info.build === 'simd128' && r.info.threads === 1,
        `engine.info: worker ${r.info.worker}, build ${r.info.build}, threads ${r.info.threads}, chat ${r.info.chat_format}`);
  check(r.nProgress > 0 && r.progress.fraction === 1 && r.progress.loaded === fs.statSync(gguf).size, `onProgress: ${JSON.stringify(r.progress)}`);
  check('Once upon a time' + r.greedy + '\n' === nativeGreedy, 'greedy completion in the Worker = native ml_run');
  check(r.viaBlob === r.greedy, 'a Blob model gives the same text');
  check(nativeChat === `${r.t1}\n${r.t2}\n`, 'chat replies in the Worker = native ml_run --chat --chat-template zephyr');
  check(r.usage.prompt_tokens_details.cached_tokens >= r.t1usage.prompt_tokens,
        `chat turn 2 reuses ${r.usage.prompt_tokens_details.cached_tokens} of ${r.usage.prompt_tokens} prompt tokens`);
  check(r.abortError === 'AbortError' && r.seen === 5, `abort: ${r.abortError} after ${r.seen} chunks (aborted at 5)`);
  check(r.after === r.greedy, 'after the abort the engine gives the same text');
  check(r.unloaded.includes('unloaded'), `after unload: ${r.unloaded}`);

  // Off the main thread: long tasks and frames while a stories15M-shape model loads and runs.
  const prompt = 'Once upon a time, ' + 'there was a little girl who loved to play in the park with her dog and her friends. '.repeat(5);
  await page.waitForTimeout(300);
  const before = page.workers().length;
  const m = await page.evaluate(async (prompt) => {
    const {createEngine} = window.t;
    window.t.mark();
    const engine = await createEngine({model: 'stories15m_q4_0.mlb', tokenizer: 'tokenizer.bin'});
    const load = window.t.report();
    window.t.mark();
    let pieces = 0, usage = null;
    for await (const c of await engine.completions.create({prompt, max_tokens: 32, seed: 9, stream: true, stream_options: {include_usage: true}})) {
      if (c.usage) usage = c.usage;
      else pieces++;
    }
    const gen = window.t.report();
    const mem = await engine.memory();
    window.engine = engine;
    return {load, gen, pieces, usage, mem, info: engine.info};
  }, prompt);
  const during = page.workers().length;
  console.log(`      load: ${m.load.ms.toFixed(0)} ms, ${m.load.frames} frames; prompt ${m.usage.prompt_tokens} tokens + ${m.usage.completion_tokens} generated: ` +
              `${m.gen.ms.toFixed(0)} ms, ${m.gen.frames} frames; long tasks ${JSON.stringify([...m.load.longTasks, ...m.gen.longTasks])}; ` +
              `wasm memory ${(m.mem.wasm_memory_bytes / 1048576).toFixed(1)} MB`);
  check(m.usage.prompt_tokens >= 100 && m.usage.completion_tokens === 32, 'the long-task run: a 100+ token prompt and 32 generated tokens');
  const worst = (x) => Math.max(0, ...x.longTasks.map((e) => e.duration));
  // The reference: a Worker that only burns CPU as long as the engine ran. On a machine that is not
  // overloaded (load average at most its CPUs, the reference without long tasks) no main-thread
  // task may pass 50 ms. On an overloaded one (other jobs on the cores: the main thread misses its
  // slices even when a Worker never talks to it, as the reference shows) the numbers are printed
  // and not asserted; the control below is asserted either way.
  const ref = await page.evaluate(async (ms) => {
    window.t.mark();
    const w = new Worker('burn.js');
    await new Promise((r) => { w.onmessage = (e) => e.data.done !== undefined && r(); w.postMessage(ms); });
    w.terminate();
    return window.t.report();
  }, Math.round(m.load.ms + m.gen.ms));
  const engineWorst = Math.max(worst(m.load), worst(m.gen));
  const load = os.loadavg()[0], cpus = os.cpus().length;
  const busy = load > cpus || ref.longTasks.length > 0;  // other jobs take the cores: the main thread misses slices
  const bound = 50;
  console.log(`      machine: load average ${load.toFixed(1)} on ${cpus} CPUs${busy ? ': overloaded, the 50 ms check is reported, not asserted' : ''}`);
  console.log(`      reference (a CPU-burning Worker, ${ref.ms.toFixed(0)} ms): long tasks ${JSON.stringify(ref.longTasks.map((e) => Math.round(e.duration)))}`);
  const what = `main-thread tasks while loading, prefilling and generating: the longest ${engineWorst.toFixed(0)} ms (bound ${bound} ms)`;
  if (busy && engineWorst > bound) console.log(`NOTE ${what}: not asserted, the machine is overloaded (see the reference)`);
  else check(engineWorst <= bound, what);
  const fps = (x) => (x.frames * 1000) / x.ms;
  check(fps(m.gen) >= 10 && fps(m.load) >= 10, `the animation kept running (10 fps at least, 60 on an idle machine): ${fps(m.load).toFixed(0)} fps loading, ${fps(m.gen).toFixed(0)} fps generating`);
  await page.screenshot({path: path.join(out, 'screenshot_npm_page.png')});
  // The control: the same prompt with the engine on the page's thread ({worker: false}) must give a
  // long task over the bound (a prefill batch is one task there), so the check above can fail.
  const inline = await page.evaluate(async (prompt) => {
    const engine = await window.t.createEngine({model: 'stories15m_q4_0.mlb', tokenizer: 'tokenizer.bin', worker: false});
    window.t.mark();
    await engine.completions.create({prompt, max_tokens: 4, seed: 9});
    const rep = window.t.report();
    await engine.unload();
    return rep;
  }, prompt);
  check(worst(inline) > Math.max(bound, 2 * engineWorst),
        `control: the engine on the main thread gives a ${worst(inline).toFixed(0)} ms task (over 50 ms and twice the Worker run's longest), ` +
        `${fps(inline).toFixed(0)} fps`);

  // unload ends the Worker.
  await page.evaluate(() => window.engine.unload());
  await page.waitForTimeout(300);
  const afterUnload = page.workers().length;
  check(during === before + 1 && afterUnload === before, `Workers: ${before} before, ${during} with the engine, ${afterUnload} after unload`);
  check(errors.length === 0, `no page errors${errors.length ? ': ' + errors.join(' | ') : ''}`);

  // A cross-origin-isolated page: the threaded build.
  const iso = await startIsolatedServer();
  try {
    const p2 = await (await browser.newContext({viewport: {width: 800, height: 300}})).newPage();
    const errors2 = [];
    p2.on('pageerror', (e) => errors2.push(String(e)));
    p2.on('console', (m) => { if (m.type() === 'error') errors2.push(m.text()); });
    await p2.goto(`${iso.base}page.html`);
    await p2.waitForFunction(() => window.ready === true, null, {timeout: 60000});
    const t = await p2.evaluate(async () => {
      const {createEngine} = window.t;
      const engine = await createEngine({model: 'stories260K.gguf'});
      const greedy = await engine.completions.create({prompt: 'Once upon a time', temperature: 0, max_tokens: 95});
      const info = engine.info;
      await engine.unload();
      const one = await createEngine({model: 'stories260K.gguf', threads: 1});
      const oneText = (await one.completions.create({prompt: 'Once upon a time', temperature: 0, max_tokens: 95})).choices[0].text;
      const oneInfo = one.info;
      await one.unload();
      const requests = await (await fetch('/__requests')).json();
      return {isolated: crossOriginIsolated, cores: navigator.hardwareConcurrency, info, greedy: greedy.choices[0].text, oneText, oneInfo, requests};
    });
    const gets = t.requests['GET /stories260K.gguf'] || 0;
    check(t.isolated && t.info.build === 'simd128_threads' && t.info.threaded && t.info.isolated &&
          t.info.threads === Math.min(t.cores, 16) && t.info.threads_note === '',
          `isolated page: engine.info build ${t.info.build}, threaded ${t.info.threaded}, threads ${t.info.threads} (${t.cores} cores), ${t.info.build_reason}`);
    check('Once upon a time' + t.greedy + '\n' === nativeGreedy, `greedy completion with ${t.info.threads} threads = native ml_run`);
    check(t.oneInfo.build === 'simd128' && t.oneInfo.threads === 1 && t.oneText === t.greedy,
          `{threads: 1} on the isolated page: build ${t.oneInfo.build} (${t.oneInfo.build_reason}), the same text`);
    check(gets === 1 && t.oneInfo.model.from_cache === true,
          `the second load came from the Cache API: ${gets} GET of the file, from_cache ${t.oneInfo.model.from_cache}`);
    check(errors2.length === 0, `no page errors on the isolated page${errors2.length ? ': ' + errors2.join(' | ') : ''}`);
  } finally {
    iso.proc.kill();
  }
} finally {
  await browser.close();
  server.proc.kill();
}
console.log(failures ? `${failures} FAILED` : 'all passed');
process.exit(failures ? 1 : 0);
