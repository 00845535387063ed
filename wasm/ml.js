// legacy-ml in the browser: module choice and a thin layer over the public C API (runtime/ml.h),
// shared by verify.html and demo.html. ES module; no dependencies.
//
// Two builds of the same code are served next to the pages (cmake/wasm.cmake, www/):
//   ml_web_simd128.mjs/.wasm   the wasm-simd128 preset (-msimd128; Highway's WASM target and the
//                              i16x8.extmul / i32x4.dot_i16x8_s int8 kernels)
//   ml_web_scalar.mjs/.wasm    the wasm-scalar preset (no SIMD instruction at all)
// loadModule() validates a 29-byte module that uses one SIMD instruction: a browser that accepts it
// gets simd128, any other the scalar build. `?module=scalar` (or simd128) in the page's URL forces
// one. www/modules.json says which builds the folder holds. The threaded build
// (ml_web_simd128_threads, cross-origin-isolated pages) is chosen by wasm/loader.js pickVariant, which
// also loads models into wasm memory; a Model is then made from the context it opens (the npm
// package's engine.js does so), or from files in the module's FS (verify.html, wasm.api).

// (module (func (result v128) (i8x16.splat (i32.const 0))))
const SIMD_PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
  0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7b,       // type: () -> v128
  0x03, 0x02, 0x01, 0x00,                         // function 0 has type 0
  0x0a, 0x08, 0x01, 0x06, 0x00, 0x41, 0x00, 0xfd, 0x0f, 0x0b, // body: i32.const 0; i8x16.splat; end
]);

export function browserHasSimd128() {
  try {
    return WebAssembly.validate(SIMD_PROBE);
  } catch (e) {
    return false;
  }
}

const enc = new TextEncoder();

// Loads the module this browser should run. Returns
//   {M, variant: 'simd128'|'scalar', reason, simd: bool, build: {isa, hwy, simd128, kernels}}
// opts.force: 'simd128' | 'scalar' | '' ; opts.onCheck: receives verification rows.
export async function loadModule(opts = {}) {
  let available = {simd128: true, scalar: true};
  try {
    const r = await fetch('modules.json', {cache: 'no-store'});
    if (r.ok) available = await r.json();
  } catch (e) { /* opened without modules.json: try both */ }
  const simd = browserHasSimd128();
  let variant, reason;
  if (opts.force === 'simd128' || opts.force === 'scalar') {
    variant = opts.force;
    reason = `forced by ?module=${opts.force}`;
  } else if (simd && available.simd128) {
    variant = 'simd128';
    reason = 'this browser supports WebAssembly SIMD';
  } else if (!simd) {
    variant = 'scalar';
    reason = 'this browser has no WebAssembly SIMD';
  } else {
    variant = 'scalar';
    reason = 'this browser supports WebAssembly SIMD, but this folder has no simd128 build (wasm-scalar preset)';
  }
  if (!available[variant]) {
    throw new Error(`this folder has no ${variant} build (ml_web_${variant}.mjs): ` +
                    (variant === 'scalar' ? 'build the wasm-scalar preset, then rebuild this one'
                                          : 'build the wasm-simd128 preset'));
  }
  const factory = (await import(`./ml_web_${variant}.mjs`)).default;
  const M = await factory({
    print: (s) => console.log(s),
    printErr: (s) => console.warn(s),
    onCheck: opts.onCheck || null,
  });
  const build = JSON.parse(M.UTF8ToString(M._mlw_build_json()));
  return {M, variant, reason, simd, build, file: `ml_web_${variant}.wasm`};
}

// One-line description for the pages' status line.
export function describeModule(m) {
  const usesHwy = m.build.kernels.some(([, impl]) => impl === 'hwy');
  return `${m.file} — ${m.build.isa} build` + (usesHwy ? ` (Highway target ${m.build.hwy})` : '') +
         `; chosen because ${m.reason}`;
}

// Writes bytes to the module's in-memory file system (MEMFS) and returns the path.
export function writeFile(M, path, bytes) {
  const dir = path.slice(0, path.lastIndexOf('/'));
  if (dir) M.FS.mkdirTree(dir);
  M.FS.writeFile(path, bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes));
  return path;
}

