#!/usr/bin/env node
// wasm.threads (cmake/tests/wasm.cmake): the threaded build and the model loader in headless
// Chromium (playwright-core from NODE_PATH, as wasm/browser_test.js), served by wasm/serve.mjs.
//
//   node threads_test.js --www build/wasm-simd128-threads/www --models DIR
//        [--tokens N] [--load N] [--bench MODEL.mlb...]
//
// Cross-origin-isolated page (COOP/COEP from serve.mjs):
//   - crossOriginIsolated, loader.js pickVariant chooses simd128_threads, buildInfo says so;
//   - loadModel(URL) streams a .mlb with progress (bytes rise to the total, share 1), one GET;
//   - logits of 24 greedy steps are bit-identical at 1, 2, 3 and 4 threads (FNV-1a over the raw
//     float bytes of every step's logits), and equal again after the second load;
//   - the second load (cache: true) reads the Cache API entry: one HEAD, no new GET; cache 'prefer'
//     makes no request at all; the file changed (new mtime: new ETag/Last-Modified) is downloaded
//     again and its older entry deleted;
//   - a File (Blob) streams in and gives the same logits; a GGUF from a URL is converted as it
//     streams in (a stream handle, no file buffer) and opens, the stream let go at open;
//   - /__huge.mlb (5 GiB claimed) is refused with one line naming the 4 GiB limit, with no body
//     byte sent;
//   - wasm memory after loading a model = one copy: memory grows by less than file + KV + 64 MiB.
// A page without COOP/COEP: no SharedArrayBuffer, pickVariant chooses the single-thread build.
// --bench: decode tok/s of each MODEL at 1 and 2 threads, interleaved, medians (docs/bench.md), over
// --tokens steps (default 32), beside --load busy-loop processes (default 0; each `sh -c 'while :;
// do :; done'` in a session of its own, ordinary priority, unpinned: a busy program beside the page).
'use strict';
const {spawn} = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const argv = process.argv.slice(2);
const arg = (k, d) => (argv.includes(k) ? argv[argv.indexOf(k) + 1] : d);
const www = path.resolve(arg('--www', ''));
const models = path.resolve(arg('--models', path.join(www, 'models')));
const bench = argv.includes('--bench') ? argv.slice(argv.indexOf('--bench') + 1) : null;
const benchTokens = Number(arg('--tokens', '32'));
const load = Number(arg('--load', '0'));

let failures = 0;
function check(ok, what) {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures++;
}

function serve(dir, extra = []) {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [path.join(__dirname, 'serve.mjs'), dir, ...extra], {stdio: ['ignore', 'pipe', 'inherit']});
    p.stdout.on('data', (d) => {
      const m = /on (http:\/\/[^ ]+)/.exec(String(d));
      if (m) resolve({proc: p, url: m[1]});
    });
    p.on('exit', (c) => reject(new Error(`serve.mjs exited ${c}`)));
  });
}

