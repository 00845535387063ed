// The browser's model loader: a model file from a URL, a File/Blob or bytes into wasm memory, then a
// context opened on it (wasm/loader_api.cc). No MEMFS file and no whole-file ArrayBuffer on the way,
// so the page holds the weights once: a .mlb is streamed chunk by chunk into ONE buffer and used in
// place (ml_open_memory); a GGUF of known length is converted as it streams in (mlw_gguf_*: the
// runtime's layouts, tensor by tensor; only its header and one chunk are held besides), never whole
// in wasm memory. (A GGUF whose length the server does not send is buffered whole and converted at
// open, then its buffer freed.)
//
//   pickVariant({simd, isolated, available})  'simd128_threads' on a cross-origin-isolated page
//                    (SharedArrayBuffer usable) whose folder has the threaded build, else
//                    'simd128' / 'scalar' as wasm/ml.js's loadModule chooses; with the reason
//   buildInfo(M, variant)   {variant, threads: a context's default count, maxThreads, isolated, isa, hwy}
//   loadModel(M, source, {onProgress, cache, signal})   → handle {ptr, stream, bytes, name, format, fromCache}
//       (ptr: a .mlb's buffer; stream: a GGUF's conversion, opened by openModel)
//       source: a URL (string or URL), a Blob/File, an ArrayBuffer or Uint8Array; in node also a
//       file path (or file: URL), streamed from the file.
//       onProgress({loaded, total, share, phase: 'network'|'cache'|'memory'|'file'}) after every chunk
//       (total 0 and share null when the server sends no length).
//       cache (URLs only): true (default) asks the server for the file's headers only (HEAD) and
//       reads the Cache API entry keyed by URL + ETag + Last-Modified + length when there is one (no
//       body downloaded), else downloads and stores it under that key (older entries of the URL are
//       deleted); 'prefer' uses an entry of the URL without asking the server; false never caches.
//       (A GGUF is never whole in wasm memory to be stored from: it goes to the cache as it
//       downloads, phase 'network', then streams in from there, phase 'cache'.)
//       A file that cannot fit in wasm32 memory (4 GiB, less what the module uses, the KV cache its
//       header asks for and 64 MiB of working room) is refused with one line before its body is
//       read (from the Content-Length), or as soon as its header is in (a GGUF's converted size).
//   openModel(M, handle, {tokenizerPath, threads, maxSeq, kvType})  → ctx (ml_ctx*), the model
//       opened on the handle's buffer; a GGUF is opened once: the context takes its weights (and a
//       buffered GGUF's buffer is freed here)
//   freeModel(M, handle)    gives the buffer or stream back (after ml_close of every context on it)

const GiB = 1024 * 1024 * 1024;
const WASM32_LIMIT = 4 * GiB;     // -sMAXIMUM_MEMORY=4GB (cmake/wasm.cmake)
const WORKING_ROOM = 64 * 1024 * 1024;
const CACHE_NAME = 'legacy-ml-models';

export function pickVariant({simd = true, isolated = false, available = {}} = {}) {
  if (!simd) return {variant: 'scalar', reason: 'this browser has no WebAssembly SIMD'};
  if (isolated && available.simd128_threads)
    return {variant: 'simd128_threads', reason: 'the page is cross-origin isolated (SharedArrayBuffer): threads'};
  const why = !available.simd128_threads ? 'this folder has no threaded build'
                                          : 'the page is not cross-origin isolated (no COOP/COEP headers): one thread';
  return available.simd128 === false ? {variant: 'scalar', reason: `${why}; no simd128 build`}
                                     : {variant: 'simd128', reason: why};
}

export function buildInfo(M, variant) {
  const b = JSON.parse(M.UTF8ToString(M._mlw_build_json()));
  return {variant, threads: M._mlw_threads(), maxThreads: M._mlw_max_threads(), isolated: !!globalThis.crossOriginIsolated, isa: b.isa, hwy: b.hwy};
}

function heap(M, end) {  // a view that reaches `end` (memory may have grown on another thread)
  if (M.HEAPU8.length >= end) return M.HEAPU8;
  if (M.wasmMemory) return new Uint8Array(M.wasmMemory.buffer);
  return M.HEAPU8;
}

function mib(n) { return `${(n / 1048576).toFixed(0)} MiB`; }

