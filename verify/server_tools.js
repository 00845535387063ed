// ml_server's tool calls (issue 34 item 4) through the official OpenAI client (the `openai` npm
// package pinned in tools/npm): the tool-calling flow end to end on a random-weight model
// (tools/gen_random.py, the byte-level test tokenizer, --chat-template qwen3). A random model never
// "chooses" a tool, so the flow is made deterministic with tool_choice "required" and a named
// function: the reply must come back as tool_calls (finish_reason "tool_calls"), non-streaming and
// streaming, its arguments valid under the function's parameters (ajv, pinned in tools/npm); the
// tool result is then sent back (role "tool" with tool_call_id, the assistant message with its
// tool_calls) and a final answer comes. Also: the request errors that name their field.
//
//   node verify/server_tools.js   (environment: ML_SERVER, ML_SOURCE, ML_PYTHON — cmake/Tests.cmake)
// Exit status: 0 passed, 1 failed, 77 skipped (no openai or ajv in tools/npm: tools/setup.sh).
'use strict';
const {execFileSync} = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const spawned = require('./server_spawn.js');

const env = process.env;
const SOURCE = env.ML_SOURCE || path.join(__dirname, '..');
const MLTK = path.join(SOURCE, 'fuzz', 'data', 'encode_tokenizer.mltk');
const [OpenAI, Ajv] = spawned.npmPackages(['openai', 'ajv']);
spawned.needFiles([env.ML_SERVER]);
const {check, done} = spawned.checks();

const WEATHER = {type: 'object', properties: {city: {type: 'string', minLength: 1, maxLength: 12},
                                              unit: {enum: ['celsius', 'fahrenheit']}},
                 required: ['city', 'unit'], additionalProperties: false};
const ADD = {type: 'object', properties: {a: {type: 'integer'}, b: {type: 'number'}}, required: ['a', 'b'],
             additionalProperties: false};
const TOOLS = [{type: 'function', function: {name: 'get_weather', description: 'Current weather', parameters: WEATHER}},
               {type: 'function', function: {name: 'add', description: 'a + b', parameters: ADD}}];
const MAX_TOKENS = 160;

