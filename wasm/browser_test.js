#!/usr/bin/env node
// Browser test of the WebAssembly pages in real headless Chromium (Debian's /usr/bin/chromium, driven
// by playwright-core). Run by CTest (cmake/tests/wasm.cmake) with NODE_PATH pointing at the
// node_modules that `npm ci` installed from wasm/package.json into the build folder.
//
//   node browser_test.js --www build/<preset>/www --ml-run build/scalar/ml_run --out build/<preset>
//                        --expect simd128|scalar [--scalar-too] [--threads-too]
//
// 1. Serves --www on 127.0.0.1 (python3 -m http.server, a free port).
// 2. verify.html: the summary reports every check passed, the module the browser should pick
//    (--expect) was loaded, every kernel binding and the three end-to-end models have passing rows.
//    verify.html?tol_scale=1e-9 (a deliberately wrong tolerance) must report failures.
// 3. demo.html: 64 new tokens, seeded sampling (Q8_0), greedy (Q4_0), and a .mlb + tokenizer
//    picked through the file inputs (Q8_0, another prompt and seed), and a random Q8_0 model (vocab 320)
//    with a byte-level BPE tokenizer (MLTK, 315 tokens) picked through the file inputs, greedy, with
//    multi-byte characters in the prompt (both written into www/models by browser_test.sh): each text
//    equals the native scalar build's (--ml-run) stdout for the same model, tokenizer, prompt, steps,
//    temperature, top-p and seed.
// 4. --scalar-too (the simd128 folder also serves the scalar build): verify.html?module=scalar
//    passes, and a browser without WebAssembly SIMD (simulated: WebAssembly.validate rejects the
//    SIMD probe) is given the scalar build automatically and generates the native text.
// 3b. demo.html's chat (the npm package, engine in a Worker): two greedy turns equal native
//    ml_run --chat's replies, the second reuses the KV cache, Stop ends a reply, build and threads shown.
// 5. --threads-too (the folder also serves the wasm-simd128-threads build): the same folder from
//    wasm/serve.mjs (COOP/COEP: cross-origin isolated) as well. verify.html there runs the threaded
//    build and passes every check as in 2., plus the logits at 2..4 threads bit-identical to 1
//    thread's on the three models large enough to wake the pool; verify.html?module=simd128_threads
//    on the plain server refuses with one line. demo.html's chat there runs the threaded build with
//    `threads: N`, N >= 2, and its greedy replies are byte for byte the single-thread page's: the two
//    Q8_0 turns of 3b (the prompt's batches use the pool) and a turn on the F32 model (whose
//    classifier and FFN use the pool at every generated token). A browser reporting 32 cores gets 16
//    threads on verify.html, which passes (its e2e contexts ask for no more threads than the module has).
// Screenshots: <out>/screenshot_verify.png, screenshot_verify_wrong_tolerance.png, screenshot_demo.png,
// screenshot_demo_chat.png, screenshot_demo_chat_stopped.png,
// with --scalar-too screenshot_verify_scalar.png, screenshot_demo_no_simd.png, and with --threads-too
// screenshot_verify_threads.png, screenshot_demo_chat_threads.png.
'use strict';
const {spawn, spawnSync} = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

function parseArgs(argv) {
  const a = {www: '', mlRun: '', out: '', expect: 'simd128', scalarToo: false, threadsToo: false, tokens: 64};
  for (let i = 2; i < argv.length; ++i) {
    const k = argv[i], v = () => argv[++i];
    if (k === '--www') a.www = path.resolve(v());
    else if (k === '--ml-run') a.mlRun = path.resolve(v());
    else if (k === '--out') a.out = path.resolve(v());
    else if (k === '--expect') a.expect = v();
    else if (k === '--scalar-too') a.scalarToo = true;
    else if (k === '--threads-too') a.threadsToo = true;
    else throw new Error(`unknown argument ${k}`);
  }
  if (!a.www || !a.mlRun || !a.out) {
    throw new Error('usage: browser_test.js --www DIR --ml-run PATH --out DIR [--expect simd128|scalar] [--scalar-too] [--threads-too]');
  }
  return a;
}

