// ml_server's response_format (issue 34 item 3): 30 JSON schemas of docs/json-schema.md's subset x 3
// seeds at temperature 1, on a random-weight model (tools/gen_random.py, the byte-level test
// tokenizer), every reply checked with ajv (pinned in tools/npm): "stop" must parse and validate,
// "length" must be exactly max_tokens tokens. Also: json_object, a schema outside the subset is a
// 400 naming the keyword and its JSON pointer, and the constrained step time against a free one.
//
//   node verify/server_json_schema.js   (environment: ML_SERVER, ML_SOURCE, ML_PYTHON — cmake/Tests.cmake)
// Exit status: 0 passed, 1 failed, 77 skipped (no tools/npm/node_modules/ajv: tools/setup.sh).
'use strict';
const {execFileSync} = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const spawned = require('./server_spawn.js');

const env = process.env;
const SOURCE = env.ML_SOURCE || path.join(__dirname, '..');
const MLTK = path.join(SOURCE, 'fuzz', 'data', 'encode_tokenizer.mltk');
const [Ajv] = spawned.npmPackages(['ajv']);
spawned.needFiles([env.ML_SERVER]);
const {check, done} = spawned.checks({quiet: true});

const startServer = (args) => spawned.startServer(env.ML_SERVER, args);

const str = {type: 'string'}, int = {type: 'integer'}, num = {type: 'number'}, bool = {type: 'boolean'};
const SCHEMAS = [
  {type: 'object', properties: {name: str}, required: ['name'], additionalProperties: false},
  {type: 'object', properties: {a: int, b: bool}, required: ['a', 'b'], additionalProperties: false},
  {type: 'array', items: int, minItems: 1, maxItems: 4},
  {type: 'string', maxLength: 12},
  {type: 'string', minLength: 2, maxLength: 5},
  int, num, bool, {type: 'null'},
  {enum: ['red', 'green', 'blue']},
  {const: {ok: true}},
  {type: ['string', 'integer']},
  {anyOf: [int, {type: 'object', properties: {x: str}, required: ['x'], additionalProperties: false}]},
  {type: 'object', properties: {tags: {type: 'array', items: str, maxItems: 3}}, required: ['tags'],
   additionalProperties: false},
  {type: 'object', properties: {p: {type: 'object', properties: {q: int}, required: ['q'], additionalProperties: false}},
   required: ['p'], additionalProperties: false},
  {type: 'array', items: {enum: [1, 2, 3]}, maxItems: 5},
  {type: 'object', properties: {id: int, kind: {enum: ['a', 'b']}}, required: ['id', 'kind'], additionalProperties: false},
  {type: 'array', items: bool, minItems: 2, maxItems: 2},
  {type: 'object', properties: {v: {type: ['number', 'null']}}, required: ['v'], additionalProperties: false},
  {type: 'object', properties: {s: {type: 'string', maxLength: 3}}, required: ['s'], additionalProperties: false},
  {type: 'array', items: {type: 'array', items: int, maxItems: 2}, maxItems: 2},
  {type: 'object', properties: {}, additionalProperties: false},
  {type: 'array', maxItems: 0},
  {type: 'object', properties: {a: str, b: str, c: str}, required: ['a'], additionalProperties: false},
  {anyOf: [{const: 'yes'}, {const: 'no'}, {type: 'null'}]},
  {type: 'object', properties: {n: {type: 'integer', enum: [7, 8]}}, required: ['n'], additionalProperties: false},
  {type: 'string', enum: ['x', 'yy', 'zzz']},
  {type: 'object', properties: {list: {type: 'array', items: num, maxItems: 3}, flag: bool},
   required: ['list', 'flag'], additionalProperties: false},
  {type: 'array', items: {type: 'object', properties: {k: bool}, required: ['k'], additionalProperties: false}, maxItems: 2},
  {type: 'object', properties: {e: {enum: [null, true, 1.5]}}, required: ['e'], additionalProperties: false},
];
const MAX_TOKENS = 120;