export async function fetchBytes(url) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
  return new Uint8Array(await r.arrayBuffer());
}

function withCString(M, s, f) {
  if (s === null || s === undefined) return f(0, 0);  // NULL (e.g. a GGUF's own tokenizer)
  const bytes = enc.encode(s);
  const p = M._malloc(bytes.length + 1);
  M.HEAPU8.set(bytes, p);
  M.HEAPU8[p + bytes.length] = 0;
  try {
    return f(p, bytes.length);
  } finally {
    M._free(p);
  }
}

function lastError(M) {
  return M.UTF8ToString(M._ml_last_error());
}

// The sampler chain's defaults (ml_sampling_default, runtime/ml.h) and the keys configure() takes.
export const SAMPLING_DEFAULTS = Object.freeze({
  temperature: 1, top_p: 0.9, seed: 1, top_k: 0, min_p: 0, repeat_penalty: 1, repeat_last_n: 64,
  presence_penalty: 0, frequency_penalty: 0, logit_bias: {},
});
const CONFIG_KEYS = new Set([...Object.keys(SAMPLING_DEFAULTS), 'json_schema', 'json_object', 'logprobs',
                             'top_logprobs']);

// An open model: ml_open and ml_encode, and generation through one session (ml_session_* of
// runtime/ml.h: the common prefix kept in the KV cache, batched prefill, sampling, stop ids, valid
// UTF-8 text) — the loop ml_run and ml_server run. configure() adds the sampler chain
// (runtime/sampler.h), logprobs and a JSON constraint (structured/ml_structured.h).
export class Model {
  // Opens model and tokenizer files already in the module's FS (tokenizerPath null: a GGUF's own).
  // maxSeq 0 = the model's context. modelPath a number: a context opened already (wasm/loader.js
  // openModel), which this object then owns.
  constructor(M, modelPath, tokenizerPath, {maxSeq = 0, reference = 0} = {}) {
    this.M = M;
    if (typeof modelPath === 'number') this.ctx = modelPath;
    else this.open(modelPath, tokenizerPath, maxSeq, reference);
    this.info = JSON.parse(M.UTF8ToString(M._mlw_info_json(this.ctx)));
    this.i32 = M._malloc(12);  // out parameters: three int32
    this.session = 0;
    this.cfg = 0;        // mlw_config (wasm/web_api.cc) once configure() was called
    this.config = null;  // its settings, as configure() merged them
  }

  open(modelPath, tokenizerPath, maxSeq, reference) {
    const M = this.M;
    const opts = M._malloc(M._mlw_sizeof_options());
    const out = M._malloc(4);
    try {
      M._ml_options_init(opts);
      M.HEAP32[(opts >> 2) + 0] = 1;  // n_threads: the wasm builds are single-threaded
      M.HEAP32[(opts >> 2) + 1] = maxSeq;
      M.HEAP32[(opts >> 2) + 2] = reference;
      const st = withCString(M, modelPath, (mp) => withCString(M, tokenizerPath, (tp) => M._ml_open(out, mp, tp, opts)));
      if (st !== 0) throw new Error(`ml_open: ${M.UTF8ToString(M._ml_status_name(st))}: ${lastError(M)}`);
      this.ctx = M.HEAP32[out >> 2];
    } finally {
      M._free(opts);
      M._free(out);
    }
  }

  close() {
    const M = this.M;
    if (!this.ctx) return;
    M._ml_session_free(this.session);
    M._mlw_config_free(this.cfg);
    M._ml_close(this.ctx);
    M._free(this.i32);
    this.ctx = this.session = this.cfg = 0;
  }

  check(name, st) {
    if (st !== 0) throw new Error(`${name}: ${lastError(this.M)}`);
  }