const args = parseArgs(process.argv);
let failures = 0;
function check(ok, what, detail = '') {
  console.log(`${ok ? 'PASS' : 'FAIL'}  ${what}${!ok && detail ? `\n      ${detail}` : ''}`);
  if (!ok) ++failures;
  return ok;
}
function fatal(msg) {
  console.error(`browser_test: ${msg}`);
  process.exit(1);
}

let playwright;
try {
  playwright = require('playwright-core');
} catch (e) {
  fatal(`cannot load playwright-core (NODE_PATH=${process.env.NODE_PATH || ''}): ${e.message}`);
}
const CHROMIUM = process.env.ML_CHROMIUM || '/usr/bin/chromium';
if (!fs.existsSync(CHROMIUM)) fatal(`${CHROMIUM} is absent (apt-get install chromium)`);
if (!fs.existsSync(args.mlRun)) fatal(`the native scalar ml_run ${args.mlRun} is absent (cmake --workflow --preset scalar)`);
for (const f of ['verify.html', 'demo.html', 'models/stories260K_q8_0.mlb', 'models/tok512.bin',
                 'models/random_bpe_q8_0.mlb', 'models/bpe315.mltk',
                 ...(args.threadsToo ? ['ml_web_simd128_threads.worker.js', 'models/random_threads_q8_0.mlb'] : [])])
  if (!fs.existsSync(path.join(args.www, f))) fatal(`${path.join(args.www, f)} is absent (build the preset first)`);

// ---- the server
function startServer(dir) {
  return new Promise((resolve, reject) => {
    const p = spawn('python3', ['-u', '-m', 'http.server', '0', '--bind', '127.0.0.1', '--directory', dir],
                    {stdio: ['ignore', 'pipe', 'pipe']});
    let buf = '';
    const timer = setTimeout(() => reject(new Error(`http.server did not start: ${buf}`)), 15000);
    p.stdout.on('data', (d) => {
      buf += d;
      const m = /port (\d+)/.exec(buf);
      if (m) {
        clearTimeout(timer);
        resolve({proc: p, base: `http://127.0.0.1:${m[1]}/`});
      }
    });
    p.stderr.on('data', () => {});  // request log
    p.on('exit', (code) => reject(new Error(`http.server exited (${code}): ${buf}`)));
  });
}

// The same folder from wasm/serve.mjs: COOP/COEP, so the pages are cross-origin isolated.
function startIsolatedServer(dir) {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [path.join(__dirname, 'serve.mjs'), dir], {stdio: ['ignore', 'pipe', 'inherit']});
    const timer = setTimeout(() => reject(new Error('serve.mjs did not start')), 15000);
    p.stdout.on('data', (d) => {
      const m = /on (http:\/\/[^ ]+)/.exec(String(d));
      if (m) {
        clearTimeout(timer);
        resolve({proc: p, base: m[1]});
      }
    });
    p.on('exit', (code) => reject(new Error(`serve.mjs exited (${code})`)));
  });
}

// ---- native reference: ml_run's stdout is the prompt echo, the generated text and one newline
function nativeText(model, tok, prompt, steps, temp, topp, seed) {
  const argv = [path.join(args.www, 'models', model), '-z', path.join(args.www, 'models', tok),
                '-i', prompt, '-n', String(steps), '--temp', String(temp), '--top-p', String(topp),
                '--seed', String(seed), '-t', '1'];
  const r = spawnSync(args.mlRun, argv, {encoding: 'buffer', timeout: 120000});
  if (r.status !== 0) throw new Error(`${args.mlRun} ${argv.join(' ')} failed (${r.status}): ${r.stderr}`);
  const text = r.stdout.toString('utf8');
  return {text: text.endsWith('\n') ? text.slice(0, -1) : text, cmd: `${args.mlRun} ${argv.join(' ')}`};
}

