// ml_server against the official OpenAI client (the `openai` npm package pinned in tools/npm):
// non-streaming and streaming completions and chat completions, greedy, each text checked against
// ml_run's for the same prompt tokens. Starts and stops its servers itself (--port 0, loopback).
//
//   node verify/server_openai.js      (environment: ML_SERVER, ML_RUN, ML_TOKENIZE, ML_MODELS,
//                                      ML_SHARED, ML_SOURCE, ML_PYTHON — set by cmake/Tests.cmake)
// Exit status: 0 passed, 1 failed, 77 skipped (no tools/npm/node_modules/openai: tools/setup.sh).
'use strict';
const {execFileSync} = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const spawned = require('./server_spawn.js');

const env = process.env;
const SOURCE = env.ML_SOURCE || path.join(__dirname, '..');
const TOK512 = path.join(env.ML_SHARED || '', 'models', 'stories260K', 'tok512.bin');
const STORIES = path.join(env.ML_MODELS || '', 'stories260K_q8_0.mlb');
const MLTK = path.join(SOURCE, 'fuzz', 'data', 'encode_tokenizer.mltk');

const [OpenAI] = spawned.npmPackages(['openai']);
spawned.needFiles([env.ML_SERVER, env.ML_RUN, env.ML_TOKENIZE, TOK512, STORIES]);
const {check, done} = spawned.checks();

const startServer = (args) => spawned.startServer(env.ML_SERVER, args);

const {stopServer} = spawned;

function mlRun(model, tok, args) {
  return execFileSync(...spawned.emulated(env.ML_RUN, [model, '-z', tok, '--temp', '0', ...args]), {stdio: ['ignore', 'pipe', 'ignore']}).toString('utf8');
}

async function collect(stream, chat) {
  let text = '', finish = null;
  for await (const chunk of stream) {
    const c = chunk.choices[0];
    if (!c) continue;
    text += chat ? (c.delta && c.delta.content) || '' : c.text || '';
    if (c.finish_reason) finish = c.finish_reason;
  }
  return {text, finish};
}

async function completions() {
  const srv = await startServer([STORIES, '-z', TOK512, '--parallel', '2', '-t', '1', '--api-key', 'k-test']);
  try {
    const client = new OpenAI({baseURL: `http://127.0.0.1:${srv.port}/v1`, apiKey: 'k-test', maxRetries: 0});
    const models = await client.models.list();
    check(models.data.length === 1 && models.data[0].id === 'stories260K_q8_0.mlb', 'models.list', JSON.stringify(models.data));
    for (const prompt of ['Once upon a time', 'Lily and Ben']) {
      const r = await client.completions.create({model: 'stories260K', prompt, max_tokens: 32, temperature: 0});
      const n = r.usage.prompt_tokens + 32 - 1;
      const want = mlRun(STORIES, TOK512, ['-i', prompt, '-n', String(n)]);
      check(want === prompt + r.choices[0].text + '\n', `completions.create "${prompt}" = ml_run`,
            JSON.stringify({got: r.choices[0].text, want}));
      check(r.choices[0].finish_reason === 'length' && r.usage.completion_tokens === 32, 'finish_reason and usage',
            JSON.stringify(r.usage));
      const s = await collect(await client.completions.create({model: 'stories260K', prompt, max_tokens: 32,
                                                               temperature: 0, stream: true}), false);
      check(s.text === r.choices[0].text && s.finish === 'length', `completions.create stream "${prompt}" = non-stream`,
            JSON.stringify(s));
      const l = await client.completions.create({model: 'stories260K', prompt, max_tokens: 8, temperature: 0, logprobs: 2});
      const lp = l.choices[0].logprobs;
      check(lp && [lp.tokens, lp.token_logprobs, lp.text_offset].every((a) => a.length === l.usage.completion_tokens) &&
            lp.top_logprobs.every((t) => Object.keys(t).length <= 2) && lp.tokens.join('') === l.choices[0].text,
            `completions logprobs "${prompt}": {tokens, token_logprobs, top_logprobs, text_offset}`, JSON.stringify(lp));
    }
    let denied = false;
    try {
      await new OpenAI({baseURL: `http://127.0.0.1:${srv.port}/v1`, apiKey: 'wrong', maxRetries: 0}).models.list();
    } catch (e) {
      denied = e.status === 401;
    }
    check(denied, 'a wrong API key is a 401 (OpenAI.AuthenticationError)', '');
  } finally {
    check((await stopServer(srv)) === 0, 'ml_server stops cleanly on SIGTERM', '');
  }
}

