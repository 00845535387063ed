// wasm.npm, node half (wasm/package/test/npm_test.sh runs it in a folder where the packed tarball was
// installed, so `legacy-ml` is the installed package, not the source tree):
//   node --expose-gc node_test.mjs SHARED_DIR BIG_MODEL.mlb TOKENIZER.bin ML_RUN
// Checks, on stories260K.gguf (its own tokenizer):
//   - tokenize gives llama2.c's ids of "Once upon a time" (shared/golden/README.md), detokenize
//     gives the text back, a bad id is a one-line error;
//   - completions.create at temperature 0 gives llama2.c run.c's golden text (outside reference);
//     sampled (seed, temperature, top_p) it gives the native ml_run's text for the same settings;
//   - streaming: the chunks' text joined equals the non-streamed text, OpenAI chunk shapes
//     (first delta has the role, only the last a finish_reason, include_usage's usage chunk);
//   - a stop string ends the text before it (finish_reason stop), max_tokens gives 'length';
//   - an AbortSignal stops a stream at once (AbortError, at most one more chunk), and the engine
//     goes on serving;
//   - chat (zephyr format): two turns; the second reuses the first's prompt and reply from the KV
//     cache (usage.prompt_tokens_details.cached_tokens >= the first turn's prompt tokens) and both
//     replies equal the native `ml_run --chat --chat-template zephyr` ones;
//   - unload frees the memory: a stories15M-shape model (BIG_MODEL) loaded from an ArrayBuffer,
//     RSS measured before loading, loaded, and after unload + gc;
//   - bad requests give one-line errors naming the field.
import {execFileSync} from 'node:child_process';
import fs from 'node:fs';

import {createEngine} from 'legacy-ml';

const [shared, bigModel, bigTokenizer, mlRun] = process.argv.slice(2);
let failures = 0;
function check(ok, what) {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures++;
}
async function rejects(p, needle, what) {
  try {
    await p;
    check(false, `${what}: no error`);
  } catch (e) {
    check(String(e.message).includes(needle) && !String(e.message).includes('\n'), `${what}: ${e.name}: ${e.message}`);
  }
}
const MB = (b) => (b / 1048576).toFixed(1);

const gguf = `${shared}/models/stories260K/stories260K.gguf`;
const progress = [];
const engine = await createEngine({model: gguf, onProgress: (p) => progress.push(p), chat_template: 'zephyr'});
check(engine.info.worker === false && engine.info.build === 'simd128' && engine.info.threads === 1,
      `engine.info: ${JSON.stringify({build: engine.info.build, isa: engine.info.isa, threads: engine.info.threads, worker: engine.info.worker})}`);
check(progress.length > 0 && progress.at(-1).fraction === 1, `onProgress: ${JSON.stringify(progress.at(-1))}`);

// Tokenizer.
const ids = await engine.tokenize('Once upon a time');
check(JSON.stringify(ids) === '[1,403,407,261,378]', `tokenize: ${ids}`);
check(await engine.detokenize(ids.slice(1)) === 'Once upon a time', 'detokenize');
await rejects(engine.detokenize([1, 999999]), 'outside the vocabulary', 'detokenize of a bad id');

// Greedy completion = llama2.c's golden text (200 positions: 5 prompt, 195 fed generated + 1).
const golden = fs.readFileSync(`${shared}/golden/once_upon_a_time.txt`, 'utf8');
const greedy = await engine.completions.create({prompt: 'Once upon a time', temperature: 0, max_tokens: 196});
check(greedy.object === 'text_completion' && greedy.choices[0].finish_reason === 'length' &&
      greedy.usage.completion_tokens === 196 && greedy.usage.prompt_tokens === 5, `greedy shape: ${JSON.stringify(greedy.usage)}`);
check('Once upon a time' + greedy.choices[0].text + '\n' === golden, 'greedy completion = llama2.c run.c golden text');

