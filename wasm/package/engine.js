// legacy-ml package: the engine itself, where the model lives (a Worker in the browser, the calling
// thread in node). index.js is the API; this file does the work behind each call:
//   open(opts, onProgress)          the module this runtime should run (builds.json: simd128, scalar,
//                                   threaded; loader.js pickVariant), the model streamed into one
//                                   buffer in wasm memory and opened there (wasm/loader.js: cache,
//                                   size refusal), the chat format
//   generate(kind, request, emit)   one OpenAI request ('chat' or 'completion'): the prompt through
//                                   the one session (ml.js Model: the KV cache's common prefix kept,
//                                   batched prefill), tokens until a stop; emit(chunk) per piece of
//                                   text; returns the whole response. Yields to the event loop
//                                   after each prefill batch and token, so abort() lands at once.
//   tokenize / detokenize / unload / info
import {Model, browserHasSimd128, writeFile} from './ml.js';
import {freeModel, loadModel, openModel, pickVariant} from './loader.js';

// createEngine's kv_cache → ml_options.kv_type (runtime/ml.h ml_kv_type).
const KV_TYPES = {f32: 0, f16: 1, q8_0: 2};

const FINISH = ['none', 'stop', 'stop', 'length', 'length', 'stop'];  // ml_finish → OpenAI finish_reason

function inNode() {
  return typeof process !== 'undefined' && !!(process.versions && process.versions.node) &&
         typeof window === 'undefined' && typeof WorkerGlobalScope === 'undefined';
}

// A macrotask turn: lets a message (abort) in between two tokens.
function yieldTurn() {
  if (inNode()) return new Promise((r) => setImmediate(r));
  return new Promise((r) => {
    const ch = new MessageChannel();
    ch.port1.onmessage = () => {
      ch.port1.close();
      r();
    };
    ch.port2.postMessage(0);
  });
}

export class AbortedError extends Error {
  constructor() {
    super('generation aborted');
    this.name = 'AbortError';
  }
}

function num(v, name, lo, hi, dflt) {
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < lo || v > hi) throw new Error(`${name}: ${v} is not a number in [${lo}, ${hi}]`);
  return v;
}

export class EngineCore {
  constructor() {
    this.model = null;
    this.M = null;
    this.aborted = new Set();
    this.queue = Promise.resolve();
  }

  // The build: opts.build if given, else loader.js pickVariant: the threaded build on a
  // cross-origin-isolated page (SharedArrayBuffer) when the package has it and more than one
  // thread may run, simd128 where the runtime has WebAssembly SIMD, scalar otherwise.
  choose(opts, builds) {
    const have = {simd128: !!builds.simd128, scalar: !!builds.scalar, simd128_threads: !!builds.threaded};
    const isolated = !inNode() && !!globalThis.crossOriginIsolated;
    if (opts.build) {
      if (!have[opts.build]) throw new Error(`build: this package has no ${opts.build} build (it has: ${Object.keys(have).filter((b) => have[b]).join(', ')})`);
      if (opts.build === 'simd128_threads' && !isolated)
        throw new Error(`build: simd128_threads needs a cross-origin-isolated page (COOP/COEP headers)${inNode() ? '; node runs the single-thread builds' : ''}`);
      return {variant: opts.build, reason: `the build option asked for ${opts.build}`};
    }
    const simd = opts.simd ?? browserHasSimd128();  // the page's probe (index.js), else this thread's
    const pick = pickVariant({simd, isolated, available: have});
    if (pick.variant === 'simd128_threads' && opts.threads === 1)
      return {variant: 'simd128', reason: 'the threads option asked for one thread'};
    if (inNode() && pick.variant !== 'scalar') return {variant: pick.variant, reason: 'node: one thread (the threaded build runs in pages)'};
    return pick;
  }