// In the page: helpers the checks call through page.evaluate.
const PAGE_LIB = `
window.T = {};
T.init = async () => {
  const L = await import('/loader.js');
  const available = await (await fetch('/modules.json')).json();
  const pick = L.pickVariant({simd: true, isolated: crossOriginIsolated, available});
  T.L = L; T.pick = pick;
  if (pick.variant !== 'simd128_threads') return {pick, isolated: crossOriginIsolated, sab: typeof SharedArrayBuffer};
  const factory = (await import('/ml_web_' + pick.variant + '.mjs')).default;
  T.M = await factory({print: (s) => console.log(s), printErr: (s) => console.warn(s)});
  return {pick, isolated: crossOriginIsolated, sab: typeof SharedArrayBuffer, info: L.buildInfo(T.M, pick.variant),
          memory: T.M.HEAPU8.length};
};
T.load = async (url, cache) => {
  const ev = [];
  const h = await T.L.loadModel(T.M, url, {cache, onProgress: (e) => ev.push(e)});
  T.h = h;
  return {h: {...h}, n: ev.length, first: ev[0], last: ev[ev.length - 1],
          rising: ev.every((e, i) => i === 0 || e.loaded > ev[i - 1].loaded), memory: T.M.HEAPU8.length};
};
T.loadBlob = async (url) => {  // a File/Blob (a picked file): streamed from the Blob, phase 'memory'
  const ev = [];
  const blob = await (await fetch(url)).blob();
  T.h = await T.L.loadModel(T.M, new File([blob], 'picked.mlb'), {onProgress: (e) => ev.push(e)});
  return {h: {...T.h}, last: ev[ev.length - 1]};
};
T.fnv = (bytes, h) => { for (let i = 0; i < bytes.length; ++i) { h ^= bytes[i]; h = Math.imul(h, 16777619) >>> 0; } return h; };
// Greedy steps with ml_eval; FNV-1a of all logits' bytes and the tokens.
T.run = (threads, steps) => {
  const M = T.M;
  const ctx = T.L.openModel(M, T.h, {threads, maxSeq: Math.max(64, steps)});
  const info = JSON.parse(M.UTF8ToString(M._mlw_info_json(ctx)));
  const out = M._malloc(4);
  let tok = 1, h = 2166136261 >>> 0;
  const toks = [];
  const t0 = performance.now();
  for (let pos = 0; pos < steps; ++pos) {
    const st = M._ml_eval(ctx, tok, pos, out);
    if (st !== 0) { M._free(out); M._ml_close(ctx); return {error: M.UTF8ToString(M._ml_last_error())}; }
    const lp = M.HEAPU32[out >> 2];
    const logits = new Float32Array(M.HEAPU8.buffer, lp, info.vocab);
    h = T.fnv(new Uint8Array(M.HEAPU8.buffer, lp, info.vocab * 4), h);
    let best = 0;
    for (let i = 1; i < info.vocab; ++i) if (logits[i] > logits[best]) best = i;
    toks.push(best);
    tok = best;
  }
  const ms = performance.now() - t0;
  M._free(out);
  M._ml_close(ctx);
  return {hash: h, toks: toks.join(' '), n_threads: info.n_threads, format: info.format, ms, memory: M.HEAPU8.length,
          jsHeap: performance.memory ? performance.memory.usedJSHeapSize : 0};
};
T.uaMemory = async () => {  // the page's whole memory as Chromium counts it (isolated pages only)
  if (!performance.measureUserAgentSpecificMemory) return -1;
  const r = await Promise.race([performance.measureUserAgentSpecificMemory(), new Promise((ok) => setTimeout(() => ok(null), 60000))]);
  return r ? r.bytes : -1;
};
// wasm/ml.js's Model over a context openModel made (the npm engine's path), and over a MEMFS file.
T.modelApi = async () => {
  const {Model, writeFile} = await import('/ml.js');
  const m = new Model(T.M, T.L.openModel(T.M, T.h, {threads: 2}), null);
  const viaCtx = {vocab: m.info.vocab, n_threads: m.info.n_threads};
  m.close();
  const bytes = new Uint8Array(T.M.HEAPU8.buffer, T.h.ptr, T.h.bytes).slice();
  writeFile(T.M, '/models/m.mlb', bytes);
  const f = new Model(T.M, '/models/m.mlb', null);
  const viaFile = {vocab: f.info.vocab, n_threads: f.info.n_threads};
  f.close();
  return {viaCtx, viaFile};
};
T.free = () => T.L.freeModel(T.M, T.h);
T.fail = async (url) => {
  try { await T.L.loadModel(T.M, url, {cache: true}); return null; } catch (e) { return String(e.message); }
};
T.cacheKeys = async () => (await (await caches.open('legacy-ml-models')).keys()).map((r) => r.url);
`;

