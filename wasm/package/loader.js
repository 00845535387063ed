// legacy-ml package: model bytes from what createEngine() was given. One function, the seam
// between the engine (engine.js) and the loading (issue 35 item 5 replaces this body with streamed
// loading into wasm memory and a cache; the signature stays):
//
//   loadModelBytes(source, onProgress) -> Promise<Uint8Array>
//     source      a URL (string or URL; in node also a file path), a Blob/File, an ArrayBuffer or
//                 a typed array
//     onProgress  ({loaded, total, fraction}) with total 0 and fraction null when the size is
//                 unknown; called as bytes arrive and once at the end
//
// Errors are one line naming the source.

function isNode() {
  return typeof process !== 'undefined' && !!(process.versions && process.versions.node) &&
         typeof window === 'undefined' && typeof WorkerGlobalScope === 'undefined';
}

function report(onProgress, loaded, total) {
  if (onProgress) onProgress({loaded, total, fraction: total > 0 ? Math.min(1, loaded / total) : null});
}

export function describeSource(source) {
  if (typeof source === 'string') return source;
  if (typeof URL !== 'undefined' && source instanceof URL) return source.href;
  if (typeof File !== 'undefined' && source instanceof File) return `file ${source.name}`;
  if (typeof Blob !== 'undefined' && source instanceof Blob) return 'a Blob';
  if (source instanceof ArrayBuffer) return 'an ArrayBuffer';
  if (ArrayBuffer.isView(source)) return 'a typed array';
  return typeof source;
}

export async function loadModelBytes(source, onProgress) {
  if (source instanceof ArrayBuffer) {
    report(onProgress, source.byteLength, source.byteLength);
    return new Uint8Array(source);
  }
  if (ArrayBuffer.isView(source)) {
    report(onProgress, source.byteLength, source.byteLength);
    return new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
  }
  if (typeof Blob !== 'undefined' && source instanceof Blob) {
    const bytes = new Uint8Array(await source.arrayBuffer());
    report(onProgress, bytes.length, bytes.length);
    return bytes;
  }
  let url = source instanceof URL ? source.href : source;
  if (typeof url !== 'string') throw new Error(`model: ${describeSource(source)} is not a URL, Blob, File or ArrayBuffer`);
  if (isNode() && !/^(https?|data|blob):/i.test(url)) {
    const fs = await import('node:fs/promises');
    const {fileURLToPath} = await import('node:url');
    const file = url.startsWith('file:') ? fileURLToPath(url) : url;
    let bytes;
    try {
      bytes = new Uint8Array(await fs.readFile(file));
    } catch (e) {
      throw new Error(`${file}: ${e.code || e.message}`);
    }
    report(onProgress, bytes.length, bytes.length);
    return bytes;
  }
  let r;
  try {
    r = await fetch(url);
  } catch (e) {
    throw new Error(`${url}: ${e.message}`);
  }
  if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
  const total = Number(r.headers.get('content-length')) || 0;
  if (!r.body || !r.body.getReader) {
    const bytes = new Uint8Array(await r.arrayBuffer());
    report(onProgress, bytes.length, bytes.length);
    return bytes;
  }
  const reader = r.body.getReader();
  const chunks = [];
  let loaded = 0;
  for (;;) {
    const {done, value} = await reader.read();
    if (done) break;
    chunks.push(value);
    loaded += value.length;
    report(onProgress, loaded, total);
  }
  const bytes = new Uint8Array(loaded);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.length;
  }
  report(onProgress, loaded, loaded);
  return bytes;
}
