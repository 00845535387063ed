// legacy-ml: Llama-style models (.mlb, GGUF) in the browser and node, through WebAssembly, with
// an OpenAI-shaped API (README.md; types in index.d.ts).
//
//   const engine = await createEngine({model: 'https://…/model.gguf', onProgress});
//   const reply = await engine.chat.completions.create({messages: [{role: 'user', content: 'Hi'}]});
//   for await (const chunk of await engine.chat.completions.create({messages, stream: true})) …
//
// In a page the engine runs in a module Worker (worker.js), so the page's main thread only passes
// messages; in node (or with {worker: false}) it runs on the calling thread (engine.js), yielding to
// the event loop between tokens. Both sides of the Worker speak the private protocol worker.js
// describes; the API below is the same either way.
import {AbortedError, EngineCore} from './engine.js';
import {browserHasSimd128} from './ml.js';

let nextId = 1;
const now = () => Math.floor(Date.now() / 1000);

function toError(e) {
  if (e.name === 'AbortError') return new AbortedError();
  const err = new Error(e.message);
  if (e.name && e.name !== 'Error') err.name = e.name;
  return err;
}

// A channel to the engine: call(op, args, {onChunk, onProgress, signal}) → Promise<result>.
class InlineChannel {
  constructor() {
    this.core = new EngineCore();
  }
  async call(op, args, {onChunk, onProgress, signal} = {}) {
    const id = nextId++;
    const core = this.core;
    if (op === 'open') return core.open(args, onProgress || (() => {}));
    if (op === 'generate') {
      const stop = () => core.abort(id);
      if (signal) signal.addEventListener('abort', stop, {once: true});
      try {
        return await core.generate(args.kind, id, args.request, (text, finish) => onChunk && onChunk({text, finish}));
      } finally {
        if (signal) signal.removeEventListener('abort', stop);
      }
    }
    if (op === 'tokenize') return core.tokenize(args.text, args.add_bos);
    if (op === 'detokenize') return core.detokenize(args.ids);
    if (op === 'memory') return core.memory();
    if (op === 'unload') return core.unload();
    throw new Error(`unknown operation ${op}`);
  }
  close() {
    this.core = null;
  }
}

class WorkerChannel {
  constructor() {
    this.worker = new Worker(new URL('./worker.js', import.meta.url), {type: 'module', name: 'legacy-ml'});
    this.pending = new Map();
    this.worker.onmessage = (e) => {
      const m = e.data, p = this.pending.get(m.id);
      if (!p) return;
      if (m.progress) p.onProgress && p.onProgress(m.progress);
      else if (m.chunk) p.onChunk && p.onChunk(m.chunk);
      else {
        this.pending.delete(m.id);
        if (m.error) p.reject(toError(m.error));
        else p.resolve(m.result);
      }
    };
    this.worker.onerror = (e) => {
      const err = new Error(`legacy-ml worker: ${e.message || 'failed to start'}`);
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
    };
  }
  call(op, args, {onChunk, onProgress, signal} = {}) {
    const id = nextId++;
    return new Promise((resolve, reject) => {
      const stop = () => this.worker.postMessage({op: 'abort', target: id});
      if (signal) signal.addEventListener('abort', stop, {once: true});
      const done = (f) => (v) => {
        if (signal) signal.removeEventListener('abort', stop);
        f(v);
      };
      this.pending.set(id, {resolve: done(resolve), reject: done(reject), onChunk, onProgress});
      this.worker.postMessage({id, op, args});  // an ArrayBuffer model is copied, not detached
    });
  }
  close() {
    this.worker.terminate();
    for (const p of this.pending.values()) p.reject(new Error('the engine is unloaded'));
    this.pending.clear();
  }
}

// Turns the engine's pieces of text into an async iterable of OpenAI chunks (a queue between the
// channel's callbacks and the consumer's for-await loop).
// An aborted signal ends the iteration at once, also when chunks are still queued.
function chunkStream(start, makeChunk, usageChunk, signal) {
  const queue = [];
  let wake = null, done = false, failure = null, result = null;
  const push = (v) => {
    queue.push(v);
    if (wake) wake();
  };
  start((piece) => push(makeChunk(piece))).then((r) => {
    result = r;
    done = true;
    if (wake) wake();
  }, (e) => {
    failure = e;
    done = true;
    if (wake) wake();
  });
  return {
    async *[Symbol.asyncIterator]() {
      for (;;) {
        if (signal && signal.aborted) throw new AbortedError();
        if (queue.length) {
          yield queue.shift();
          continue;
        }
        if (failure) throw failure;
        if (done) {
          const u = usageChunk(result);
          if (u) yield u;
          return;
        }
        await new Promise((r) => {
          wake = r;
          if (signal) signal.addEventListener('abort', r, {once: true});
        });
        wake = null;
      }
    },
  };
}