// Bytes the model may still take: the 4 GiB limit less the module's memory now and working room.
function budget(M) { return WASM32_LIMIT - M.HEAPU8.length - WORKING_ROOM; }

function tooLarge(name, need, M, what) {
  return new Error(`${name}: ${what} ${mib(need)} do not fit in WebAssembly's 4 GiB memory ` +
                   `(${mib(Math.max(0, budget(M)))} left after the ${mib(M.HEAPU8.length)} in use and ${mib(WORKING_ROOM)} ` +
                   'of working room); not loaded');
}

// Streams `body` (a ReadableStream) of `total` bytes (0: unknown) into one aligned buffer → {ptr,
// bytes}, or, a GGUF of known length, into its conversion → {stream, bytes}.
async function streamIn(M, body, total, name, phase, onProgress, signal) {
  const reader = body.getReader();
  let cap = total > 0 ? total : 16 * 1024 * 1024, ptr = 0, loaded = 0;
  const cancel = async (e) => { try { await reader.cancel(); } catch (_) { /* already closed */ } throw e; };
  let chunk = await reader.read();
  if (!chunk.done && total > 0 && isGguf(chunk.value, 0))
    return ggufIn(M, reader, chunk.value, total, name, phase, onProgress, signal, cancel);
  const alloc = (n) => {
    const p = M._mlw_model_alloc(n) >>> 0;
    if (!p) return cancel(new Error(`${name}: cannot allocate ${mib(n)} of wasm memory for the model`));
    return p;
  };
  if (total > 0) {
    ptr = await alloc(total);
  }
  let checked = false;
  for (; !chunk.done; chunk = await reader.read()) {
    if (signal && signal.aborted) await cancel(new Error(`${name}: loading aborted`));
    const value = chunk.value;
    if (!ptr || loaded + value.length > cap) {
      if (total > 0) { M._mlw_model_free(ptr); await cancel(new Error(`${name}: longer than its stated ${total} bytes`)); }
      // Unknown length: grow by doubling (the one case with a copy; servers normally send a length).
      const ncap = Math.max(cap * 2, loaded + value.length);
      const np = await alloc(ncap);
      if (ptr) { heap(M, np + loaded).copyWithin(np, ptr, ptr + loaded); M._mlw_model_free(ptr); }
      ptr = np; cap = ncap;
    }
    heap(M, ptr + loaded + value.length).set(value, ptr + loaded);
    loaded += value.length;
    if (!checked && loaded >= 256) {  // the header: how much the context will need besides the file
      checked = true;
      const need = extraNeed(M, ptr, loaded, total);
      if (total > 0 && need > budget(M)) {  // the buffer is already part of the memory in use
        M._mlw_model_free(ptr);
        await cancel(tooLarge(name, total + need, M, 'the file and its KV cache or conversion,'));
      }
    }
    if (onProgress) onProgress({loaded, total, share: total > 0 ? loaded / total : null, phase});
  }
  if (total > 0 && loaded !== total) {
    M._mlw_model_free(ptr);
    throw new Error(`${name}: the download ended after ${loaded} of ${total} bytes`);
  }
  return {ptr, bytes: loaded};
}

function lastError(M) { return M.UTF8ToString(M._ml_last_error()); }