// ---- pages
const WAIT = {timeout: 240000};

async function runVerify(page, base, query) {
  await page.goto(`${base}verify.html${query}`);
  await page.waitForSelector('#summary[data-state="done"]', WAIT);
  const summary = await page.$eval('#summary', (e) => ({text: e.innerText.replace(/\n+/g, ' | '), ...e.dataset}));
  const variant = await page.$eval('#module', (e) => e.dataset.variant || '');
  const threads = await page.$eval('#module', (e) => e.dataset.threads || '');
  const moduleText = await page.$eval('#module', (e) => e.textContent);
  const rows = await page.$$eval('#checks tbody tr', (trs) => trs.filter((tr) => tr.cells.length === 7).map((tr) => ({
    group: tr.cells[0].textContent, name: tr.cells[1].textContent, shape: tr.cells[2].textContent,
    result: tr.cells[6].textContent})));
  const bindings = await page.$$eval('#bindings span', (ss) => ss.map((s) => s.textContent));
  return {summary, variant, threads, moduleText, rows, bindings};
}

// The thread check's rows (wasm/verify.js THREAD_MODELS, ml_verify_threads).
const THREAD_ROW = 'logits bit-identical across thread counts';
const THREAD_MODELS = ['stories260K_f32.mlb', 'random_threads_q8_0.mlb', 'random_threads_q4_0.mlb'];

function checkVerifyPassed(v, expect, label) {
  console.log(`      ${label}: ${v.summary.text}`);
  console.log(`      module: ${v.moduleText}`);
  check(v.variant === expect, `${label}: loaded the ${expect} build`, `loaded '${v.variant}'`);
  check(v.summary.result === 'pass' && v.summary.failed === '0', `${label}: summary reports every check passed`,
        v.summary.text);
  const total = Number(v.summary.total);
  check(total === v.rows.length && total >= 50, `${label}: ${total} check rows shown`, `rows ${v.rows.length}`);
  check(Number(v.summary.selftestTotal) > 0 && v.summary.selftestCaught === v.summary.selftestTotal,
        `${label}: the harness self-test caught every wrong kernel (${v.summary.selftestCaught}/${v.summary.selftestTotal})`);
  const passed = new Set(v.rows.filter((r) => r.result === 'pass').map((r) => r.name));
  const bound = v.bindings.map((b) => b.replace(/^([a-z0-9_]+): (.*)$/, '$1 [$2]'));
  const missing = bound.filter((b) => !passed.has(b));
  check(bound.length >= 12 && missing.length === 0, `${label}: every bound kernel implementation has passing rows`,
        `missing: ${missing.join(', ')}`);
  for (const m of ['stories260K_f32.mlb', 'stories260K_q8_0.mlb', 'stories260K_q4_0.mlb']) {
    const e2e = v.rows.filter((r) => r.group === 'e2e' && r.shape.includes(m) && r.name.endsWith('scalar forward'));
    check(e2e.length === 2 && e2e.every((r) => r.result === 'pass'),
          `${label}: end to end on ${m} (logits and greedy tokens vs the scalar forward)`, JSON.stringify(e2e));
  }
  const threadRows = v.rows.filter((r) => r.name === THREAD_ROW);
  if (expect !== 'simd128_threads') {
    check(threadRows.length === 0 && v.threads === '1', `${label}: one thread, no thread rows`, JSON.stringify(threadRows));
    return;
  }
  for (const m of THREAD_MODELS) {
    const t = threadRows.filter((r) => r.shape.startsWith(`${m},`));
    check(t.length === 1 && t[0].result === 'pass' && /, 2\.\.4 threads vs 1$/.test(t[0].shape),
          `${label}: logits at 2..4 threads bit-identical to 1 thread's on ${m}`, JSON.stringify(t));
  }
  check(Number(v.threads) >= 2, `${label}: the forward pass runs on ${v.threads} threads (one per core, >= 2)`);
}

