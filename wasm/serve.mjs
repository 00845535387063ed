// A static server for the pages that makes them cross-origin isolated, so the browser gives them
// SharedArrayBuffer and the threaded build (ml_web_simd128_threads) can run:
//   Cross-Origin-Opener-Policy: same-origin
//   Cross-Origin-Embedder-Policy: require-corp
// (any server will do with these two headers on the page; README.md, "Threads", says how to set
// them elsewhere). For the tests it also counts requests and bytes sent.
//
//   node wasm/serve.mjs DIR [--port N] [--no-isolation]
// prints "serving DIR on http://127.0.0.1:PORT/ (isolated|not isolated)" once listening.
// Files get ETag (size and modification time), Last-Modified and Content-Length; HEAD is answered.
// Test endpoints:
//   /__requests           JSON {"<METHOD> <path>": count, ...} and {"bytes <path>": body bytes sent}
//   /__huge.mlb           claims 5 GiB (Content-Length) and sends zeros slowly, 1 MiB at a time
//                         (a model no wasm32 page can hold: the loader must refuse it from the headers)
import fs from 'fs';
import http from 'http';
import path from 'path';

const args = process.argv.slice(2);
const root = path.resolve(args[0] || '.');
const port = args.includes('--port') ? Number(args[args.indexOf('--port') + 1]) : 0;
const isolated = !args.includes('--no-isolation');
const TYPES = {'.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm',
               '.json': 'application/json', '.css': 'text/css', '.png': 'image/png'};
const counts = {};
const count = (k, n = 1) => { counts[k] = (counts[k] || 0) + n; };

function headers(extra) {
  const h = {'Cache-Control': 'no-store', ...extra};
  if (isolated) {
    h['Cross-Origin-Opener-Policy'] = 'same-origin';
    h['Cross-Origin-Embedder-Policy'] = 'require-corp';
    h['Cross-Origin-Resource-Policy'] = 'same-origin';
  }
  return h;
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://x');
  const p = decodeURIComponent(url.pathname);
  count(`${req.method} ${p}`);
  if (p === '/__requests') {
    res.writeHead(200, headers({'Content-Type': 'application/json'}));
    res.end(JSON.stringify(counts));
    return;
  }
  if (p === '/__huge.mlb') {
    const total = 5 * 1024 * 1024 * 1024;
    res.writeHead(200, headers({'Content-Type': 'application/octet-stream', 'Content-Length': String(total), 'ETag': '"huge"'}));
    if (req.method === 'HEAD') { res.end(); return; }
    const chunk = Buffer.alloc(1 << 20);
    chunk.write('MLB1');
    let sent = 0;
    const timer = setInterval(() => {
      if (res.destroyed || sent >= 64 * chunk.length) { clearInterval(timer); res.destroy(); return; }
      res.write(chunk);
      sent += chunk.length;
      count(`bytes ${p}`, chunk.length);
    }, 50);
    res.on('close', () => clearInterval(timer));
    return;
  }
  const file = path.join(root, path.normalize(p).replace(/^(\.\.[/\\])+/, ''));
  let st;
  try {
    st = fs.statSync(file.endsWith('/') ? path.join(file, 'index.html') : file);
  } catch (e) {
    res.writeHead(404, headers({'Content-Type': 'text/plain'}));
    res.end('not found');
    return;
  }
  const f = st.isDirectory() ? path.join(file, 'index.html') : file;
  if (st.isDirectory()) st = fs.statSync(f);
  const etag = `"${st.size.toString(16)}-${Math.floor(st.mtimeMs).toString(16)}"`;
  res.writeHead(200, headers({'Content-Type': TYPES[path.extname(f)] || 'application/octet-stream',
                              'Content-Length': String(st.size), 'ETag': etag,
                              'Last-Modified': st.mtime.toUTCString()}));
  if (req.method === 'HEAD') { res.end(); return; }
  const s = fs.createReadStream(f);
  s.on('data', (c) => count(`bytes ${p}`, c.length));
  s.pipe(res);
});
server.listen(port, '127.0.0.1', () => {
  console.log(`serving ${root} on http://127.0.0.1:${server.address().port}/ (${isolated ? 'isolated' : 'not isolated'})`);
});