// A GGUF of `total` bytes whose first chunk is `first`: the chunks gathered until they hold the
// header (mlw_gguf_begin asked again with twice as much while it says more), then that prefix and
// every later chunk fed through one reusable buffer, each converted as it comes.
async function ggufIn(M, reader, first, total, name, phase, onProgress, signal, cancel) {
  const more = M._malloc(4);
  let head = 0, headCap = 0, headLen = 0, tryAt = 0, stream = 0, buf = 0, bufCap = 0, loaded = 0;
  const release = () => { if (head) M._free(head); if (buf) M._free(buf); M._free(more); head = buf = 0; };
  const fail = async (e) => { if (stream) M._mlw_gguf_free(stream); release(); await cancel(e); };
  const room = async (p, keep, need) => {  // a larger header buffer (at least doubled) keeping its first `keep` bytes
    const n = Math.max(need, 2 * headCap, 1 << 20), np = M._malloc(n) >>> 0;
    if (!np) await fail(new Error(`${name}: cannot allocate ${mib(n)} of wasm memory for the file's header`));
    if (p) { heap(M, np + keep).copyWithin(np, p, p + keep); M._free(p); }
    return [np, n];
  };
  for (let value = first; ;) {
    if (signal && signal.aborted) await fail(new Error(`${name}: loading aborted`));
    loaded += value.length;
    if (loaded > total) await fail(new Error(`${name}: longer than its stated ${total} bytes`));
    if (!stream) {  // still gathering the header
      if (headLen + value.length > headCap) [head, headCap] = await room(head, headLen, headLen + value.length);
      heap(M, head + headLen + value.length).set(value, head + headLen);
      headLen += value.length;
      if (headLen >= tryAt || loaded === total) {
        const np = cstr(M, name);
        stream = M._mlw_gguf_begin(head, headLen, total, np, more) >>> 0;
        M._free(np);
        if (!stream && (!M.HEAP32[more >> 2] || loaded === total)) await fail(new Error(lastError(M)));
        tryAt = 2 * headLen;
        if (stream) {
          // (the converted weights are allocated by now: what is left must hold the KV cache)
          const kv = M._mlw_gguf_kv_bytes(stream, 0);
          if (kv > budget(M) + headCap)
            await fail(tooLarge(name, M._mlw_gguf_weight_bytes(stream) + kv, M, 'its converted weights and KV cache,'));
          if (M._mlw_gguf_feed(stream, head, headLen)) await fail(new Error(lastError(M)));
          M._free(head);
          head = 0;
        }
      }
    } else {
      if (value.length > bufCap) {
        if (buf) M._free(buf);
        bufCap = Math.max(value.length, 1 << 20);
        buf = M._malloc(bufCap) >>> 0;
        if (!buf) await fail(new Error(`${name}: cannot allocate ${mib(bufCap)} of wasm memory for a download chunk`));
      }
      heap(M, buf + value.length).set(value, buf);
      if (M._mlw_gguf_feed(stream, buf, value.length)) await fail(new Error(lastError(M)));
    }
    if (onProgress) onProgress({loaded, total, share: loaded / total, phase});
    const next = await reader.read();
    if (next.done) break;
    value = next.value;
  }
  release();
  if (loaded !== total) {
    M._mlw_gguf_free(stream);
    throw new Error(`${name}: the download ended after ${loaded} of ${total} bytes`);
  }
  return {ptr: 0, stream, bytes: loaded};
}

// The first chunk of body, and a stream of all of body (that chunk included).
async function peek(body) {
  const reader = body.getReader();
  const first = await reader.read();
  const all = new ReadableStream({
    start(c) { if (first.done) c.close(); else c.enqueue(first.value); },
    async pull(c) { const r = await reader.read(); if (r.done) c.close(); else c.enqueue(r.value); },
    cancel(why) { return reader.cancel(why); },
  }, {highWaterMark: 0});
  return [first.done ? new Uint8Array(0) : first.value, all];
}

function isGguf(u8, p) { return u8.length >= p + 4 && u8[p] === 0x47 && u8[p + 1] === 0x47 && u8[p + 2] === 0x55 && u8[p + 3] === 0x46; }

// Bytes besides the file itself: a GGUF's conversion (about its size), a .mlb's F32 KV cache.
function extraNeed(M, ptr, n, total) {
  const u8 = heap(M, ptr + 4);
  if (isGguf(u8, ptr)) return total;
  const kv = M._mlw_plan_mlb(ptr, n, 0);
  return kv > 0 ? kv : 0;
}

function sourceName(source) {
  if (typeof source === 'string') return source.split('/').pop() || source;
  if (source instanceof URL) return source.pathname.split('/').pop();
  if (typeof Blob !== 'undefined' && source instanceof Blob) return source.name || 'blob';
  return 'model bytes';
}

// The cache key: the URL with the file's identity (ETag, Last-Modified, length) as a query.
function cacheKey(url, headers) {
  const k = new URL(url, globalThis.location ? globalThis.location.href : undefined);
  k.searchParams.set('ml-cache', [headers.get('ETag') || '', headers.get('Last-Modified') || '',
                                  headers.get('Content-Length') || ''].join('|'));
  return k.href;
}

async function entriesOf(cache, url) {
  const base = new URL(url, globalThis.location ? globalThis.location.href : undefined).href;
  return (await cache.keys()).filter((r) => {
    const u = new URL(r.url);
    u.searchParams.delete('ml-cache');
    return u.href === base;
  });
}