async function runDemo(page, base, query, opt) {
  await page.goto(`${base}demo.html${query}`);
  await page.waitForSelector('#generate:not([disabled])', WAIT);
  await page.check('#mode-completion');  // the demo's completion mode: ml_run's text
  if (opt.files) {
    await page.setInputFiles('#model-file', path.join(args.www, 'models', opt.model));
    await page.setInputFiles('#tokenizer-file', path.join(args.www, 'models', opt.tok || 'tok512.bin'));
    await page.selectOption('#model', 'files');
  } else {
    await page.selectOption('#model', `served:${opt.model}`);
  }
  await page.fill('#prompt', opt.prompt);
  await page.fill('#tokens', String(args.tokens));
  await page.fill('#temp', String(opt.temp));
  await page.fill('#topp', String(opt.topp));
  await page.fill('#seed', String(opt.seed));
  await page.click('#generate');
  await page.waitForSelector('#stats[data-state="done"], #stats[data-state="error"]', WAIT);
  const stats = await page.$eval('#stats', (e) => ({text: e.textContent, ...e.dataset}));
  const text = await page.$eval('#output', (e) => e.textContent);
  const variant = await page.$eval('#module', (e) => e.dataset.variant || '');
  return {stats, text, variant};
}

async function checkDemo(page, base, query, opt, expectVariant) {
  const label = `demo${query} ${opt.files ? 'picked files' : 'served'} ${opt.model}${opt.tok ? ` + ${opt.tok}` : ''}, ` +
                (opt.temp === 0 ? 'greedy' : `temp ${opt.temp} top-p ${opt.topp} seed ${opt.seed}`);
  const d = await runDemo(page, base, query, opt);
  if (!check(d.stats.state === 'done', `${label}: generation finished`, d.stats.text)) return d;
  check(d.variant === expectVariant, `${label}: ran on the ${expectVariant} build`, `ran on '${d.variant}'`);
  const steps = Number(d.stats.steps);
  // ml_run -n counts positions, prompt included; the last prompt position samples the first new
  // token, so N new tokens are -n (prompt tokens - 1 + N). (Both would stop early at a BOS.)
  check(steps === Number(d.stats.promptTokens) - 1 + args.tokens && Number(d.stats.generated) === args.tokens,
        `${label}: ${args.tokens} new tokens after a ${d.stats.promptTokens}-token prompt`, d.stats.text);
  const ref = nativeText(opt.model, opt.tok || 'tok512.bin', opt.prompt, steps, opt.temp, opt.topp, opt.seed);
  check(d.text === ref.text && d.text.length > opt.prompt.length,
        `${label}: text equals the native scalar build's`,
        `browser: ${JSON.stringify(d.text)}\n      native:  ${JSON.stringify(ref.text)}\n      (${ref.cmd})`);
  console.log(`      ${d.stats.text}`);
  return d;
}

// Greedy chat turns on demo.html with a served model (the zephyr format, as the page uses for the
// served models), at most `tokens` new tokens each: the replies, the last turn's #stats and #module.
async function chatTurns(page, base, model, turns, tokens = 40) {
  await page.goto(`${base}demo.html`);
  await page.selectOption('#model', `served:${model}`);
  await page.fill('#tokens', String(tokens));
  await page.fill('#temp', '0');
  const replies = [];
  let stats = {};
  for (const t of turns) {
    await page.fill('#message', t);
    await page.click('#generate');
    await page.waitForFunction((n) => {
      const state = document.querySelector('#stats').dataset.state;
      return state === 'error' || (state === 'done' && document.querySelectorAll('.msg.assistant').length === n);
    }, replies.length + 1, WAIT);
    stats = await page.$eval('#stats', (e) => ({text: e.textContent, ...e.dataset}));
    if (stats.state !== 'done') break;
    replies.push(await page.$eval('.msg.assistant:last-child', (e) => e.textContent));
  }
  const module = await page.$eval('#module', (e) => ({text: e.textContent, ...e.dataset}));
  return {replies, stats, module};
}

