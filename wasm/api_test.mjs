// wasm.api (cmake/tests/wasm.cmake): the browser module's generation API (wasm/ml.js Model.configure:
// the sampler chain, logprobs and a JSON constraint, through wasm/web_api.cc's mlw_config_*) under
// node, with the module the pages load (ml_web_<variant>.mjs, given its .wasm bytes).
//   node api_test.mjs MODULE.mjs MODEL.gguf MEMORY_MODEL.mlb TOKENIZER.bin [NODE_MODULES]
// Checks: top_k 1 generates the greedy text for several seeds and temperatures; a JSON-schema
// generation parses with JSON.parse and is valid under the schema (ajv from NODE_MODULES when it is
// installed, and by hand always); json_object gives an object; a schema with "pattern" throws the
// runtime's one-line error naming the keyword and leaves the earlier settings working; bad chain
// values throw the runtime's message naming the field; logprobs are <= 0, top_logprobs descend, and
// at temperature 0 the chosen token is the top entry with the same logprob; logit_bias -Infinity
// bans a token and +100 forces it; the demo's path (start without configure) is unchanged.
// Memory (issue 35 item 5), in a fresh module on the npm engine's path (wasm/loader.js: the model
// streamed from its file into one buffer, the tokenizer through the same loader, openModel): a model
// with a small file and a large KV cache (MEMORY_MODEL: 16 layers x 32768 positions, a 512 MiB F32
// cache) leaves the wasm memory at most file + KV cache + 64 MiB (Emscripten's default growth step,
// 20 % capped at 96 MiB past each request, put it ~40 MiB over), and after ml_close and freeModel a
// second load of it reuses that memory (no growth). The same model as a GGUF (MEMORY_MODEL with
// .gguf for .mlb, its own tokenizer) streams into its conversion (a stream handle, no file buffer)
// and generates the greedy tokens of the GGUF opened whole; the module's memory grows by at most the
// converted weights + the KV cache + 4 MiB (the header, one chunk, the context's working arrays): a
// GGUF held whole before its conversion, as the loader did, would add its 13 MiB.
import fs from 'fs';
import path from 'path';
import {createRequire} from 'module';
import {pathToFileURL} from 'url';

import {freeModel, loadModel, openModel} from './loader.js';
import {Model, writeFile} from './ml.js';

const [modulePath, modelPath, memoryModel, memoryTokenizer, nodeModules] = process.argv.slice(2);
if (!modulePath || !modelPath || !memoryModel || !memoryTokenizer) {
  console.error('usage: node api_test.mjs MODULE.mjs MODEL.gguf MEMORY_MODEL.mlb TOKENIZER.bin [NODE_MODULES]');
  process.exit(2);
}

let failures = 0;
function check(ok, what) {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures++;
}
function throws(f, needle, what) {
  try {
    f();
    check(false, `${what}: no error`);
  } catch (e) {
    const msg = String(e.message);
    check(msg.includes(needle) && !msg.includes('\n'), `${what}: ${msg}`);
  }
}

const factory = (await import(pathToFileURL(path.resolve(modulePath)).href)).default;
const newModule = () => factory({
  wasmBinary: fs.readFileSync(modulePath.replace(/\.mjs$/, '.wasm')),
  print: (s) => console.log(s),
  printErr: (s) => console.warn(s),
});
const M = await newModule();
writeFile(M, '/models/model.gguf', fs.readFileSync(modelPath));
const model = new Model(M, '/models/model.gguf', null);  // the GGUF's own tokenizer
const stopIds = model.info.stop_ids;

// Generates up to n tokens of prompt; returns {text, tokens, steps (next()'s answers), finish}.
function generate(prompt, n, startOpts = {}) {
  model.start(model.encode(prompt), {maxTokens: n, stopIds, ...startOpts});
  while (model.prefill() > 0) { /* the prompt in batches */ }
  let text = '';
  const steps = [];
  for (;;) {
    const r = model.next();
    steps.push(r);
    text += r.text;
    if (r.finish !== 0) return {text, tokens: steps.filter((s) => s.finish === 0).map((s) => s.token), steps, finish: r.finish};
  }
}