async function post(port, body) {
  const r = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`,
                        {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify(body)});
  return {status: r.status, body: await r.json()};
}

(async () => {
  const t0 = Date.now();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ml-json-'));
  const model = path.join(tmp, 'bpe_q8_0.mlb');
  execFileSync(env.ML_PYTHON || '/usr/bin/python3', [path.join(SOURCE, 'tools', 'gen_random.py'), model, '--dim', '64',
    '--hidden', '128', '--layers', '2', '--heads', '4', '--kv-heads', '2', '--vocab', '320', '--seq', '256', '--seed', '9',
    '--wtype', 'q8_0', '--layout', 'rows', '-q']);
  const srv = await startServer([model, '-z', MLTK, '--parallel', '2', '-t', '1', '--queue', '128', '--chat-template', 'chatml']);
  const port = srv.port;
  const ajv = new Ajv({strict: false});
  const messages = [{role: 'user', content: 'JSON please'}];
  let counts = {stop: 0, length: 0}, msCon = 0, nCon = 0;
  try {
    check(SCHEMAS.length >= 30, `${SCHEMAS.length} schemas`, '');
    const jobs = [];
    for (const schema of SCHEMAS) {
      const validate = ajv.compile(schema);
      for (const seed of [1, 2, 3]) {
        jobs.push(post(port, {messages, temperature: 1, seed, max_tokens: MAX_TOKENS,
                              response_format: {type: 'json_schema', json_schema: {name: 's', schema}}}).then(({status, body}) => {
          const what = `schema ${JSON.stringify(schema)} seed ${seed}`;
          if (status !== 200) return check(false, what, JSON.stringify(body));
          const c = body.choices[0], text = c.message.content;
          counts[c.finish_reason] = (counts[c.finish_reason] || 0) + 1;
          if (c.finish_reason === 'stop') {
            let v;
            try { v = JSON.parse(text); } catch (e) { return check(false, what + ': parses', text); }
            check(validate(v), what + ': validates', text + ' ' + JSON.stringify(validate.errors));
          } else {
            check(c.finish_reason === 'length' && body.usage.completion_tokens === MAX_TOKENS,
                  what + ': "length" after exactly max_tokens', JSON.stringify(body));
          }
        }));
      }
    }
    await Promise.all(jobs);
    // json_object: any JSON object (one request at a time: these also time the constrained step).
    for (const seed of [1, 2, 3]) {
      const {status, body} = await post(port, {messages, temperature: 1, seed, max_tokens: MAX_TOKENS,
                                               response_format: {type: 'json_object'}});
      const c = body.choices && body.choices[0];
      if (status === 200) msCon += body.timings.predicted_ms, nCon += body.timings.predicted_n;
      let ok = status === 200 && (c.finish_reason === 'length' ? body.usage.completion_tokens === MAX_TOKENS : false);
      if (status === 200 && c.finish_reason === 'stop') {
        try { const v = JSON.parse(c.message.content); ok = v !== null && typeof v === 'object' && !Array.isArray(v); } catch (e) {}
      }
      check(ok, `json_object seed ${seed}`, JSON.stringify(body));
    }
    // Outside the subset: the engine's message, keyword and JSON pointer.
    const bad = await post(port, {messages, response_format: {type: 'json_schema', json_schema: {schema:
      {type: 'object', properties: {name: {type: 'string', pattern: 'a+'}}}}}});
    check(bad.status === 400 && /"pattern" at \/properties\/name/.test(bad.body.error.message),
          'a schema keyword outside the subset is a 400 naming it and its pointer', JSON.stringify(bad.body));
    const bad2 = await post(port, {messages, response_format: {type: 'xml'}});
    check(bad2.status === 400 && /response_format.type/.test(bad2.body.error.message), 'an unknown type is a 400', JSON.stringify(bad2.body));
    // The step time with a constraint (json_object above) against free generation, one request at a time.
    let msFree = 0, nFree = 0;
    for (const seed of [1, 2, 3]) {
      const {body} = await post(port, {messages, temperature: 1, seed, max_tokens: MAX_TOKENS});
      msFree += body.timings.predicted_ms, nFree += body.timings.predicted_n;
    }
    const con = msCon / nCon, free = msFree / nFree;
    console.log(`finish reasons: ${JSON.stringify(counts)}; step ${con.toFixed(3)} ms constrained vs ` +
                `${free.toFixed(3)} ms free: the constraint's share ~${(100 * Math.max(0, con - free) / con).toFixed(0)}% ` +
                '(a 64-dim random model, whose forward pass is tiny; on real models the forward pass dominates)');
    check(counts.stop > 0, 'some replies complete ("stop")', JSON.stringify(counts));
  } catch (e) {
    check(false, 'no exception', e.stack || String(e));
  } finally {
    srv.removeAllListeners('exit');
    const rc = await new Promise((resolve) => { srv.on('exit', (code) => resolve(code)); srv.kill('SIGTERM'); });
    check(rc === 0, 'ml_server stops cleanly on SIGTERM', String(rc));
    fs.rmSync(tmp, {recursive: true, force: true});
  }
  done(t0);
})();