async function main() {
  fs.mkdirSync(args.out, {recursive: true});
  const server = await startServer(args.www);
  console.log(`serving ${args.www} at ${server.base}`);
  const browser = await playwright.chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
           '--disable-component-update', '--disable-sync'],
  });
  try {
    const context = await browser.newContext({viewport: {width: 1280, height: 900}});
    const page = await context.newPage();
    const pageErrors = [];
    page.on('pageerror', (e) => pageErrors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') pageErrors.push(m.text()); });

    // verify.html as the browser picks the module.
    const v = await runVerify(page, server.base, '');
    checkVerifyPassed(v, args.expect, 'verify.html');
    await page.screenshot({path: path.join(args.out, 'screenshot_verify.png'), fullPage: true});

    // A deliberately wrong tolerance must show up as failures.
    const w = await runVerify(page, server.base, '?tol_scale=1e-9');
    console.log(`      verify.html?tol_scale=1e-9: ${w.summary.text}`);
    check(w.summary.result === 'fail' && Number(w.summary.failed) > 0 && /^FAIL/.test(w.summary.text),
          'verify.html?tol_scale=1e-9: the page reports failures', w.summary.text);
    await page.screenshot({path: path.join(args.out, 'screenshot_verify_wrong_tolerance.png')});

    // demo.html: seeded, greedy, and a model picked with the file inputs.
    const prompt = 'Once upon a time';
    await checkDemo(page, server.base, '', {model: 'stories260K_q8_0.mlb', prompt, temp: 0.9, topp: 0.9, seed: 42}, args.expect);
    await checkDemo(page, server.base, '', {model: 'stories260K_q4_0.mlb', prompt: 'Lily and Ben', temp: 0, topp: 0.9, seed: 1}, args.expect);
    // (Quantized models: every kernel they use is bit-identical across builds. An F32 model's
    // matvec_f32 may reassociate in SIMD builds, so its sampled text is not promised to match.)
    await checkDemo(page, server.base, '', {model: 'stories260K_q8_0.mlb', prompt: 'The cat', temp: 1.0, topp: 0.95, seed: 7, files: true}, args.expect);
    // A byte-level BPE tokenizer (MLTK, 315 tokens: fuzz/data/encode_tokenizer.mltk) with a random
    // Q8_0 model of vocab 320 (ids 315..319 decode to ""), greedy; the prompt's multi-byte
    // characters (2 and 3 bytes) are encoded and echoed back byte for byte.
    const bpePrompt = 'Café — naïve 日本';
    const b = await checkDemo(page, server.base, '', {model: 'random_bpe_q8_0.mlb', tok: 'bpe315.mltk', prompt: bpePrompt,
                                                      temp: 0, topp: 0.9, seed: 1, files: true}, args.expect);
    check(b.text.startsWith(bpePrompt) && Number(b.stats.promptTokens) > 1,
          'demo picked files random_bpe_q8_0.mlb + bpe315.mltk: the multi-byte prompt is echoed unchanged',
          JSON.stringify(b.text));
    // The screenshot shows the seeded Q8_0 run.
    await checkDemo(page, server.base, '', {model: 'stories260K_q8_0.mlb', prompt, temp: 0.9, topp: 0.9, seed: 42}, args.expect);
    await page.screenshot({path: path.join(args.out, 'screenshot_demo.png'), fullPage: true});

    // demo.html's chat (the npm package's engine in a Worker): two greedy turns equal the native
    // ml_run --chat replies (zephyr format, as the page uses for the served models), the second
    // keeps the first turn's tokens in the KV cache, and Stop ends a long reply at once.
    const turns = ['Tell me a story', 'What happened next?'];
    const {replies, stats: turn2} = await chatTurns(page, server.base, 'stories260K_q8_0.mlb', turns);
    const chatRef = spawnSync(args.mlRun, [path.join(args.www, 'models', 'stories260K_q8_0.mlb'), '-z', path.join(args.www, 'models', 'tok512.bin'),
                                           '--chat', '--chat-template', 'zephyr', '--temp', '0', '-n', '40', '-t', '1'],
                              {input: turns.join('\n') + '\n', encoding: 'utf8', timeout: 120000});
    check(turn2.state === 'done' && replies.length === 2 && chatRef.stdout === replies.map((r) => r + '\n').join(''),
          'demo chat: two greedy replies equal the native ml_run --chat --chat-template zephyr ones',
          `browser: ${JSON.stringify(replies)}\n      native:  ${JSON.stringify(chatRef.stdout)} ${turn2.text}`);
    check(Number(turn2.cachedTokens) > 0 && Number(turn2.cachedTokens) < Number(turn2.promptTokens),
          `demo chat: turn 2 kept ${turn2.cachedTokens} of its ${turn2.promptTokens} prompt tokens in the KV cache`, turn2.text);
    await page.screenshot({path: path.join(args.out, 'screenshot_demo_chat.png'), fullPage: true});
    await page.fill('#tokens', '100000');
    await page.fill('#temp', '0.9');
    await page.fill('#message', 'Tell me a very long story');
    await page.evaluate(() => {  // presses Stop as soon as the third reply shows its first text
      const obs = new MutationObserver(() => {
        const r = document.querySelectorAll('.msg.assistant');
        if (r.length === 3 && r[2].textContent.length > 0) {
          obs.disconnect();
          document.getElementById('stop').click();
        }
      });
      obs.observe(document.getElementById('messages'), {childList: true, subtree: true, characterData: true});
    });
    await page.click('#generate');
    await page.waitForFunction(() => document.querySelectorAll('.msg.assistant').length === 3, null, WAIT);
    await page.waitForSelector('#stats[data-state="done"], #stats[data-state="error"]', WAIT);
    const stopped = await page.$eval('.msg.assistant:last-child', (e) => ({cls: e.className, len: e.textContent.length}));
    const afterStop = await page.$eval('#stats', (e) => e.textContent);
    check(stopped.cls.includes('stopped'), `demo chat: Stop ends the reply (${stopped.len} characters; ${afterStop})`, stopped.cls);
    const mod = await page.$eval('#module', (e) => e.textContent);
    check(/Build: (simd128|scalar) · threads: 1/.test(mod) && /Worker/.test(mod), 'demo chat: the build and thread count are shown', mod);
    await page.screenshot({path: path.join(args.out, 'screenshot_demo_chat_stopped.png'), fullPage: true});

    // ml.js Model.configure in the page (the node test wasm/api_test.mjs covers it in depth): top_k 1
    // = greedy, a JSON schema's text parses and matches, "pattern" is refused with the runtime's
    // message, logprobs <= 0 with the greedy token the top entry.
    const api = await page.evaluate(async () => {
      const {fetchBytes, loadModule, Model, writeFile} = await import('./ml.js');
      const mod = await loadModule();
      const mp = writeFile(mod.M, '/api/m.mlb', await fetchBytes('models/stories260K_q8_0.mlb'));
      const tp = writeFile(mod.M, '/api/t.bin', await fetchBytes('models/tok512.bin'));
      const m = new Model(mod.M, mp, tp);
      const gen = (n) => {
        m.start(m.encode('Once upon a time'), {maxTokens: n, stopIds: m.info.stop_ids});
        while (m.prefill() > 0) { /* prompt */ }
        let text = '', r, lp = true;
        do {
          r = m.next();
          text += r.text;
          if ('logprob' in r && r.finish === 0) lp = lp && r.logprob <= 0 && r.top_logprobs[0].token === r.token;
        } while (r.finish === 0);
        return {text, finish: r.finish, lp};
      };
      const out = {variant: mod.variant};
      m.configure({temperature: 0});
      out.greedy = gen(40).text;
      m.configure({temperature: 1.2, top_k: 1, seed: 9});
      out.topk1 = gen(40).text;
      m.configure({temperature: 0, top_k: 0, logprobs: true, top_logprobs: 3});
      out.logprobs = gen(20).lp;
      m.configure({logprobs: false, temperature: 0.9, seed: 3, json_schema:
                   {type: 'object', additionalProperties: false, required: ['name', 'n'],
                    properties: {name: {type: 'string', maxLength: 10}, n: {type: 'integer'}}}});
      out.json = gen(100);
      try {
        m.configure({json_schema: {type: 'string', pattern: 'a+'}});
        out.patternError = '';
      } catch (e) {
        out.patternError = e.message;
      }
      m.close();
      return out;
    });
    console.log(`      Model.configure on ${api.variant}: ${api.json.text}`);
    check(api.topk1 === api.greedy && api.greedy.length > 0, 'Model.configure in the page: top_k 1 equals greedy',
          `${JSON.stringify(api.topk1)} vs ${JSON.stringify(api.greedy)}`);
    check(api.logprobs, 'Model.configure in the page: logprobs <= 0, the greedy token first');
    let parsed = null;
    try {
      parsed = JSON.parse(api.json.text);
    } catch (e) { /* checked below */ }
    check(api.json.finish === 5 && parsed !== null && typeof parsed.name === 'string' && parsed.name.length <= 10 &&
          Number.isInteger(parsed.n) && Object.keys(parsed).length === 2,
          'Model.configure in the page: the JSON schema\'s text parses and matches', JSON.stringify(api.json));
    check(api.patternError.includes('schema keyword "pattern" at / is not supported'),
          'Model.configure in the page: "pattern" is refused with the runtime\'s message', api.patternError);

    if (args.scalarToo) {
      const s = await runVerify(page, server.base, '?module=scalar');
      checkVerifyPassed(s, 'scalar', 'verify.html?module=scalar');
      await page.screenshot({path: path.join(args.out, 'screenshot_verify_scalar.png')});
      // A browser without WebAssembly SIMD: the probe fails to validate, the page must load the scalar build.
      const noSimd = await browser.newContext({viewport: {width: 1280, height: 900}});
      await noSimd.addInitScript(() => {
        const validate = WebAssembly.validate;
        WebAssembly.validate = function (bytes) {
          const u = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes.buffer || bytes);
          return u.includes(0xfd) ? false : validate.apply(this, arguments);  // 0xfd: the SIMD opcode prefix
        };
      });
      const p2 = await noSimd.newPage();
      p2.on('pageerror', (e) => pageErrors.push(String(e)));
      const d = await checkDemo(p2, server.base, '', {model: 'stories260K_q4_0.mlb', prompt, temp: 0.8, topp: 0.9, seed: 1234}, 'scalar');
      const why = await p2.$eval('#module', (e) => e.textContent);
      check(/no WebAssembly SIMD/.test(why), 'browser without SIMD: the page says why it loaded the scalar build', why);
      console.log(`      module: ${why}`);
      await p2.screenshot({path: path.join(args.out, 'screenshot_demo_no_simd.png'), fullPage: true});
      await noSimd.close();
      void d;
    }
    if (args.threadsToo) await threadedChecks(browser, server, turns, replies, pageErrors);
    check(pageErrors.length === 0, 'no JavaScript errors on the pages', pageErrors.join('\n      '));
  } finally {
    await browser.close();
    server.proc.kill();
  }
  console.log(failures ? `browser_test: ${failures} check(s) FAILED` : 'browser_test: every check passed');
  console.log(`screenshots: ${args.out}/screenshot_*.png`);
  process.exit(failures ? 1 : 0);
}