// The demo's path: start() with temperature/topp/seed and no configure().
const greedy = generate('Once upon a time', 60, {temperature: 0, topp: 0.9, seed: 1});
check(greedy.text.length > 20, `greedy text (${greedy.text.length} chars): ${JSON.stringify(greedy.text.slice(0, 60))}...`);
const sampled = generate('Once upon a time', 60, {temperature: 1, topp: 0.9, seed: 7});
check(sampled.text !== greedy.text, 'temperature 1 without configure differs from greedy');

// top_k 1 = greedy, whatever the temperature, top_p and seed.
for (const [temperature, seed] of [[1, 1], [1.5, 77], [0.7, 12345]]) {
  model.configure({temperature, top_k: 1, top_p: 1, seed});
  const r = generate('Once upon a time', 60);
  check(r.text === greedy.text, `top_k 1 at temperature ${temperature}, seed ${seed} equals greedy`);
}
// The chain without top_k at the same settings as the plain sampler draws the same text.
model.configure({temperature: 1, top_p: 0.9, top_k: 0, seed: 7});
check(generate('Once upon a time', 60).text === sampled.text, 'the chain at neutral stages equals the plain sampler');

// Bad chain values: the runtime's message, naming the field; the earlier settings stay.
throws(() => model.configure({min_p: 1.5}), 'min_p', 'min_p 1.5');
throws(() => model.configure({repeat_penalty: 0}), 'repeat_penalty', 'repeat_penalty 0');
throws(() => model.configure({logit_bias: {100000: 1}}), 'logit_bias', 'logit_bias on an id outside the vocabulary');
throws(() => model.configure({top_kk: 1}), 'unknown option top_kk', 'unknown option');
check(model.config.min_p === 0 && model.config.repeat_penalty === 1, 'a failed configure keeps the earlier settings');

// logit_bias: -Infinity bans the greedy first token; +100 forces a token.
model.configure({temperature: 0, top_k: 0, top_p: 0.9});
const first = greedy.tokens[0];
model.configure({logit_bias: {[first]: -Infinity}});
check(generate('Once upon a time', 5).tokens[0] !== first, `logit_bias -Infinity bans token ${first}`);
model.configure({logit_bias: {300: 100}});
{
  const t = generate('Once upon a time', 3).tokens;
  check(t.length > 0 && t.every((id) => id === 300), `logit_bias +100 forces token 300: ${t}`);
}
model.configure({logit_bias: {}});

// Logprobs at temperature 0: <= 0, the top entries descend, the chosen token is the first of them
// with the same logprob.
model.configure({temperature: 0, logprobs: true, top_logprobs: 5});
{
  const r = generate('Once upon a time', 30);
  check(r.text.length > 0 && greedy.text.startsWith(r.text), 'logprobs do not change the greedy text');
  let ok = true, why = '';
  for (const s of r.steps.filter((s) => s.finish === 0)) {
    const top = s.top_logprobs;
    if (!(s.logprob <= 0) || top.length !== 5) ok = false, why = `logprob ${s.logprob}, ${top.length} top`;
    else if (top.some((t, i) => !(t.logprob <= 0) || (i && t.logprob > top[i - 1].logprob))) ok = false, why = 'order';
    else if (top[0].token !== s.token || top[0].logprob !== s.logprob) ok = false, why = `token ${s.token} vs top ${top[0].token}`;
    if (!ok) break;
  }
  check(ok, `logprobs <= 0, top_logprobs descend, chosen = top entry at temperature 0 ${why}`);
  const sum = r.steps[0].top_logprobs.reduce((a, t) => a + Math.exp(t.logprob), 0);
  check(sum > 0 && sum <= 1 + 1e-5, `top-5 probabilities sum to ${sum.toFixed(4)} <= 1`);
}
model.configure({temperature: 1, seed: 3, logprobs: true, top_logprobs: 0});
{
  const r = generate('Once upon a time', 30);
  check(r.steps.filter((s) => s.finish === 0).every((s) => s.logprob <= 0 && s.top_logprobs.length === 0),
        'sampled tokens: logprobs <= 0, no top entries with top_logprobs 0');
}
throws(() => generate('Once', 2, {temperature: 1}) && model.configure({top_logprobs: 21}) && generate('Once', 2),
       'top_logprobs 21', 'top_logprobs 21: the session\'s message');
