// verify.html: runs the verification library (verify/verify.h, compiled into the module; see
// wasm/web_api.cc) and shows one row per check plus a summary line. The summary element carries
// the outcome for the browser test (wasm/browser_test.js):
//   #summary[data-state=done][data-result=pass|fail|error][data-total][data-failed]
//            [data-selftest-total][data-selftest-caught]
// The module: the threaded build (ml_web_simd128_threads) on a cross-origin-isolated page whose folder
// has it (wasm/loader.js pickVariant, as the demo's engine chooses) or when ?module=simd128_threads
// asks for it (refused with one line on a page that is not isolated); otherwise wasm/ml.js
// loadModule (simd128, or scalar without WebAssembly SIMD; ?module= forces one). #module carries
// [data-variant][data-isa][data-threads] (a context's default thread count).
import {browserHasSimd128, describeModule, fetchBytes, loadModule, pageParams, writeFile} from './ml.js';
import {buildInfo, pickVariant} from './loader.js';

const params = pageParams();
const tolScale = params.has('tol_scale') ? Number(params.get('tol_scale')) : 1;
// The end-to-end comparisons: the models the build converts into www/models (cmake/wasm.cmake),
// the same positions as the Catch2 test (verify/tests/test_e2e.cc).
const E2E_MODELS = ['stories260K_f32.mlb', 'stories260K_q8_0.mlb', 'stories260K_q4_0.mlb'];
const E2E_LOGIT_STEPS = 16, E2E_GREEDY_STEPS = 64;
// A module with threads (mlw_max_threads() > 1): the logits of THREAD_STEPS greedy positions at 2..4
// threads bit-identical to 1 thread's (ml_verify_threads), on models whose matrix products are large
// enough for the forward pass to use the pool (above 64 KiB of weights: stories260K F32's classifier
// and FFN; every product of the random_threads models, which the build writes beside the others).
const THREAD_MODELS = ['stories260K_f32.mlb', 'random_threads_q8_0.mlb', 'random_threads_q4_0.mlb'];
const THREAD_STEPS = 32, THREADS_AT_MOST = 4;

const $ = (id) => document.getElementById(id);
const summary = $('summary');
const results = {main: [], self: []};
let target = 'main';  // where onCheck rows go

function fmtNum(x) {
  if (x === null || x === undefined) return 'NaN';
  if (x === 0) return '0';
  const a = Math.abs(x);
  return a >= 1e-3 && a < 1e4 ? String(Number(x.toPrecision(4))) : x.toExponential(2);
}

function addRow(c) {
  const self = target === 'self';
  results[target].push(c);
  const tr = document.createElement('tr');
  // A self-test row is good when it failed (the wrong kernel was caught).
  const good = self ? !c.pass : c.pass;
  tr.className = good ? 'pass' : 'fail';
  const cells = [
    [c.group], [c.name, 'mono'], [c.shape], [fmtNum(c.max_err), 'num'], [fmtNum(c.tol), 'num'], [String(c.cases), 'num'],
    [self ? (c.pass ? 'MISSED' : 'caught') : (c.pass ? 'pass' : 'FAIL'), 'res'],
  ];
  for (const [text, cls] of cells) {
    const td = document.createElement('td');
    td.textContent = text;
    if (cls) td.className = cls;
    tr.appendChild(td);
  }
  $(self ? 'selftest' : 'checks').tBodies[0].appendChild(tr);
  if (!c.pass && !self) {  // also listed under the summary, so a failure is seen without scrolling
    const li = document.createElement('li');
    li.textContent = `${c.name} — ${c.shape}: max error ${fmtNum(c.max_err)} > tolerance ${fmtNum(c.tol)}` +
                     (c.detail ? ` (${c.detail})` : '');
    $('failures').appendChild(li);
    $('failures').hidden = false;
  }
  if (!c.pass && !self && c.detail) {
    const dr = document.createElement('tr');
    dr.className = 'fail';
    const td = document.createElement('td');
    td.colSpan = 7;
    td.className = 'detail';
    td.textContent = '↳ ' + c.detail;
    dr.appendChild(td);
    $('checks').tBodies[0].appendChild(dr);
  }
}

const tick = () => new Promise((r) => setTimeout(r, 0));  // lets the browser paint the rows so far

function progress(what) {
  summary.textContent = `Running: ${what}… (${results.main.length} checks so far)`;
}

function finish(state, text, sub) {
  summary.dataset.state = 'done';
  summary.dataset.result = state;
  summary.dataset.total = results.main.length;
  summary.dataset.failed = results.main.filter((c) => !c.pass).length;
  summary.dataset.selftestTotal = results.self.length;
  summary.dataset.selftestCaught = results.self.filter((c) => !c.pass).length;
  summary.textContent = text;
  if (sub) {
    const s = document.createElement('small');
    s.textContent = sub;
    summary.appendChild(s);
  }
  document.title = `${state === 'pass' ? 'PASS' : 'FAIL'} — legacy-ml verification`;
}