async function main() {
  let chromium;
  try {
    ({chromium} = require('playwright-core'));
  } catch (e) {
    console.log('playwright-core is not installed (NODE_PATH): run through wasm/browser_test.sh\'s npm folder');
    process.exit(1);
  }
  const www2 = fs.mkdtempSync(path.join(os.tmpdir(), 'ml-threads-'));
  // The served folder: www/ as built, plus the test models (copied so their mtime can change).
  for (const f of fs.readdirSync(www)) if (!fs.statSync(path.join(www, f)).isDirectory()) fs.copyFileSync(path.join(www, f), path.join(www2, f));
  fs.writeFileSync(path.join(www2, 'blank.html'), '<!doctype html><title>threads test</title>');
  fs.mkdirSync(path.join(www2, 'models'));
  const model = bench ? null : 'stories260K_q8_0.mlb';
  if (!bench) {
    fs.copyFileSync(path.join(models, model), path.join(www2, 'models', model));
    fs.copyFileSync(arg('--gguf', ''), path.join(www2, 'models', 'stories260K.gguf'));
  } else {
    for (const b of bench) fs.symlinkSync(path.resolve(b), path.join(www2, 'models', path.basename(b)));
  }
  const browser = await chromium.launch({executablePath: process.env.ML_CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
           '--disable-component-update', '--disable-sync', '--enable-precise-memory-info']});
  const isoServer = await serve(www2);
  const plainServer = await serve(www2, ['--no-isolation']);
  try {
    const page = await browser.newPage();
    page.on('console', (m) => { if (m.type() === 'error') console.log(`  [page] ${m.text()}`); });
    page.on('pageerror', (e) => console.log(`  [page error] ${e.message}`));
    await page.goto(isoServer.url + 'blank.html');
    await page.evaluate(PAGE_LIB);
    const init = await page.evaluate('T.init()');
    check(init.isolated === true && init.sab === 'function', `isolated page: crossOriginIsolated ${init.isolated}, SharedArrayBuffer ${init.sab}`);
    check(init.pick.variant === 'simd128_threads', `pickVariant: ${init.pick.variant} (${init.pick.reason})`);
    if (init.pick.variant !== 'simd128_threads') throw new Error('no threaded module');
    check(init.info.variant === 'simd128_threads' && init.info.maxThreads >= 5 && init.info.isolated,
          `buildInfo: ${JSON.stringify(init.info)}`);
    const counts = async () => (await (await fetch(isoServer.url + '__requests')).json());

    if (bench) {
      const busy = [];
      for (let i = 0; i < load; ++i) busy.push(spawn('sh', ['-c', 'while :; do :; done'], {detached: true, stdio: 'ignore'}));
      const stopBusy = () => busy.forEach((p) => { try { process.kill(-p.pid, 'SIGKILL'); } catch (e) { /* gone */ } });
      process.on('exit', stopBusy);
      if (load) console.log(`bench: ${load} busy-loop process(es) beside the page, ${benchTokens} tokens a run`);
      for (const b of bench) {
        const name = path.basename(b);
        const l = await page.evaluate(`T.load('/models/${name}', false)`);
        const rows = {1: [], 2: []};
        await page.evaluate('T.run(1, 4)');  // warm up
        for (let rep = 0; rep < 5; ++rep) for (const t of [1, 2]) {
          const r = await page.evaluate(`T.run(${t}, ${benchTokens})`);
          rows[t].push(benchTokens / (r.ms / 1000));
        }
        const med = (a) => a.slice().sort((x, y) => x - y)[a.length >> 1];
        const last = await page.evaluate('T.run(2, 4)');
        const ua = await page.evaluate('T.uaMemory()');
        console.log(`memory ${name}: file ${l.h.bytes} B, wasm memory ${last.memory} B, JS heap ${last.jsHeap} B, ` +
                    `measureUserAgentSpecificMemory ${ua} B`);
        console.log(`bench ${name}: file ${(l.h.bytes / 1048576).toFixed(1)} MiB, wasm memory ${(l.memory / 1048576).toFixed(1)} MiB; ` +
                    `decode tok/s 1 thread ${med(rows[1]).toFixed(1)} [${rows[1].map((x) => x.toFixed(1))}], ` +
                    `2 threads ${med(rows[2]).toFixed(1)} [${rows[2].map((x) => x.toFixed(1))}], ` +
                    `speedup ${(med(rows[2]) / med(rows[1])).toFixed(2)}x`);
        await page.evaluate('T.free()');
      }
      stopBusy();
      return;
    }

    const url = `/models/${model}`;
    const size = fs.statSync(path.join(www2, 'models', model)).size;
    const mem0 = init.memory;
    const l1 = await page.evaluate(`T.load('${url}', true)`);
    check(l1.h.bytes === size && !l1.h.fromCache && l1.h.format === 'mlb' && l1.h.ptr % 64 === 0,
          `first load: ${l1.h.bytes} bytes from the network, format ${l1.h.format}, buffer at ${l1.h.ptr}`);
    check(l1.n >= 1 && l1.rising && l1.last.loaded === size && l1.last.total === size && l1.last.share === 1 &&
          l1.last.phase === 'network', `progress: ${l1.n} events rising to ${JSON.stringify(l1.last)}`);
    let c = await counts();
    check(c[`GET ${url}`] === 1 && c[`bytes ${url}`] === size, `one GET of the model, ${c[`bytes ${url}`]} body bytes`);
    const runs = {};
    for (const t of [1, 2, 3, 4]) runs[t] = await page.evaluate(`T.run(${t}, 24)`);
    for (const t of [2, 3, 4])
      check(runs[t].n_threads === t && runs[t].hash === runs[1].hash && runs[t].toks === runs[1].toks,
            `${t} threads: logits FNV ${runs[t].hash} == 1 thread's ${runs[1].hash} (n_threads ${runs[t].n_threads})`);
    check(!runs[1].error && runs[1].toks.split(' ').length === 24, `greedy tokens: ${runs[1].toks.slice(0, 40)}...`);
    // One copy: the context reads the weights in the download buffer itself (bytes scribbled over
    // its last quarter change the logits), and the memory grew by less than file + 64 MiB.
    const grew = runs[4].memory - mem0;
    check(grew < size + 64 * 1048576, `wasm memory grew ${grew} bytes for a ${size}-byte model (< file + 64 MiB)`);
    const scribbled = await page.evaluate(`(() => { const b = T.h.ptr + (T.h.bytes >> 2) * 3; T.M.HEAPU8.fill(0x55, b, b + (T.h.bytes >> 3));
                                           return T.run(2, 24).hash; })()`);
    check(scribbled !== runs[1].hash, `the weights are used in place: scribbling over the buffer changes the logits (${scribbled})`);
    const api = await page.evaluate('T.modelApi()');
    check(api.viaCtx.vocab === 512 && api.viaCtx.n_threads === 2 && api.viaFile.vocab === 512 && api.viaFile.n_threads === 1,
          `ml.js Model over openModel's context and over a MEMFS file: ${JSON.stringify(api)}`);
    await page.evaluate('T.free()');

    const l2 = await page.evaluate(`T.load('${url}', true)`);
    c = await counts();
    check(l2.h.fromCache && l2.last.phase === 'cache' && l2.last.loaded === size && c[`GET ${url}`] === 1 &&
          c[`HEAD ${url}`] === 2 && c[`bytes ${url}`] === size,
          `second load from the Cache API: GET ${c[`GET ${url}`]}, HEAD ${c[`HEAD ${url}`]}, body bytes ${c[`bytes ${url}`]}`);
    const again = await page.evaluate('T.run(2, 24)');
    check(again.hash === runs[1].hash, `cached bytes give the same logits (FNV ${again.hash})`);
    await page.evaluate('T.free()');
    const l3 = await page.evaluate(`T.load('${url}', 'prefer')`);
    const c3 = await counts();
    check(l3.h.fromCache && c3[`GET ${url}`] === 1 && c3[`HEAD ${url}`] === 2, `cache 'prefer': no request (GET ${c3[`GET ${url}`]}, HEAD ${c3[`HEAD ${url}`]})`);
    await page.evaluate('T.free()');
    const future = new Date(Date.now() + 60000);
    fs.utimesSync(path.join(www2, 'models', model), future, future);  // a new version of the file
    const l4 = await page.evaluate(`T.load('${url}', true)`);
    const c4 = await counts();
    const keys = await page.evaluate('T.cacheKeys()');
    check(!l4.h.fromCache && c4[`GET ${url}`] === 2 && keys.filter((k) => k.includes(model)).length === 1,
          `changed file downloaded again (GET ${c4[`GET ${url}`]}), one cache entry left: ${keys.length} key(s)`);
    await page.evaluate('T.free()');

    const b = await page.evaluate(`T.loadBlob('${url}')`);
    const br = await page.evaluate('T.run(2, 24)');
    check(b.h.name === 'picked.mlb' && b.last.phase === 'memory' && b.last.loaded === size && br.hash === runs[1].hash,
          `a File: ${b.h.bytes} bytes streamed from the Blob (phase ${b.last.phase}), the same logits`);
    await page.evaluate('T.free()');

    const g = await page.evaluate(`T.load('/models/stories260K.gguf', false)`);
    check(g.h.format === 'gguf' && g.h.stream > 0 && g.h.ptr === 0,
          `GGUF from a URL: format ${g.h.format}, ${g.h.bytes} bytes converted as they streamed in (no file buffer)`);
    const gr = await page.evaluate('(() => { const r = T.run(2, 8); return {...r, freed: T.h.ptr === 0 && T.h.stream === 0}; })()');
    check(!gr.error && gr.toks.split(' ').length === 8 && gr.freed, `GGUF opened (${gr.toks}), its stream let go at open`);

    const huge = await page.evaluate(`T.fail('/__huge.mlb')`);
    const ch = await counts();
    check(huge !== null && /4 GiB/.test(huge) && !huge.includes('\n') && !(ch['bytes /__huge.mlb'] > 0),
          `5 GiB model refused: ${huge} (body bytes sent: ${ch['bytes /__huge.mlb'] || 0})`);
    const hugeNoCache = await page.evaluate(`(async () => { try { await T.L.loadModel(T.M, '/__huge.mlb', {cache: false}); return null; } catch (e) { return e.message; } })()`);
    const ch2 = await counts();
    check(hugeNoCache !== null && /4 GiB/.test(hugeNoCache) && (ch2['bytes /__huge.mlb'] || 0) < 64 * 1048576,
          `without the cache, refused from the GET's headers: ${(ch2['bytes /__huge.mlb'] || 0)} of 5 GiB sent`);

    const plain = await browser.newPage();
    await plain.goto(plainServer.url + 'blank.html');
    await plain.evaluate(PAGE_LIB);
    const p = await plain.evaluate('T.init()');
    check(p.isolated === false && p.sab === 'undefined' && p.pick.variant !== 'simd128_threads',
          `page without COOP/COEP: crossOriginIsolated ${p.isolated}, SharedArrayBuffer ${p.sab}, pickVariant ${p.pick.variant} (${p.pick.reason})`);
  } finally {
    await browser.close();
    isoServer.proc.kill();
    plainServer.proc.kill();
    fs.rmSync(www2, {recursive: true, force: true});
  }
}

main().then(() => {
  console.log(failures ? `${failures} check(s) failed` : 'all checks passed');
  process.exit(failures ? 1 : 0);
}, (e) => {
  console.log(`FAIL ${e.stack || e}`);
  process.exit(1);
});