  // Settings for the generations that start() begins next, merged into the earlier ones:
  //   temperature, top_p, seed, top_k, min_p, repeat_penalty, repeat_last_n, presence_penalty,
  //   frequency_penalty   the sampler chain (runtime/sampler.h; defaults SAMPLING_DEFAULTS)
  //   logit_bias          {tokenId: bias} (-Infinity bans the token)
  //   json_schema         a JSON schema (object or JSON text) the generated text must be an instance
  //                       of (the subset of docs/json-schema.md); null: none
  //   json_object         true: any JSON object (OpenAI's json_object); false: none
  //   logprobs            true: next() also returns the token's logprob (log-softmax at temperature
  //                       1 after logit_bias and penalties) and top_logprobs (0..20) likely tokens
  // Throws Error('configure: <the runtime's one-line message>') on a bad value (e.g. a schema
  // keyword outside the subset: 'schema keyword "pattern" at / is not supported'); then the earlier
  // settings stay.
  configure(opts = {}) {
    const M = this.M;
    for (const k of Object.keys(opts))
      if (!CONFIG_KEYS.has(k)) throw new Error(`configure: unknown option ${k}`);
    if (!this.cfg) {
      this.cfg = M._mlw_config_new(this.ctx);
      this.config = {...SAMPLING_DEFAULTS, json_schema: null, json_object: false, logprobs: false, top_logprobs: 0};
    }
    const c = {...this.config, ...opts};
    if (!Number.isSafeInteger(c.seed) || c.seed < 0) throw new Error(`configure: seed ${c.seed}: an integer in [0, 2^53)`);
    const bias = Object.entries(c.logit_bias || {});
    for (const [id] of bias)
      if (!/^-?[0-9]+$/.test(id)) throw new Error(`configure: logit_bias key ${id}: a token id`);
    this.setSampling(c);
    if ('json_schema' in opts || 'json_object' in opts) {
      if (c.json_schema != null && c.json_object) throw new Error('configure: json_schema and json_object exclude each other');
      const schema = c.json_schema == null ? null
                     : typeof c.json_schema === 'string' ? c.json_schema : JSON.stringify(c.json_schema);
      const mode = schema !== null ? 2 : c.json_object ? 1 : 0;
      const st = withCString(M, schema, (p, n) => M._mlw_config_json(this.cfg, mode, p, n));
      if (st !== 0) {
        const msg = lastError(M);
        this.setSampling(this.config);  // back to the earlier chain
        throw new Error(`configure: ${msg}`);
      }
    }
    M._mlw_config_logprobs(this.cfg, c.logprobs ? 1 : 0, c.logprobs ? c.top_logprobs : 0);
    this.config = c;
    return this;
  }

  setSampling(c) {  // configure()'s chain fields into the mlw_config
    const M = this.M;
    const bias = Object.entries(c.logit_bias || {});
    const mem = M._malloc(8 * Math.max(1, bias.length));
    try {
      bias.forEach(([id, b], i) => {
        M.HEAP32[(mem >> 2) + i] = Number(id);
        M.HEAPF32[(mem >> 2) + bias.length + i] = Number(b);
      });
      const lo = c.seed % 0x100000000, hi = Math.floor(c.seed / 0x100000000);
      this.check('configure', M._mlw_config_sampling(
          this.cfg, c.temperature, c.top_p, lo | 0, hi | 0, c.top_k, c.min_p, c.repeat_penalty, c.repeat_last_n,
          c.presence_penalty, c.frequency_penalty, mem, mem + 4 * bias.length, bias.length));
    } finally {
      M._free(mem);
    }
  }

  // Stop strings of the generations start() begins next ([]: none): the text ends before the first
  // one the model writes (text that may still begin one is held back). Needs configure()'s state.
  setStops(strings) {
    const M = this.M;
    if (!this.cfg) this.configure({});
    const bytes = strings.map((t) => enc.encode(String(t)));
    const p = M._malloc(bytes.reduce((n, b) => n + b.length + 1, 1));
    try {
      let at = p;
      for (const b of bytes) {
        if (b.includes(0)) throw new Error('stop: a stop string holds a NUL character');
        M.HEAPU8.set(b, at);
        M.HEAPU8[at + b.length] = 0;
        at += b.length + 1;
      }
      M._mlw_config_stops(this.cfg, p, bytes.length);
    } finally {
      M._free(p);
    }
  }