async function fromUrl(M, url, {onProgress, cache = true, signal} = {}) {
  const name = sourceName(String(url));
  const store = cache && globalThis.caches ? await caches.open(CACHE_NAME) : null;
  if (store && cache === 'prefer') {
    const [hit] = await entriesOf(store, url);
    const r = hit && await store.match(hit);
    if (r) {
      const total = Number(r.headers.get('Content-Length')) || 0;
      const h = await streamIn(M, r.body, total, name, 'cache', onProgress, signal);
      return {...h, name, fromCache: true};
    }
  }
  let key = null;
  const head = store ? await fetch(url, {method: 'HEAD', signal}) : null;
  if (head && head.status === 404) throw new Error(`${name}: HTTP 404 ${head.statusText}`);
  if (head && head.ok) {  // (a server that does not answer HEAD: downloaded, not cached)
    key = cacheKey(url, head.headers);
    const total = Number(head.headers.get('Content-Length')) || 0;
    if (total > budget(M)) throw tooLarge(name, total, M, 'its');
    const r = await store.match(key);
    if (r) {
      const h = await streamIn(M, r.body, total, name, 'cache', onProgress, signal);
      return {...h, name, fromCache: true};
    }
  }
  const resp = await fetch(url, {signal});
  if (!resp.ok) throw new Error(`${name}: HTTP ${resp.status} ${resp.statusText}`);
  const total = Number(resp.headers.get('Content-Length')) || 0;
  if (total > budget(M)) {
    try { await resp.body.cancel(); } catch (_) { /* closed */ }
    throw tooLarge(name, total, M, 'its');
  }
  let body = resp.body;
  if (key && total > 0) {
    let first;
    [first, body] = await peek(body);
    if (isGguf(first, 0)) return ggufViaCache(M, url, key, store, body, total, name, {onProgress, signal});
  }
  const h = await streamIn(M, body, total, name, 'network', onProgress, signal);
  if (!key) return {...h, name, fromCache: false, cached: false};
  // Stored from the wasm buffer in 4 MiB slices the cache pulls one at a time (a tee of the download
  // would queue the whole file in JavaScript whenever the disk is slower than the network).
  let off = 0;
  const slices = new ReadableStream({
    pull(c) {
      if (off >= h.bytes) { c.close(); return; }
      const n = Math.min(4 << 20, h.bytes - off);
      c.enqueue(heap(M, h.ptr + off + n).slice(h.ptr + off, h.ptr + off + n));
      off += n;
    },
  }, {highWaterMark: 0});
  try {
    for (const old of await entriesOf(store, url)) await store.delete(old);
    await store.put(key, new Response(slices, {headers: {'Content-Length': String(h.bytes), 'Content-Type': 'application/octet-stream'}}));
    return {...h, name, fromCache: false, cached: true};
  } catch (e) {  // quota, private mode: the model is loaded all the same
    return {...h, name, fromCache: false, cached: false, cacheError: String(e.message)};
  }
}

// A GGUF download to cache: converted as it streams, so never whole in wasm memory to be stored from;
// it goes to the Cache API as it downloads (progress: phase 'network'), then streams in from there
// (phase 'cache'). A cache that refuses it (quota, private mode): downloaded again, not cached.
async function ggufViaCache(M, url, key, store, body, total, name, {onProgress, signal}) {
  let loaded = 0;
  const counted = body.pipeThrough(new TransformStream({
    transform(chunk, c) {
      loaded += chunk.length;
      if (onProgress) onProgress({loaded, total, share: loaded / total, phase: 'network'});
      c.enqueue(chunk);
    },
  }));
  let cacheError = null;
  try {
    for (const old of await entriesOf(store, url)) await store.delete(old);
    await store.put(key, new Response(counted, {headers: {'Content-Length': String(total), 'Content-Type': 'application/octet-stream'}}));
  } catch (e) {
    if (signal && signal.aborted) throw new Error(`${name}: loading aborted`);
    cacheError = String(e.message);
  }
  const r = cacheError ? null : await store.match(key);
  if (r) return {...await streamIn(M, r.body, total, name, 'cache', onProgress, signal), name, fromCache: false, cached: true};
  const again = await fetch(url, {signal});
  if (!again.ok) throw new Error(`${name}: HTTP ${again.status} ${again.statusText}`);
  const h = await streamIn(M, again.body, total, name, 'network', onProgress, signal);
  return {...h, name, fromCache: false, cached: false, cacheError: cacheError || 'the cache did not keep it'};
}