model.configure({logprobs: false, top_logprobs: 0});
check(generate('Once', 3).steps.every((s) => !('logprob' in s)), 'logprobs off: next() has no logprob');

// JSON schema.
const SCHEMA = {
  type: 'object', additionalProperties: false, required: ['name', 'age', 'tags'],
  properties: {name: {type: 'string', maxLength: 12}, age: {type: 'integer'},
               tags: {type: 'array', maxItems: 2, items: {enum: ['a', 'b']}}},
};
let validate = null;
if (nodeModules && fs.existsSync(path.join(nodeModules, 'ajv', 'package.json'))) {
  const Ajv = createRequire(import.meta.url)(path.join(nodeModules, 'ajv')).default;
  validate = new Ajv({strict: false}).compile(SCHEMA);
  check(!validate({name: 'x', age: 1.5, tags: []}), 'ajv rejects a planted wrong value');
} else {
  console.log('note: ajv is not installed (tools/npm/node_modules): the outputs are checked by hand only');
}
function byHand(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v) &&
         JSON.stringify(Object.keys(v).sort()) === '["age","name","tags"]' && typeof v.name === 'string' &&
         [...v.name].length <= 12 && Number.isInteger(v.age) && Array.isArray(v.tags) && v.tags.length <= 2 &&
         v.tags.every((t) => t === 'a' || t === 'b');
}
const outputs = {};
for (const [seed, schema] of [[1, SCHEMA], [2, JSON.stringify(SCHEMA)], [3, SCHEMA]]) {
  model.configure({json_schema: schema, temperature: 1, top_p: 0.9, seed, logprobs: seed === 3, top_logprobs: 3});
  const r = generate('Tim', 200);
  outputs[seed] = r.text;
  let v, err = '';
  try {
    v = JSON.parse(r.text);
  } catch (e) {
    err = e.message;
  }
  check(err === '' && r.finish === 5, `seed ${seed}: finish ${r.finish} (5: complete), parses: ${err || r.text}`);
  check(byHand(v), `seed ${seed}: matches the schema (by hand)`);
  if (validate) check(validate(v), `seed ${seed}: matches the schema (ajv) ${JSON.stringify(validate.errors)}`);
  if (seed === 3) check(r.steps.every((s) => s.logprob <= 0 && s.top_logprobs.length === 3), 'logprobs under a constraint');
}
// The same configuration generates again (the constraint starts from the empty text each time).
model.configure({seed: 1, logprobs: false});
const again = generate('Tim', 200);
check(again.text === outputs[1], `a second generation under the same schema and seed repeats the first: ${again.text}`);

// A keyword outside the subset: the runtime's one-line error naming it; the earlier schema stays.
throws(() => model.configure({json_schema: {type: 'string', pattern: 'a+'}}),
       'schema keyword "pattern" at / is not supported', 'a schema with "pattern"');
throws(() => model.configure({json_schema: '{"type":'}), 'configure: ', 'a schema that is not JSON');
check(byHand(JSON.parse(generate('Tim', 200).text)), 'after the failed configure the earlier schema still applies');
throws(() => model.configure({json_schema: SCHEMA, json_object: true}), 'exclude each other', 'json_schema with json_object');

// json_object: any JSON object.
model.configure({json_schema: null, json_object: true, seed: 4});
{
  const r = generate('Tim', 120);
  let v = null;
  try {
    v = JSON.parse(r.text);
  } catch (e) { /* below */ }
  check(r.finish !== 5 || (v !== null && typeof v === 'object' && !Array.isArray(v)),
        `json_object: finish ${r.finish}, text ${JSON.stringify(r.text)}`);
  check(r.text.trimStart().startsWith('{'), 'json_object: the text begins an object');
}
// Constraint off again: plain greedy text.
model.configure({json_object: false, temperature: 0, logit_bias: {}});
check(generate('Once upon a time', 60).text === greedy.text, 'no constraint, temperature 0: the greedy text again');

model.close();