  // The chat format (ml_chat_format) named ('chatml', 'zephyr', 'llama2', 'llama3', 'qwen3') or,
  // name null, the one of the tokenizer's template (ml_chat_detect; its one-line error otherwise).
  chatFormat(name = null) {
    const M = this.M;
    const st = name == null ? M._ml_chat_detect(this.ctx, this.i32)
                            : withCString(M, name, (p) => M._ml_chat_parse_name(p, this.i32));
    this.check('chat format', st);
    return M.HEAP32[this.i32 >> 2];
  }

  chatFormatName(format) {
    return this.M.UTF8ToString(this.M._ml_chat_format_name(format));
  }

  // The format's end-of-turn ids, then the tokenizer's stop ids (ml_chat_stop_ids).
  chatStopIds(format) {
    const M = this.M;
    this.check('ml_chat_stop_ids', M._ml_chat_stop_ids(this.ctx, format, this.i32, this.i32 + 4));
    const p = M.HEAP32[this.i32 >> 2], n = M.HEAP32[(this.i32 + 4) >> 2];
    return Array.from(M.HEAP32.subarray(p >> 2, (p >> 2) + n));
  }

  // messages [{role, content}] rendered as the format's template does (ml_chat_render; flags
  // ML_CHAT_ASSISTANT = 1, ML_CHAT_NO_THINKING = 2) and encoded (ml_chat_encode): the token ids.
  chatEncode(format, messages, flags = 1) {
    const M = this.M;
    const strs = [];
    const arr = M._malloc(8 * messages.length);
    const lenp = M._malloc(4);
    try {
      messages.forEach((m, i) => {
        for (const [k, v] of [[0, m.role], [4, m.content]]) {
          const b = enc.encode(String(v));
          const p = M._malloc(b.length + 1);
          M.HEAPU8.set(b, p);
          M.HEAPU8[p + b.length] = 0;
          strs.push(p);
          M.HEAP32[(arr + 8 * i + k) >> 2] = p;
        }
      });
      // size_t *len: 4 bytes in wasm32
      this.check('ml_chat_render', M._ml_chat_render(this.ctx, format, arr, messages.length, flags, 0, 0, lenp));
      const len = M.HEAPU32[lenp >> 2];
      const text = M._malloc(len + 1);
      strs.push(text);
      this.check('ml_chat_render', M._ml_chat_render(this.ctx, format, arr, messages.length, flags, text, len + 1, lenp));
      const cap = M._ml_encode_bound(this.ctx, len);
      const toks = M._malloc(4 * cap);
      strs.push(toks);
      this.check('ml_chat_encode', M._ml_chat_encode(this.ctx, text, toks, cap, this.i32));
      return Array.from(M.HEAP32.subarray(toks >> 2, (toks >> 2) + M.HEAP32[this.i32 >> 2]));
    } finally {
      for (const p of strs) M._free(p);
      M._free(arr);
      M._free(lenp);
    }
  }

  // The text of ids as one piece of text (ml_decode token after token, BOS left out, the first as if after BOS,
  // so llama2.c's leading space is dropped as SentencePiece does; bytes joined, then UTF-8 decoded,
  // so a character split across tokens comes out whole).
  decode(ids) {
    const M = this.M;
    const parts = [];
    let prev = this.info.bos_id ?? -1, n = 0;
    for (const id of ids) {
      if (id === this.info.bos_id) {  // BOS has no text (llama2.c would give "\n<s>\n")
        prev = id;
        continue;
      }
      const p = M._ml_decode(this.ctx, prev, id);
      if (!p) throw new Error(`detokenize: token ${id} is outside the vocabulary [0, ${this.info.vocab})`);
      let e = p;
      while (M.HEAPU8[e]) e++;
      parts.push(M.HEAPU8.slice(p, e));
      n += e - p;
      prev = id;
    }
    const all = new Uint8Array(n);
    let at = 0;
    for (const b of parts) { all.set(b, at); at += b.length; }
    return new TextDecoder().decode(all);
  }