  async open(opts, onProgress) {
    const builds = await this.builds();
    const requested = opts.threads ?? 0;  // 0: as many as the build gives (one per core, at most 16)
    if (!Number.isInteger(requested) || requested < 0) throw new Error(`threads: ${opts.threads} is not a whole number >= 0`);
    const kvCache = opts.kv_cache ?? 'f32';
    if (!(kvCache in KV_TYPES)) throw new Error(`kv_cache: ${JSON.stringify(opts.kv_cache)} is not 'f32', 'f16' or 'q8_0'`);
    const {variant, reason} = this.choose(opts, builds);
    const url = new URL(`./ml_web_${variant}.mjs`, import.meta.url);
    const moduleOpts = {print: () => {}, printErr: (s) => console.warn(s)};
    if (inNode()) {
      const fs = await import('node:fs/promises');
      moduleOpts.wasmBinary = await fs.readFile(new URL(`./ml_web_${variant}.wasm`, import.meta.url));
    } else {
      moduleOpts.locateFile = (f) => new URL(`./${f}`, import.meta.url).href;  // .wasm, the threads' .worker.js
    }
    this.M = await (await import(url.href)).default(moduleOpts);
    const M = this.M;
    const progress = onProgress && ((p) => onProgress({loaded: p.loaded, total: p.total, fraction: p.share, phase: p.phase}));
    const cache = opts.cache ?? true;
    const handle = await loadModel(M, opts.model, {onProgress: progress, cache});
    let tok = null;
    if (opts.tokenizer) {  // a .mlb's tokenizer: through the same loader, into the module's file system
      const t = await loadModel(M, opts.tokenizer, {cache});
      writeFile(M, tok = '/model/tokenizer', M.HEAPU8.slice(t.ptr, t.ptr + t.bytes));  // a copy: the write may grow memory
      freeModel(M, t);
    }
    const threaded = variant === 'simd128_threads';
    const max = M._mlw_max_threads();
    const threads = !threaded ? 1 : requested === 0 ? M._mlw_threads() : Math.min(requested, max);
    const note = threaded ? (requested > max ? `${requested} threads asked for; this page's build runs at most ${max}` : '')
                          : (requested > 1 ? `${requested} threads asked for; one runs: ${reason}` : '');
    let ctx;
    try {
      ctx = openModel(M, handle, {tokenizerPath: tok, threads, maxSeq: opts.max_seq || 0, kvType: KV_TYPES[kvCache]});
    } catch (e) {
      freeModel(M, handle);
      throw e;
    } finally {
      if (tok) M.FS.unlink(tok);
    }
    this.handle = handle;  // a .mlb's weights are used where they lie: freed after ml_close (unload)
    this.model = new Model(M, ctx, null);
    this.model.configure({});
    const m = this.model;
    this.chat = {format: -1, error: null};
    try {
      this.chat.format = m.chatFormat(opts.chat_template || null);
    } catch (e) {
      this.chat.error = e.message;
    }
    this.name = opts.model_id || (typeof opts.model === 'string' ? opts.model.split('/').pop() : 'legacy-ml');
    this.info = {
      build: variant,
      build_reason: reason,
      simd128: variant !== 'scalar',
      threaded,
      threads,
      threads_requested: requested,
      threads_note: note,
      isolated: !inNode() && !!globalThis.crossOriginIsolated,
      isa: JSON.parse(M.UTF8ToString(M._mlw_build_json())).isa,
      chat_format: this.chat.format > 0 ? m.chatFormatName(this.chat.format) : null,
      model: {...m.info, name: this.name, format: handle.format, from_cache: !!handle.fromCache, kv_cache: kvCache},
      wasm_memory_bytes: M.HEAPU8.length,
    };
    return this.info;
  }

  async builds() {
    const url = new URL('./builds.json', import.meta.url);
    if (inNode()) {
      const fs = await import('node:fs/promises');
      return JSON.parse(await fs.readFile(url, 'utf8'));
    }
    const r = await fetch(url);
    if (!r.ok) throw new Error(`${url.href}: HTTP ${r.status}`);
    return r.json();
  }

  need() {
    if (!this.model) throw new Error('the engine is unloaded');
    return this.model;
  }

  tokenize(text, addBos = true) {
    return this.need().encode(String(text), addBos);
  }

  detokenize(ids) {
    return this.need().decode(ids);
  }

  abort(id) {
    this.aborted.add(id);
  }

  memory() {
    return {wasm_memory_bytes: this.M ? this.M.HEAPU8.length : 0};
  }