(async () => {
  const t0 = Date.now();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ml-tools-'));
  const model = path.join(tmp, 'bpe_q8_0.mlb');
  execFileSync(env.ML_PYTHON || '/usr/bin/python3', [path.join(SOURCE, 'tools', 'gen_random.py'), model, '--dim', '64',
    '--hidden', '128', '--layers', '2', '--heads', '4', '--kv-heads', '2', '--vocab', '320', '--seq', '2048', '--seed', '9',
    '--wtype', 'q8_0', '--layout', 'rows', '-q']);
  const srv = await spawned.startServer(env.ML_SERVER, [model, '-z', MLTK, '-t', '1', '--chat-template', 'qwen3']);
  const client = new OpenAI({baseURL: `http://127.0.0.1:${srv.port}/v1`, apiKey: 'none', maxRetries: 0});
  const ajv = new Ajv({strict: false});
  const validate = {get_weather: ajv.compile(WEATHER), add: ajv.compile(ADD)};
  const base = {model: 'm', temperature: 1, max_tokens: MAX_TOKENS};
  function callsOk(calls, what, only) {
    const ok = Array.isArray(calls) && calls.length === 1 && calls.every((c) => {
      if (typeof c.id !== 'string' || !c.id || c.type !== 'function' || !validate[c.function.name]) return false;
      if (only && c.function.name !== only) return false;
      try {
        return validate[c.function.name](JSON.parse(c.function.arguments));
      } catch (e) {
        return false;
      }
    });
    check(ok, what, JSON.stringify(calls));
    return ok;
  }
  try {
    const user = {role: 'user', content: 'What is the weather in Oslo?'};
    // tool_choice "required", several seeds: always one valid call of one of the tools.
    let first = null;
    for (const seed of [1, 2, 3, 4, 5]) {
      const r = await client.chat.completions.create({...base, seed, messages: [user], tools: TOOLS, tool_choice: 'required'});
      const ch = r.choices[0];
      check(ch.finish_reason === 'tool_calls', `required, seed ${seed}: finish_reason tool_calls`, JSON.stringify(ch));
      callsOk(ch.message.tool_calls, `required, seed ${seed}: one call, its arguments valid (${ch.message.tool_calls &&
        ch.message.tool_calls[0].function.name})`);
      if (!first) first = ch.message;
    }
    // A named function.
    for (const seed of [1, 2]) {
      const r = await client.chat.completions.create({...base, seed, messages: [user], tools: TOOLS,
        tool_choice: {type: 'function', function: {name: 'add'}}});
      check(r.choices[0].finish_reason === 'tool_calls', `named "add", seed ${seed}: finish_reason tool_calls`,
            JSON.stringify(r.choices[0]));
      callsOk(r.choices[0].message.tool_calls, `named "add", seed ${seed}: a valid call of add`, 'add');
    }
    // Streaming: the same request gives the same call, assembled from the deltas.
    const stream = await client.chat.completions.create({...base, seed: 1, messages: [user], tools: TOOLS,
      tool_choice: 'required', stream: true});
    const calls = [];
    let finish = null;
    for await (const chunk of stream) {
      const c = chunk.choices[0];
      if (c.finish_reason) finish = c.finish_reason;
      for (const d of (c.delta && c.delta.tool_calls) || []) {
        calls[d.index] = calls[d.index] || {id: d.id, type: d.type, function: {name: '', arguments: ''}};
        calls[d.index].function.name += d.function.name || '';
        calls[d.index].function.arguments += d.function.arguments || '';
      }
    }
    check(finish === 'tool_calls', 'streamed: finish_reason tool_calls', String(finish));
    callsOk(calls, 'streamed: one valid call');
    const fns = (list) => JSON.stringify(list.map((c) => [c.function.name, c.function.arguments]));
    check(fns(calls) === fns(first.tool_calls),
          'streamed: the same call as the non-streamed reply of that seed', JSON.stringify([calls, first.tool_calls]));
    // The tool's result goes back; a final answer comes (content, no calls parsed out of it).
    const call = first.tool_calls[0];
    const final = await client.chat.completions.create({...base, seed: 1, max_tokens: 24, tools: TOOLS, messages: [
      user, {role: 'assistant', content: null, tool_calls: first.tool_calls},
      {role: 'tool', tool_call_id: call.id, content: JSON.stringify({temperature: 21, sky: 'clear'})}]});
    const fc = final.choices[0];
    check(['stop', 'length'].includes(fc.finish_reason) && typeof fc.message.content === 'string' &&
          !fc.message.tool_calls, 'the tool result sent back: a final answer', JSON.stringify(fc));
    // tool_choice "none": a plain reply.
    const none = await client.chat.completions.create({...base, seed: 1, max_tokens: 8, messages: [user], tools: TOOLS,
      tool_choice: 'none'});
    check(typeof none.choices[0].message.content === 'string' && !none.choices[0].message.tool_calls,
          'tool_choice none: a plain reply', JSON.stringify(none.choices[0]));
    // Errors name their field.
    const errors = [
      [{tools: [{type: 'function', function: {name: 'f', parameters: {type: 'object', properties: {x: {type: 'string', pattern: 'a'}}}}}],
        tool_choice: 'required'}, /'tools' \(a function's parameters\).*pattern/],
      [{tools: TOOLS, tool_choice: {type: 'function', function: {name: 'nope'}}}, /tool_choice.function.name.*nope/],
      [{tools: TOOLS, tool_choice: 'sometimes'}, /'tool_choice' must be/],
      [{tool_choice: 'auto'}, /'tool_choice' needs 'tools'/],
      [{tools: [{type: 'function', function: {}}]}, /'tools\[0\].function.name'/],
      [{tools: {}}, /'tools' must be an array/],
      [{messages: [user, {role: 'assistant', tool_calls: [{type: 'function', function: {name: 'add', arguments: '{x'}}]}]},
        /'messages\[1\].tool_calls\[0\].function.arguments'/],
    ];
    for (const [extra, re] of errors) {
      let msg = 'no error';
      try {
        await client.chat.completions.create({...base, max_tokens: 4, messages: [user], ...extra});
      } catch (e) {
        msg = `${e.status} ${e.message}`;
      }
      check(/^400 /.test(msg) && re.test(msg), `400 naming the field: ${re}`, msg);
    }
  } catch (e) {
    check(false, 'no exception', e.stack || String(e));
  } finally {
    const rc = await spawned.stopServer(srv);
    check(rc === 0, 'ml_server stops cleanly on SIGTERM', String(rc));
    fs.rmSync(tmp, {recursive: true, force: true});
  }
  done(t0);
})();