class Engine {
  constructor(channel, info) {
    this.channel = channel;
    this.info = info;
    const modelName = info.model.name;
    this.chat = {completions: {create: (req) => this.create('chat', req, modelName)}};
    this.completions = {create: (req) => this.create('completion', req, modelName)};
  }

  async create(kind, req, model) {
    if (!this.channel) throw new Error('the engine is unloaded');
    if (!req || typeof req !== 'object') throw new Error('request: an object');
    const {signal, stream, stream_options: so, ...rest} = req;
    if (signal && signal.aborted) throw new AbortedError();
    const id = (kind === 'chat' ? 'chatcmpl-' : 'cmpl-') + Math.random().toString(36).slice(2, 14);
    const created = now();
    const object = kind === 'chat' ? 'chat.completion' : 'text_completion';
    const call = (onChunk) => this.channel.call('generate', {kind, request: rest}, {onChunk, signal});
    if (!stream) {
      const r = await call(null);
      const choice = kind === 'chat'
          ? {index: 0, message: {role: 'assistant', content: r.text}, finish_reason: r.finish_reason, logprobs: null}
          : {index: 0, text: r.text, finish_reason: r.finish_reason, logprobs: null};
      return {id, object, created, model, choices: [choice], usage: r.usage};
    }
    let first = true;
    const makeChunk = ({text, finish}) => {
      if (kind === 'chat') {
        const delta = first ? {role: 'assistant', content: text} : {content: text};
        first = false;
        return {id, object: 'chat.completion.chunk', created, model, choices: [{index: 0, delta, finish_reason: finish, logprobs: null}]};
      }
      return {id, object: 'text_completion', created, model, choices: [{index: 0, text, finish_reason: finish, logprobs: null}]};
    };
    const usageChunk = (r) => so && so.include_usage
        ? {id, object: kind === 'chat' ? 'chat.completion.chunk' : 'text_completion', created, model, choices: [], usage: r.usage}
        : null;
    return chunkStream(call, makeChunk, usageChunk, signal);
  }

  async tokenize(text, {add_bos = true} = {}) {
    if (!this.channel) throw new Error('the engine is unloaded');
    return this.channel.call('tokenize', {text, add_bos});
  }

  async detokenize(ids) {
    if (!this.channel) throw new Error('the engine is unloaded');
    if (!Array.isArray(ids) || ids.some((t) => !Number.isInteger(t))) throw new Error('detokenize: an array of token ids');
    return this.channel.call('detokenize', {ids});
  }

  // {wasm_memory_bytes}: the size of the engine's WebAssembly memory now.
  async memory() {
    if (!this.channel) return {wasm_memory_bytes: 0};
    return this.channel.call('memory', {});
  }

  // Frees the model (ml_close) and the WebAssembly instance: in a page the Worker ends, which
  // returns its whole memory; in node the instance is left to the garbage collector.
  async unload() {
    if (!this.channel) return;
    const ch = this.channel;
    this.channel = null;
    try {
      await ch.call('unload', {});
    } finally {
      ch.close();
    }
  }
}

function normaliseModel(model) {
  // A relative URL means the page's, not the Worker's: resolve it here.
  if (typeof model === 'string' && typeof location !== 'undefined' && !/^[a-z][a-z0-9+.-]*:/i.test(model))
    return new URL(model, location.href).href;
  if (typeof URL !== 'undefined' && model instanceof URL) return model.href;
  return model;
}

// See index.d.ts (EngineOptions) for the options.
export async function createEngine(opts = {}) {
  if (!opts || opts.model == null) throw new Error('model: a URL, File, Blob or ArrayBuffer');
  const useWorker = opts.worker ?? (typeof Worker !== 'undefined' && typeof window !== 'undefined');
  const channel = useWorker ? new WorkerChannel() : new InlineChannel();
  const {onProgress, worker, ...rest} = opts;
  const args = {...rest, model: normaliseModel(opts.model), tokenizer: normaliseModel(opts.tokenizer),
                simd: browserHasSimd128()};  // probed here: what the page's runtime accepts
  try {
    const info = await channel.call('open', args, {onProgress});
    return new Engine(channel, {...info, worker: useWorker});
  } catch (e) {
    channel.close();
    throw e;
  }
}

export {AbortedError};