  // The prompt ids and stop ids of a request; throws one line naming a bad field.
  prompt(kind, req) {
    const m = this.need();
    const bos = m.info.bos_id;
    if (kind === 'chat') {
      if (!Array.isArray(req.messages) || req.messages.length === 0) throw new Error('messages: a non-empty array');
      req.messages.forEach((msg, i) => {
        if (!msg || !['system', 'user', 'assistant'].includes(msg.role)) throw new Error(`messages[${i}].role: system, user or assistant`);
        if (typeof msg.content !== 'string') throw new Error(`messages[${i}].content: a string`);
      });
      if (this.chat.format <= 0) throw new Error(`chat: ${this.chat.error}`);
      const ids = m.chatEncode(this.chat.format, req.messages.map(({role, content}) => ({role, content})), 1);
      const stops = m.chatStopIds(this.chat.format);
      return {ids, stopIds: bos >= 0 ? [bos, ...stops] : stops};
    }
    if (typeof req.prompt !== 'string') throw new Error('prompt: a string');
    const ids = m.encode(req.prompt, true);
    const stops = m.info.stop_ids || [];
    return {ids, stopIds: bos >= 0 ? [bos, ...stops] : stops};
  }

  // Requests run one after the other, in the order they came (an aborted one ends at its next token).
  generate(kind, id, req, emit) {
    const mine = this.queue.then(() => this.run(this.need(), kind, id, req, emit));
    this.queue = mine.catch(() => {}).finally(() => this.aborted.delete(id));
    return mine;
  }

  async run(m, kind, id, req, emit) {
    if (req.n !== undefined && req.n !== 1) throw new Error('n: only 1 is supported');
    const maxTokens = num(req.max_completion_tokens ?? req.max_tokens, 'max_tokens', 0, 1 << 30, 0);
    const stop = req.stop == null ? [] : Array.isArray(req.stop) ? req.stop : [req.stop];
    if (stop.some((s) => typeof s !== 'string')) throw new Error('stop: a string or an array of strings');
    const rf = req.response_format;
    const json = rf && rf.type === 'json_object' ? {json_object: true, json_schema: null}
               : rf && rf.type === 'json_schema' ? {json_object: false, json_schema: (rf.json_schema && rf.json_schema.schema) || rf.schema}
               : {json_object: false, json_schema: null};
    if (rf && !['json_object', 'json_schema', 'text'].includes(rf.type)) throw new Error(`response_format.type: ${rf.type}: text, json_object or json_schema`);
    const seed = req.seed ?? Math.floor(Math.random() * 2 ** 31) + 1;
    if (req.top_p === 0) throw new Error('top_p: 0 is not in (0, 1]');
    m.configure({
      temperature: num(req.temperature, 'temperature', 0, 2, 1),
      top_p: num(req.top_p, 'top_p', 0, 1, 1),
      seed,
      presence_penalty: num(req.presence_penalty, 'presence_penalty', -2, 2, 0),
      frequency_penalty: num(req.frequency_penalty, 'frequency_penalty', -2, 2, 0),
      logit_bias: req.logit_bias || {},
      ...json,
    });
    m.setStops(stop);
    const {ids, stopIds} = this.prompt(kind, req);
    if (ids.length >= m.info.max_seq) throw new Error(`prompt: ${ids.length} tokens, the context holds ${m.info.max_seq} positions`);
    const reused = m.start(ids, {maxTokens, stopIds});
    const aborted = () => this.aborted.has(id);
    let text = '';
    if (kind === 'completion' && req.echo) {  // the prompt's text first, as ml_run echoes it
      if (m.info.tok_kind === 1 && ids[0] !== m.info.bos_id) text += m.echo(-1, ids[0]);
      for (let t = 1; t < ids.length; t++) text += m.echo(ids[t - 1], ids[t]);
      if (text) emit(text, null);
    }
    while (m.prefill() > 0) {
      await yieldTurn();
      if (aborted()) throw new AbortedError();
    }
    let generated = 0, finish = 0;
    while (finish === 0) {
      await yieldTurn();
      if (aborted()) throw new AbortedError();
      const r = m.next();
      finish = r.finish;
      text += r.text;
      if (r.text || finish) emit(r.text, finish ? FINISH[finish] : null);
    }
    generated = m.M._ml_session_n_generated(m.session);  // the stop token is not counted
    return {
      text,
      finish_reason: FINISH[finish],
      usage: {prompt_tokens: ids.length, completion_tokens: generated, total_tokens: ids.length + generated,
              prompt_tokens_details: {cached_tokens: reused}},
    };
  }

  unload() {
    if (this.model) this.model.close();
    if (this.handle) freeModel(this.M, this.handle);
    this.model = this.handle = null;
    this.M = null;
  }
}