// Sampled completion = native ml_run's.
const samp = {temperature: 0.8, top_p: 0.9, seed: 42};
const sampled = await engine.completions.create({prompt: 'Once upon a time', max_tokens: 60, ...samp});
const native = execFileSync(mlRun, [gguf, '-i', 'Once upon a time', '-n', '64', '--temp', '0.8', '--top-p', '0.9', '--seed', '42'],
                            {encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore']});
check(native === 'Once upon a time' + sampled.choices[0].text + '\n', `sampled completion = native ml_run's (${sampled.usage.completion_tokens} tokens)`);

// Streaming.
const chunks = [];
for await (const c of await engine.completions.create({prompt: 'Once upon a time', max_tokens: 60, stream: true, stream_options: {include_usage: true}, ...samp}))
  chunks.push(c);
const usage = chunks.at(-1);
const body = chunks.slice(0, -1);
check(body.map((c) => c.choices[0].text).join('') === sampled.choices[0].text, `stream: ${body.length} chunks, joined = the non-streamed text`);
check(body.slice(0, -1).every((c) => c.choices[0].finish_reason === null) && body.at(-1).choices[0].finish_reason === 'length' &&
      usage.choices.length === 0 && usage.usage.completion_tokens === 60, 'stream: finish_reason only last, usage chunk');

// Stop string and max_tokens.
const cut = greedy.choices[0].text.indexOf(' the ', 20);
const stopped = await engine.completions.create({prompt: 'Once upon a time', temperature: 0, max_tokens: 196, stop: [' the ']});
check(cut > 0 && stopped.choices[0].text === greedy.choices[0].text.slice(0, greedy.choices[0].text.indexOf(' the ')) &&
      stopped.choices[0].finish_reason === 'stop', `stop string: ${JSON.stringify(stopped.choices[0].text)}`);

// Abort.
const ac = new AbortController();
let seen = 0, abortedAt = -1;
try {
  for await (const c of await engine.completions.create({prompt: 'Once', temperature: 0, max_tokens: 150, stream: true, signal: ac.signal})) {
    if (++seen === 5) {
      abortedAt = seen;
      ac.abort();
    }
  }
  check(false, 'abort: the stream ended without an error');
} catch (e) {
  check(e.name === 'AbortError' && seen <= abortedAt + 1, `abort: ${e.name} after ${seen} chunks (aborted at ${abortedAt})`);
}
const again = await engine.completions.create({prompt: 'Once upon a time', temperature: 0, max_tokens: 196});
check(again.choices[0].text === greedy.choices[0].text, 'after an abort the engine serves the same greedy text');
await rejects(engine.completions.create({prompt: 'x', signal: AbortSignal.abort()}), 'aborted', 'an already aborted signal');

// Chat: two turns, prefix reuse, = native ml_run --chat.
const chatOpts = {temperature: 0, max_tokens: 40};
const messages = [{role: 'user', content: 'Tell me a story'}];
const t1 = await engine.chat.completions.create({messages, ...chatOpts});
check(t1.object === 'chat.completion' && t1.choices[0].message.role === 'assistant', `chat turn 1: ${JSON.stringify(t1.usage)}`);
messages.push(t1.choices[0].message, {role: 'user', content: 'What happened next?'});
const t2chunks = [];
for await (const c of await engine.chat.completions.create({messages, stream: true, stream_options: {include_usage: true}, ...chatOpts}))
  t2chunks.push(c);
const t2usage = t2chunks.at(-1).usage;
const t2text = t2chunks.slice(0, -1).map((c) => c.choices[0].delta.content).join('');
check(t2chunks[0].choices[0].delta.role === 'assistant' && t2chunks[0].object === 'chat.completion.chunk', 'chat stream: first delta has the role');
check(t2usage.prompt_tokens_details.cached_tokens >= t1.usage.prompt_tokens &&
      t2usage.prompt_tokens_details.cached_tokens < t2usage.prompt_tokens,
      `chat turn 2 reuses the KV cache: ${t2usage.prompt_tokens_details.cached_tokens} of ${t2usage.prompt_tokens} prompt tokens (turn 1's prompt: ${t1.usage.prompt_tokens})`);
const nativeChat = execFileSync(mlRun, [gguf, '--chat', '--chat-template', 'zephyr', '--temp', '0', '-n', '40', '--seed', '1'],
                                {encoding: 'utf8', input: 'Tell me a story\nWhat happened next?\n', stdio: ['pipe', 'pipe', 'ignore']});
check(nativeChat === `${t1.choices[0].message.content}\n${t2text}\n`, 'chat replies = native ml_run --chat --chat-template zephyr');

// Bad requests: one line naming the field.
await rejects(engine.chat.completions.create({messages: []}), 'messages', 'empty messages');
await rejects(engine.chat.completions.create({messages: [{role: 'bot', content: 'x'}]}), 'messages[0].role', 'bad role');
await rejects(engine.completions.create({prompt: 'x', temperature: -1}), 'temperature', 'bad temperature');
await rejects(engine.completions.create({prompt: 'x', n: 2}), 'n:', 'n = 2');
await rejects(engine.completions.create({prompt: 'x', top_p: 0}), 'top_p', 'top_p 0');
await rejects(engine.completions.create({prompt: 'x', stop: [3]}), 'stop', 'a stop that is not a string');
await engine.unload();
await rejects(engine.completions.create({prompt: 'x'}), 'unloaded', 'a request after unload');
await rejects(createEngine({model: `${shared}/no/such.gguf`}), 'no/such.gguf', 'a missing model file');
await rejects(createEngine({model: gguf, kv_cache: 'f8'}), 'kv_cache', 'a kv_cache that is not f32, f16 or q8_0');
{  // an F16 KV cache: half the arena's cache bytes, and it generates
  const f16 = await createEngine({model: gguf, kv_cache: 'f16'});
  const i16 = f16.info.model, i32 = engine.info.model;
  const kv32 = 2 * i32.n_layers * i32.max_seq * i32.n_kv_heads * (i32.dim / i32.n_heads) * 4;
  const r = await f16.completions.create({prompt: 'Once upon a time', max_tokens: 16, temperature: 0});
  // (the F16 cache's one conversion row per thread: 1 KiB here)
  check(i16.kv_cache === 'f16' && i32.kv_cache === 'f32' && Math.abs(i32.arena_bytes - i16.arena_bytes - kv32 / 2) <= 4096 &&
        r.usage.completion_tokens === 16,
        `kv_cache 'f16': arena ${i16.arena_bytes} B against ${i32.arena_bytes} (the F32 cache ${kv32} B halved), ${r.usage.completion_tokens} tokens`);
  await f16.unload();
}

// unload frees the memory (RSS; the WebAssembly memory is released when the instance is collected).
const settle = async () => {
  for (let i = 0; i < 4; i++) {
    globalThis.gc();
    await new Promise((r) => setTimeout(r, 50));
  }
  return process.memoryUsage().rss;
};
const rss0 = await settle();
const big = await createEngine({model: fs.readFileSync(bigModel).buffer, tokenizer: bigTokenizer});
const wasmBytes = (await big.memory()).wasm_memory_bytes;
await big.completions.create({prompt: 'Once upon a time', max_tokens: 8, seed: 3});
const rss1 = await settle();
await big.unload();
const rss2 = await settle();
console.log(`memory: RSS ${MB(rss0)} MB before, ${MB(rss1)} MB loaded (wasm memory ${MB(wasmBytes)} MB), ${MB(rss2)} MB after unload`);
check(rss1 - rss0 > 0.5 * fs.statSync(bigModel).size, 'memory: loading raised RSS by at least half the file');
// The model is held once, in the WebAssembly memory (wasm/loader.js streams it there): unload must
// give that back. (Not compared with the whole rise: V8 keeps some of the compiled module's code.)
check(rss1 - rss2 > Math.max(fs.statSync(bigModel).size, 0.5 * wasmBytes),
      `memory: unload returned ${MB(rss1 - rss2)} MB, more than the file and half the wasm memory`);

console.log(failures ? `${failures} FAILED` : 'all passed');
process.exit(failures ? 1 : 0);
