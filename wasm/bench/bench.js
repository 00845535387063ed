// wasm/bench's page script (bench.html): one engine, one model, one thread count per page load,
// driven by side_by_side.mjs through window.bench.run(opts):
//   opts: {engine: 'legacy-ml'|'wllama', model: URL, source: 'url'|'file', threads, ctx, kv (ours),
//          prompts: [text, ...], maxTokens}
// Both engines get the same model, the same greedy requests and the same clock:
//   - load: source 'url' (the default): the URL as each engine's users give it
//     (createEngine({model: url, cache: false}): streamed from fetch into wasm memory;
//     Wllama.loadModelFromUrl(url, {useCache: false}): downloaded into its OPFS store, then read
//     from there); 'file': a File fetched once by the page, given to createEngine / loadModel([file]);
//     then one warm-up completion ('Hello', 8 tokens);
//   - per prompt (each exactly --prompt-tokens tokens after BOS, starting with another word so
//     that no engine reuses more than BOS from the previous request): a streamed completion of maxTokens tokens, temperature 0, with
//     the ids 0..258 (<unk>, <s>, </s> and the 256 byte tokens of the llama2 vocabulary) banned by
//     logit_bias, so that a random-weight model neither stops early nor emits a partial UTF-8 piece
//     and every token is one streamed chunk;
//   - prompt time: wall time from the request to its first chunk (the prefill and the first
//     token's choice); decode time: first chunk to last chunk (maxTokens - 1 tokens);
//   - prompt tokens evaluated as each engine reports them (legacy-ml: usage.prompt_tokens minus
//     prompt_tokens_details.cached_tokens; wllama: timings.prompt_n), and wllama's own timings too.
// The wasm memory is read by the driver from the Workers (memhook.js); legacy-ml's own figure
// (engine.memory()) is returned as a cross-check.
import {createEngine} from './node_modules/legacy-ml/index.js';
import {Wllama} from './wllama/esm/index.js';

const log = (s) => {
  document.getElementById('log').textContent += s + '\n';
  console.log(s);  // the driver prints the page's console lines as progress
};
const BAN = {};
for (let id = 0; id <= 258; id++) BAN[id] = -1000;

async function openOurs(model, threads, ctx, kv) {
  const engine = await createEngine({model, threads, max_seq: ctx, cache: false, kv_cache: kv || 'f32'});
  return {
    info: {build: engine.info.build, threads: engine.info.threads, note: engine.info.threads_note},
    async *stream(prompt, maxTokens) {
      const req = {prompt, max_tokens: maxTokens, temperature: 0, logit_bias: BAN, stream: true,
                   stream_options: {include_usage: true}};
      for await (const c of await engine.completions.create(req)) {
        if (c.usage) yield {usage: {prompt_evaluated: c.usage.prompt_tokens - c.usage.prompt_tokens_details.cached_tokens,
                                    prompt_tokens: c.usage.prompt_tokens, completion_tokens: c.usage.completion_tokens}};
        else if (c.choices[0] && c.choices[0].text) yield {text: c.choices[0].text};
      }
    },
    memory: async () => (await engine.memory()).wasm_memory_bytes,
  };
}

async function openWllama(model, threads, ctx) {
  const quiet = {debug: () => {}, log: () => {}, warn: (...a) => console.warn(...a), error: (...a) => console.error(...a)};
  const w = new Wllama({default: new URL('./wllama/esm/wasm/wllama.wasm', location.href).href},
                       {suppressNativeLog: true, logger: quiet});
  // n_gpu_layers 0: the CPU (wasm) backend only; otherwise wllama offloads to WebGPU where it finds it
  const params = {n_threads: threads, n_ctx: ctx, n_gpu_layers: 0};
  if (typeof model === 'string') await w.loadModelFromUrl(model, {...params, useCache: false});
  else await w.loadModel([model], params);
  return {
    info: {build: w.isMultithread() ? 'multi-thread' : 'single-thread', threads: w.getNumThreads(), note: ''},
    async *stream(prompt, maxTokens) {
      const req = {prompt, max_tokens: maxTokens, temperature: 0, logit_bias: BAN, stream: true, cache_prompt: false};
      let timings = null, usage = null;
      for await (const c of await w.createCompletion(req)) {
        if (c.timings) timings = c.timings;
        if (c.usage) usage = c.usage;
        if (c.choices && c.choices[0] && c.choices[0].text) yield {text: c.choices[0].text};
      }
      yield {usage: {prompt_evaluated: timings ? timings.prompt_n : null, prompt_tokens: usage ? usage.prompt_tokens : null,
                     completion_tokens: usage ? usage.completion_tokens : timings ? timings.predicted_n : null},
             own: timings && {prompt_per_second: timings.prompt_per_second, predicted_per_second: timings.predicted_per_second,
                              prompt_n: timings.prompt_n, cache_n: timings.cache_n, predicted_n: timings.predicted_n}};
    },
    memory: async () => null,
  };
}

async function request(e, prompt, maxTokens) {
  const t0 = performance.now();
  let first = 0, last = 0, chunks = 0, text = '', usage = null, own = null;
  for await (const c of e.stream(prompt, maxTokens)) {
    if (c.text) {
      last = performance.now();
      if (!chunks++) first = last;
      text += c.text;
    } else {
      usage = c.usage;
      own = c.own || null;
    }
  }
  return {prompt_ms: first - t0, decode_ms: last - first, chunks, usage, own, text};
}

window.bench = {
  async run({engine, model, source, threads, ctx, kv, prompts, maxTokens}) {
    const url = new URL(model, location.href).href;
    const m = source === 'file' ? new File([await (await fetch(url)).blob()], url.split('/').pop()) : url;
    const t0 = performance.now();
    const e = await (engine === 'wllama' ? openWllama : openOurs)(m, threads, ctx, kv);
    const warm = await request(e, 'Hello', 8);
    const load_ms = performance.now() - t0;
    log(`${engine} ${model} ${threads}: loaded in ${load_ms.toFixed(0)} ms (with the warm-up), ${JSON.stringify(e.info)}`);
    const rounds = [];
    for (const p of prompts) {
      const r = await request(e, p, maxTokens);
      log(`  prompt ${r.prompt_ms.toFixed(0)} ms, ${r.chunks} chunks in ${r.decode_ms.toFixed(0)} ms`);
      rounds.push(r);
    }
    return {info: e.info, load_ms, warm_chunks: warm.chunks, rounds, own_memory: await e.memory(), isolated: crossOriginIsolated};
  },
};
window.ready = true;