  // Token ids of text (BOS first when bos), as ml_run's prompt.
  encode(text, bos = true) {
    const M = this.M;
    return withCString(M, text, (p, n) => {
      const cap = 3 * n + 2;  // ml_encode_bound: NFC may lengthen UTF-8 text up to 3x
      const toks = M._malloc(cap * 4);
      try {
        this.check('ml_encode', M._ml_encode(this.ctx, p, bos ? 1 : 0, toks, cap, this.i32));
        const count = M.HEAP32[this.i32 >> 2];
        return Array.from(M.HEAP32.subarray(toks >> 2, (toks >> 2) + count));
      } finally {
        M._free(toks);
      }
    });
  }

  // Starts a generation of prompt (ids): the sampler (seed: a positive integer below 2^53, as
  // ml_run --seed), maxTokens (0 = until the context is full) and the ids that end it. Returns
  // the prompt tokens kept from the KV cache. After configure(), the configured chain, logprobs
  // and constraint apply (temperature, topp and seed given here are configured first).
  start(prompt, {temperature, topp, seed, maxTokens = 0, stopIds = []} = {}) {
    const M = this.M;
    if (this.cfg) {
      const o = {};
      if (temperature !== undefined) o.temperature = temperature;
      if (topp !== undefined) o.top_p = topp;
      if (seed !== undefined) o.seed = seed;
      if (Object.keys(o).length) this.configure(o);
    }
    const ids = M._malloc(4 * Math.max(1, prompt.length, stopIds.length));
    try {
      M.HEAP32.set(stopIds, ids >> 2);
      const lo = seed % 0x100000000, hi = Math.floor(seed / 0x100000000);
      const o = this.cfg ? M._mlw_config_options(this.cfg, maxTokens, ids, stopIds.length)
                         : M._mlw_session_options(temperature, topp, lo | 0, hi | 0, maxTokens, ids, stopIds.length);
      if (this.session) {
        this.check('ml_session_set_options', M._ml_session_set_options(this.session, o));
      } else {
        this.check('ml_session_new', M._ml_session_new(this.ctx, o, this.i32));
        this.session = M.HEAP32[this.i32 >> 2];
      }
      M.HEAP32.set(prompt, ids >> 2);
      this.check('ml_session_set_prompt', M._ml_session_set_prompt(this.session, ids, prompt.length, this.i32));
      return M.HEAP32[this.i32 >> 2];
    } finally {
      M._free(ids);
    }
  }

  // Evaluates the next batch of the prompt; returns how many tokens (0: the prompt is in).
  prefill() {
    this.check('ml_session_prefill', this.M._ml_session_prefill(this.session, 0, this.i32, 0));
    return this.M.HEAP32[this.i32 >> 2];
  }

  // One generated token: {token, text (valid UTF-8, '' while held back), finish (0: goes on)};
  // configured with logprobs, also logprob (the token's) and top_logprobs ([{token, logprob}],
  // most likely first; a banned token's logprob is null, i.e. -inf).
  next() {
    const M = this.M, p = this.i32;
    this.check('ml_session_next', M._ml_session_next(this.session, p, p + 4, p + 8));
    const r = {token: M.HEAP32[p >> 2], text: M.UTF8ToString(M.HEAP32[(p + 4) >> 2]), finish: M.HEAP32[(p + 8) >> 2]};
    if (this.config && this.config.logprobs) {
      const j = M.UTF8ToString(M._mlw_logprobs_json(this.session));
      if (!j) throw new Error(`ml_session_logprobs: ${lastError(M)}`);
      const lp = JSON.parse(j);
      r.logprob = lp.logprob === null ? -Infinity : lp.logprob;
      r.top_logprobs = lp.top.map(([token, logprob]) => ({token, logprob: logprob === null ? -Infinity : logprob}));
    }
    return r;
  }

  // The printable text of token after prev through the session's text stream (the prompt's echo).
  echo(prev, token) {
    this.check('ml_session_echo', this.M._ml_session_echo(this.session, prev, token, this.i32));
    return this.M.UTF8ToString(this.M.HEAP32[this.i32 >> 2]);
  }
}

// URL parameters of the page (?module=scalar&tol_scale=...).
export function pageParams() {
  return new URLSearchParams(window.location.search);
}