// Memory: the npm engine's open (wasm/package/engine.js) in a module of its own.
{
  const MiB = (b) => `${(b / 1048576).toFixed(1)} MiB`;
  const W = await newModule();
  const open = async () => {
    const h = await loadModel(W, memoryModel);
    const t = await loadModel(W, memoryTokenizer);
    writeFile(W, '/model/tokenizer', W.HEAPU8.slice(t.ptr, t.ptr + t.bytes));
    freeModel(W, t);
    const m = new Model(W, openModel(W, h, {tokenizerPath: '/model/tokenizer', threads: 1}), null);
    W.FS.unlink('/model/tokenizer');
    m.configure({temperature: 0});
    m.start(m.encode('Once upon a time'), {maxTokens: 8});
    while (m.prefill() > 0) { /* the prompt */ }
    let n = 0, r;
    do n++; while ((r = m.next()).finish === 0);
    return {h, m, n: r.finish === 3 ? n : -r.finish};  // 3: max_tokens reached
  };
  const {h, m, n} = await open();
  const i = m.info, file = fs.statSync(memoryModel).size, mem = W.HEAPU8.length;
  const kv = 2 * i.n_layers * i.max_seq * i.n_kv_heads * (i.dim / i.n_heads) * 4;  // F32 keys and values
  const bound = file + kv + 64 * 1048576;
  check(n === 8 && i.max_seq === 32768 && i.arena_bytes >= kv && mem >= file + kv,
        `memory model: ${n} tokens generated; ${i.max_seq} positions, arena ${MiB(i.arena_bytes)} holding the KV cache ${MiB(kv)}`);
  check(mem <= bound, `wasm memory ${MiB(mem)} (${mem} B) <= file ${MiB(file)} + KV cache ${MiB(kv)} + 64 MiB = ${MiB(bound)}`);
  m.close();
  freeModel(W, h);
  const again = await open();
  check(again.n === 8 && W.HEAPU8.length === mem,
        `a second load after ml_close and freeModel reuses the memory: ${MiB(W.HEAPU8.length)} (first ${MiB(mem)})`);
  again.m.close();
  freeModel(W, again.h);

  // The same model as a GGUF: opened whole from a MEMFS file (load_gguf) for the reference tokens,
  // then in a fresh module converted as it streams in.
  const ggufPath = memoryModel.replace(/\.mlb$/, '.gguf'), ggufFile = fs.statSync(ggufPath).size;
  const greedy8 = (mm) => {
    mm.configure({temperature: 0});
    mm.start(mm.encode('Once upon a time'), {maxTokens: 8});
    while (mm.prefill() > 0) { /* the prompt */ }
    const ids = [];
    let r;
    do { r = mm.next(); ids.push(r.token); } while (r.finish === 0);
    return ids.join(' ');
  };
  writeFile(W, '/models/memory.gguf', fs.readFileSync(ggufPath));
  const whole = new Model(W, '/models/memory.gguf', null);
  const wholeTokens = greedy8(whole);
  whole.close();
  const G = await newModule();
  const base = G.HEAPU8.length;
  const gh = await loadModel(G, ggufPath);
  const weights = gh.stream ? G._mlw_gguf_weight_bytes(gh.stream) : 0;
  check(gh.format === 'gguf' && gh.stream && !gh.ptr && gh.bytes === ggufFile && weights > ggufFile,
        `GGUF ${MiB(ggufFile)} streamed into its conversion (${MiB(weights)}), no file buffer`);
  const gm = new Model(G, openModel(G, gh, {threads: 1}), null);
  check(!gh.stream, 'the stream is let go at open');
  const gt = greedy8(gm);
  check(gt === wholeTokens && gt.split(' ').length === 8, `GGUF streamed: the greedy tokens of the GGUF opened whole (${gt})`);
  const grew = G.HEAPU8.length - base, gbound = weights + kv + 4 * 1048576;
  check(grew <= gbound, `GGUF: wasm memory grew ${MiB(grew)} <= converted weights ${MiB(weights)} + KV cache ${MiB(kv)} + 4 MiB = ${MiB(gbound)} ` +
        `(held whole first, the file would add ${MiB(ggufFile)}); total ${MiB(G.HEAPU8.length)}`);
  gm.close();
}
console.log(failures ? `${failures} check(s) FAILED` : 'all checks passed');
process.exit(failures ? 1 : 0);