async function chat() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ml-openai-'));
  const model = path.join(tmp, 'bpe_q8_0.mlb');
  execFileSync(env.ML_PYTHON || '/usr/bin/python3', [path.join(SOURCE, 'tools', 'gen_random.py'), model, '--dim', '64',
    '--hidden', '128', '--layers', '2', '--heads', '4', '--kv-heads', '2', '--vocab', '320', '--seq', '256', '--seed', '9',
    '--wtype', 'q8_0', '--layout', 'rows', '-q']);
  const srv = await startServer([model, '-z', MLTK, '--parallel', '2', '-t', '1', '--chat-template', 'chatml']);
  try {
    const client = new OpenAI({baseURL: `http://127.0.0.1:${srv.port}/v1`, apiKey: 'none', maxRetries: 0});
    const messages = [{role: 'system', content: 'Be brief.'}, {role: 'user', content: 'Café? naïve 日本'}];
    const rendered = '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nCafé? naïve 日本<|im_end|>\n' +
                     '<|im_start|>assistant\n';
    const r = await client.chat.completions.create({model: 'm', messages, max_tokens: 16, temperature: 0});
    const text = r.choices[0].message.content;
    const ids = execFileSync(...spawned.emulated(env.ML_TOKENIZE, [MLTK, '-i', rendered, '--no-bos'])).toString().trim();
    const nIds = ids.split(/\s+/).length;
    check(nIds === r.usage.prompt_tokens, 'chat prompt tokens = ml_tokenize of the rendered ChatML', `${nIds} vs ${r.usage.prompt_tokens}`);
    const steps = nIds + r.usage.completion_tokens - (r.choices[0].finish_reason === 'stop' ? 0 : 1);
    const want = mlRun(model, MLTK, ['--token-ids', ids, '-n', String(steps)]);
    check(want === rendered + text + '\n', 'chat.completions.create = ml_run on the same tokens', JSON.stringify({text, want}));
    const s = await collect(await client.chat.completions.create({model: 'm', messages, max_tokens: 16, temperature: 0,
                                                                  stream: true}), true);
    check(s.text === text && s.finish === r.choices[0].finish_reason, 'chat.completions.create stream = non-stream',
          JSON.stringify({s, text}));
    // logprobs in OpenAI's shape, as the client types them (ChatCompletionTokenLogprob).
    const l = await client.chat.completions.create({model: 'm', messages, max_tokens: 8, temperature: 0, logprobs: true,
                                                    top_logprobs: 2});
    const c = l.choices[0].logprobs && l.choices[0].logprobs.content;
    check(Array.isArray(c) && c.length === l.usage.completion_tokens && c.every((e) =>
            typeof e.token === 'string' && typeof e.logprob === 'number' && Array.isArray(e.bytes) &&
            e.top_logprobs.length === 2 && Math.abs(e.top_logprobs[0].logprob - e.logprob) < 1e-5 &&
            e.top_logprobs[0].logprob >= e.top_logprobs[1].logprob),
          'chat logprobs: choices[].logprobs.content[] of {token, logprob, bytes, top_logprobs}', JSON.stringify(c));
  } finally {
    check((await stopServer(srv)) === 0, 'ml_server stops cleanly on SIGTERM', '');
    fs.rmSync(tmp, {recursive: true, force: true});
  }
}

(async () => {
  const t0 = Date.now();
  try {
    await completions();
    await chat();
  } catch (e) {
    check(false, 'no exception', e.stack || String(e));
  }
  done(t0);
})();