function inNode() {
  return typeof process !== 'undefined' && !!(process.versions && process.versions.node) &&
         typeof window === 'undefined' && typeof WorkerGlobalScope === 'undefined';
}

// node: a path or file: URL streamed from the file (the npm package's node use).
async function fromFile(M, source, opts) {
  const fs = await import('node:fs');
  const {Readable} = await import('node:stream');
  const {fileURLToPath} = await import('node:url');
  const file = String(source).startsWith('file:') ? fileURLToPath(source) : String(source);
  let size;
  try {
    size = (await fs.promises.stat(file)).size;
  } catch (e) {
    throw new Error(`${file}: ${e.code || e.message}`);
  }
  const name = sourceName(file);
  if (size > budget(M)) throw tooLarge(name, size, M, 'its');
  const body = Readable.toWeb(fs.createReadStream(file, {highWaterMark: 1 << 20}));
  return {...await streamIn(M, body, size, name, 'file', opts.onProgress, opts.signal), name, fromCache: false};
}

export async function loadModel(M, source, opts = {}) {
  let h;
  const url = source instanceof URL ? source.href : source;
  if (typeof url === 'string' && inNode() && !/^(https?|data|blob):/i.test(url)) {
    h = await fromFile(M, url, opts);
  } else if (typeof source === 'string' || source instanceof URL) {
    h = await fromUrl(M, source, opts);
  } else if (typeof Blob !== 'undefined' && source instanceof Blob) {
    const name = sourceName(source);
    if (source.size > budget(M)) throw tooLarge(name, source.size, M, 'its');
    h = {...await streamIn(M, source.stream(), source.size, name, 'memory', opts.onProgress, opts.signal), name, fromCache: false};
  } else if (source instanceof ArrayBuffer || ArrayBuffer.isView(source)) {
    const u8 = source instanceof ArrayBuffer ? new Uint8Array(source) : new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
    const name = 'model bytes';
    if (u8.length > budget(M)) throw tooLarge(name, u8.length, M, 'its');
    const body = new ReadableStream({start(c) { c.enqueue(u8); c.close(); }});
    h = {...await streamIn(M, body, u8.length, name, 'memory', opts.onProgress, opts.signal), name, fromCache: false};
  } else {
    throw new Error(`model: ${typeof source} is not a URL, a Blob/File, an ArrayBuffer or a typed array`);
  }
  h.format = h.stream || isGguf(heap(M, h.ptr + 4), h.ptr) ? 'gguf' : 'mlb';
  return h;
}

function cstr(M, s) {
  if (s === null || s === undefined) return 0;
  const n = M.lengthBytesUTF8(s) + 1, p = M._malloc(n);
  M.stringToUTF8(s, p, n);
  return p;
}

export function openModel(M, handle, {tokenizerPath = null, threads = 0, maxSeq = 0, kvType = 0} = {}) {
  if (!handle.ptr && !handle.stream) throw new Error(`${handle.name}: its buffer was freed (a GGUF opens once)`);
  const opts = M._malloc(M._mlw_sizeof_options()), out = M._malloc(4);
  const name = cstr(M, handle.name), tok = cstr(M, tokenizerPath);
  try {
    M._ml_options_init(opts);
    M.HEAP32[(opts >> 2) + 0] = threads;
    M.HEAP32[(opts >> 2) + 1] = maxSeq;
    M.HEAP32[(opts >> 2) + 4] = kvType;
    const st = handle.stream ? M._mlw_gguf_open(out, handle.stream, name, tok, opts)
                             : M._mlw_open_memory(out, handle.ptr, handle.bytes, name, tok, opts);
    if (st !== 0) throw new Error(`${M.UTF8ToString(M._ml_status_name(st))}: ${M.UTF8ToString(M._ml_last_error())}`);
    const ctx = M.HEAP32[out >> 2];
    if (handle.format === 'gguf') freeModel(M, handle);  // converted: the file's bytes are not read again
    return ctx;
  } finally {
    M._free(opts); M._free(out); M._free(name); M._free(tok);
  }
}

export function freeModel(M, handle) {
  if (handle.ptr) M._mlw_model_free(handle.ptr);
  if (handle.stream) M._mlw_gguf_free(handle.stream);
  handle.ptr = 0;
  handle.stream = 0;
}