// The threaded build when the page asks for it or is cross-origin isolated (see the top); null: ml.js chooses.
async function loadThreaded(force, onCheck) {
  let available = {};
  try {
    const r = await fetch('modules.json', {cache: 'no-store'});
    if (r.ok) available = await r.json();
  } catch (e) { /* no modules.json: ml.js's loadModule says what is missing */ }
  const isolated = !!globalThis.crossOriginIsolated;
  const pick = pickVariant({simd: browserHasSimd128(), isolated, available});
  if (force === 'simd128_threads') {
    if (!isolated) {
      throw new Error('?module=simd128_threads needs a cross-origin-isolated page (SharedArrayBuffer): serve the ' +
                      'folder with Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: ' +
                      'require-corp (node wasm/serve.mjs DIR does)');
    }
    if (!available.simd128_threads) {
      throw new Error('this folder has no threaded build (ml_web_simd128_threads.mjs): build the ' +
                      'wasm-simd128-threads preset, then rebuild this one');
    }
  } else if (force || pick.variant !== 'simd128_threads') {
    return null;
  }
  const reason = force ? 'forced by ?module=simd128_threads' : pick.reason;
  const factory = (await import('./ml_web_simd128_threads.mjs')).default;
  const M = await factory({print: (s) => console.log(s), printErr: (s) => console.warn(s), onCheck});
  const build = JSON.parse(M.UTF8ToString(M._mlw_build_json()));
  return {M, variant: 'simd128_threads', reason, simd: true, build, file: 'ml_web_simd128_threads.wasm'};
}

async function main() {
  const t0 = performance.now();
  let m;
  try {
    const force = params.get('module') || '', onCheck = (c) => addRow(c);
    m = await loadThreaded(force, onCheck) || await loadModule({force, onCheck});
  } catch (e) {
    $('module').textContent = 'Could not load the WebAssembly module.';
    finish('error', `ERROR — ${e.message}`);
    return;
  }
  const M = m.M;
  const mod = $('module');
  mod.textContent = '';
  const b = document.createElement('b');
  const info = buildInfo(M, m.variant);  // threads: a context's default (one per core); maxThreads: the pool's
  const threads = info.maxThreads > 1 ? Math.min(info.maxThreads, THREADS_AT_MOST) : 1;
  b.textContent = `Module: ${m.variant} · threads: ${info.threads}`;
  mod.append(b, ` — ${describeModule(m)}` +
                (threads > 1 ? `; the forward pass runs on ${info.threads} threads, also checked at 1..${threads}` : ''));
  mod.dataset.variant = m.variant;
  mod.dataset.isa = m.build.isa;
  mod.dataset.threads = String(info.threads);
  for (const [k, impl] of m.build.kernels) {
    const s = document.createElement('span');
    s.textContent = `${k}: ${impl}`;
    $('bindings').appendChild(s);
  }

  const cstr = (s) => {
    const n = M.lengthBytesUTF8(s) + 1, p = M._malloc(n);
    M.stringToUTF8(s, p, n);
    return p;
  };
  try {
    progress('kernel implementations against the scalar reference');
    await tick();
    M._mlw_verify_kernels(tolScale);
    progress('quantization');
    await tick();
    M._mlw_verify_quant(tolScale);
    progress('harness self-test');
    await tick();
    target = 'self';
    M._mlw_verify_selftest();
    target = 'main';
    for (const name of E2E_MODELS) {
      progress(`end to end on ${name}`);
      await tick();
      let path;
      try {
        path = writeFile(M, `/models/${name}`, await fetchBytes(`models/${name}`));
      } catch (e) {
        addRow({group: 'e2e', name: 'forward vs scalar forward', shape: name, max_err: null, tol: 0, cases: 0,
                pass: false, detail: `model not served next to the page: ${e.message}`});
        continue;
      }
      const p = cstr(path);
      M._mlw_verify_e2e(p, E2E_LOGIT_STEPS, E2E_GREEDY_STEPS, tolScale);
      M._free(p);
      M.FS.unlink(path);
    }
    for (const name of threads > 1 ? THREAD_MODELS : []) {
      progress(`1 to ${threads} threads on ${name}`);
      await tick();
      let path;
      try {
        path = writeFile(M, `/models/${name}`, await fetchBytes(`models/${name}`));
      } catch (e) {
        addRow({group: 'e2e', name: 'logits bit-identical across thread counts', shape: name, max_err: null, tol: 0,
                cases: 0, pass: false, detail: `model not served next to the page: ${e.message}`});
        continue;
      }
      const p = cstr(path);
      M._mlw_verify_threads(p, THREAD_STEPS, threads);
      M._free(p);
      M.FS.unlink(path);
    }
  } catch (e) {
    target = 'main';
    finish('error', `ERROR — the checks stopped: ${e.message}`);
    return;
  }
  const total = results.main.length, failed = results.main.filter((c) => !c.pass).length;
  const stTotal = results.self.length, caught = results.self.filter((c) => !c.pass).length;
  const secs = ((performance.now() - t0) / 1000).toFixed(1);
  const selfOk = stTotal > 0 && caught === stTotal;
  const sub = `${m.build.isa} build (${m.file}), ${secs} s` + (tolScale !== 1 ? `, tolerances × ${tolScale}` : '') +
              `; harness self-test: ${caught} of ${stTotal} deliberately wrong kernels caught`;
  if (total > 0 && failed === 0 && selfOk) {
    finish('pass', `PASS — all ${total} checks passed`, sub);
  } else {
    finish('fail', `FAIL — ${failed} of ${total} checks failed` + (selfOk ? '' : ', and the harness self-test missed a wrong kernel'), sub);
  }
}

main();