// 5. (--threads-too) The threaded build on cross-origin-isolated pages: verify.html, and the demo's
// chat against the single-thread page's (`replies`: the Q8_0 turns of 3b).
async function threadedChecks(browser, server, turns, replies, pageErrors) {
  const t0 = Date.now();
  const iso = await startIsolatedServer(args.www);
  console.log(`serving ${args.www} cross-origin isolated (wasm/serve.mjs) at ${iso.base}`);
  try {
    const context = await browser.newContext({viewport: {width: 1280, height: 900}});
    const page = await context.newPage();
    page.on('pageerror', (e) => pageErrors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') pageErrors.push(m.text()); });

    // Asked for on a page without COOP/COEP: one line saying why not, no check run.
    const refused = await runVerify(page, server.base, '?module=simd128_threads');
    check(refused.summary.result === 'error' && refused.summary.total === '0' &&
          /needs a cross-origin-isolated page/.test(refused.summary.text) && !refused.summary.text.includes('\n'),
          'verify.html?module=simd128_threads on a page that is not cross-origin isolated: refused with one line',
          refused.summary.text);
    console.log(`      ${refused.summary.text}`);

    // The isolated page picks the threaded build by itself (wasm/loader.js pickVariant).
    const v = await runVerify(page, iso.base, '');
    checkVerifyPassed(v, 'simd128_threads', 'verify.html, cross-origin isolated');
    await page.screenshot({path: path.join(args.out, 'screenshot_verify_threads.png')});
    // A browser reporting 32 cores: the module starts Workers for 16 threads, and the e2e checks'
    // contexts (one thread per core) must not ask for more (they would wait for the blocked page).
    const many = await browser.newContext();
    await many.addInitScript(() => Object.defineProperty(Navigator.prototype, 'hardwareConcurrency', {get: () => 32, configurable: true}));
    const manyPage = await many.newPage();
    manyPage.on('pageerror', (e) => pageErrors.push(String(e)));
    const v32 = await runVerify(manyPage, iso.base, '');
    check(v32.variant === 'simd128_threads' && v32.threads === '16' && v32.summary.result === 'pass',
          'verify.html, cross-origin isolated, 32 cores reported: 16 threads, every check passed', `${v32.moduleText} ${v32.summary.text}`);
    await many.close();

    // The demo's chat: the threaded build, N >= 2 threads, the single-thread page's replies.
    const q8 = await chatTurns(page, iso.base, 'stories260K_q8_0.mlb', turns);
    const shown = /Build: simd128_threads · threads: (\d+)/.exec(q8.module.text);
    check(q8.module.variant === 'simd128_threads' && shown && Number(shown[1]) >= 2 && q8.module.threads === shown[1] &&
          /Worker/.test(q8.module.text), `demo chat, cross-origin isolated: the threaded build and ${shown ? shown[1] : '?'} threads shown`,
          q8.module.text);
    check(q8.stats.state === 'done' && q8.replies.length === 2 && q8.replies.every((r, i) => r === replies[i]),
          'demo chat, cross-origin isolated: two greedy Q8_0 replies byte-identical to the single-thread page\'s',
          `threaded: ${JSON.stringify(q8.replies)}\n      single:   ${JSON.stringify(replies)} ${q8.stats.text}`);
    await page.screenshot({path: path.join(args.out, 'screenshot_demo_chat_threads.png'), fullPage: true});
    const f32 = await chatTurns(page, iso.base, 'stories260K_f32.mlb', turns.slice(0, 1));
    const plain = await context.newPage();
    plain.on('pageerror', (e) => pageErrors.push(String(e)));
    const f32Single = await chatTurns(plain, server.base, 'stories260K_f32.mlb', turns.slice(0, 1));
    check(f32Single.module.variant !== 'simd128_threads' && f32Single.module.threads === '1' &&
          f32.module.variant === 'simd128_threads' && f32.replies.length === 1 && f32.replies[0].length > 0 &&
          f32.replies[0] === f32Single.replies[0],
          `demo chat: a greedy F32 reply on ${f32.module.threads} threads byte-identical to the single-thread page's`,
          `threaded: ${JSON.stringify(f32.replies)} (${f32.module.variant})\n      single:   ` +
          `${JSON.stringify(f32Single.replies)} (${f32Single.module.variant}) ${f32.stats.text} ${f32Single.stats.text}`);
    await context.close();
    console.log(`      the threaded build's checks took ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  } finally {
    iso.proc.kill();
  }
}

main().catch((e) => {
  console.error(`browser_test: ${e.stack || e}`);
  process.exit(1);
});
