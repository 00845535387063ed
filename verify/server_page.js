// ml_server's chat page (GET /, server/page.html) and CORS (--cors-origin) in headless Chromium
// (Debian's /usr/bin/chromium driven by playwright-core, installed by verify/server_page.sh):
//   - the page without the API key asks for one; with it, a scripted conversation (a system prompt,
//     temperature 0, two turns) streams replies equal to the same requests' non-streamed text;
//   - Stop during a long reply ends the stream in the page and frees the server's slot;
//   - a page served from another port that --cors-origin names calls the server (the preflight is
//     answered without the key), one from a port it does not name is blocked by the browser.
// Screenshots: $ML_OUT (default build/server_page): page_key.png, page_chat.png, page_stopped.png.
//
//   node verify/server_page.js PLAYWRIGHT_DIR   (environment: ML_SERVER, ML_PYTHON, ML_SOURCE, ML_OUT)
'use strict';
const {execFileSync} = require('child_process');
const fs = require('fs');
const http = require('http');
const os = require('os');
const path = require('path');
const spawned = require('./server_spawn.js');

const env = process.env;
const SOURCE = env.ML_SOURCE || path.join(__dirname, '..');
const MLTK = path.join(SOURCE, 'fuzz', 'data', 'encode_tokenizer.mltk');
const OUT = env.ML_OUT || path.join(SOURCE, 'build', 'server_page');
const CHROMIUM = env.ML_CHROMIUM || '/usr/bin/chromium';
const KEY = 'page-key';
const playwright = require(path.join(process.argv[2], 'node_modules', 'playwright-core'));

const {check, done} = spawned.checks();

// A static server on a free loopback port for the cross-origin page (its fetch target in the query).
function pageServer() {
  const html = `<!doctype html><meta charset="utf-8"><title>cors</title><script>
  window.result = (async () => {
    const target = new URLSearchParams(location.search).get('target');
    try {
      const r = await fetch(target + '/v1/completions', {method: 'POST',
        headers: {'Authorization': 'Bearer ${KEY}', 'Content-Type': 'application/json'},
        body: JSON.stringify({prompt: 'Hello', max_tokens: 3, temperature: 0})});
      return 'status ' + r.status + ' ' + (await r.json()).object;
    } catch (e) { return 'blocked: ' + e.name; }
  })();</script>`;
  return new Promise((resolve) => {
    const s = http.createServer((req, res) => res.end(html));
    s.listen(0, '127.0.0.1', () => resolve(s));
  });
}

function post(port, body) {
  return new Promise((resolve, reject) => {
    const req = http.request({host: '127.0.0.1', port, method: 'POST', path: '/v1/chat/completions',
                              headers: {'Content-Type': 'application/json', Authorization: 'Bearer ' + KEY}}, (res) => {
      let t = '';
      res.on('data', (d) => (t += d));
      res.on('end', () => resolve(JSON.parse(t)));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

async function main() {
  const t0 = Date.now();
  fs.mkdirSync(OUT, {recursive: true});
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ml_page_'));
  const model = path.join(tmp, 'slow_q8_0.mlb');  // slow enough that a long reply lasts seconds
  execFileSync(env.ML_PYTHON || '/usr/bin/python3', [path.join(SOURCE, 'tools', 'gen_random.py'), model, '--dim', '512',
    '--hidden', '1536', '--layers', '8', '--heads', '8', '--kv-heads', '4', '--vocab', '320', '--seq', '512',
    '--seed', '11', '--wtype', 'q8_0', '--layout', 'rows', '-q']);
  const allowed = await pageServer(), other = await pageServer();
  const origin = (s) => 'http://127.0.0.1:' + s.address().port;
  const srv = await spawned.startServer(env.ML_SERVER, [model, '-z', MLTK, '--chat-template', 'chatml', '-t', '1',
    '--parallel', '2', '--api-key', KEY, '--cors-origin', origin(allowed)]);
  const base = 'http://127.0.0.1:' + srv.port;
  const browser = await playwright.chromium.launch({executablePath: CHROMIUM, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
           '--disable-component-update', '--disable-sync']});
  try {
    const context = await browser.newContext({viewport: {width: 1100, height: 700}});
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    const outside = [];
    page.on('request', (r) => { if (!r.url().startsWith(base)) outside.push(r.url()); });

    // Without the key: the page asks for one.
    await page.goto(base + '/');
    await page.waitForSelector('#keybox', {state: 'visible', timeout: 10000});
    check(true, 'without the API key the page asks for one');
    await page.screenshot({path: path.join(OUT, 'page_key.png')});
    await page.fill('#key', KEY);
    await page.click('#savekey');
    await page.waitForSelector('#keybox', {state: 'hidden', timeout: 10000});
    const status = await page.textContent('#status');
    check(/build, context 512, 2 slot\(s\), chat template chatml/.test(status), 'with the key: the server\'s props shown', status);

    // A scripted conversation: system prompt, greedy, two turns; each reply = the API's for the same messages.
    const system = 'You are terse.';
    await page.fill('#system', system);
    await page.fill('#temperature', '0');
    await page.fill('#max_tokens', '24');
    const history = [{role: 'system', content: system}];
    for (const [i, msg] of ['Hello there', 'Go on'].entries()) {
      await page.fill('#input', msg);
      await page.press('#input', 'Enter');
      const sel = `.msg.assistant:nth-of-type(${2 * i + 2})`;
      await page.waitForFunction((s) => { const e = document.querySelector(s); return e && e.dataset.finish; }, sel,
                                 {timeout: 30000});
      const shown = await page.$eval(sel, (e) => [e.textContent, e.dataset.finish]);
      history.push({role: 'user', content: msg});
      const api = await post(srv.port, {messages: history, temperature: 0, max_tokens: 24});
      const want = api.choices[0].message.content;
      check(shown[0] === want && shown[1] === api.choices[0].finish_reason && (i > 0 || want.length > 0),
            `turn ${i + 1}: the streamed reply is the API's text (${JSON.stringify(want).slice(0, 40)}...)`,
            JSON.stringify(shown) + ' vs ' + JSON.stringify(want));
      history.push({role: 'assistant', content: want});
    }
    await page.screenshot({path: path.join(OUT, 'page_chat.png')});

    // Stop mid-reply: the page shows it stopped, the server's slot is idle soon after. The click is
    // made inside the page the moment the reply's first text appears (a MutationObserver), not by
    // playwright after a round trip: on a loaded machine that came too late, after this random
    // model's reply had ended by itself. A reply whose first network read also held its end is a
    // natural end: then the next seed is tried, three at most.
    const last = () => page.evaluate(() => { const m = document.querySelectorAll('.msg');
                                              const e = m[m.length - 1]; return [e.className, e.dataset.finish || '', e.textContent]; });
    await page.fill('#max_tokens', '300');  // with the conversation so far, inside the context of 512
    await page.fill('#temperature', '0.8');
    let fin = null;
    const tries = [];
    for (const seed of ['3', '5', '7']) {
      await page.fill('#seed', seed);
      await page.fill('#input', 'A long story please');
      await page.evaluate(() => {
        const obs = new MutationObserver(() => {
          const m = document.querySelectorAll('.msg.assistant, .msg.error');
          const e = m[m.length - 1];
          if (e && !e.dataset.finish && e.textContent.length > 0) {
            obs.disconnect();
            document.getElementById('stop').click();
          }
        });
        obs.observe(document.body, {subtree: true, childList: true, characterData: true});
      });
      await page.press('#input', 'Enter');
      await page.waitForFunction(() => { const m = document.querySelectorAll('.msg.assistant, .msg.error');
                                         const e = m[m.length - 1]; return e.dataset.finish; },
                                 null, {timeout: 30000}).catch(async (e) => {
        await page.screenshot({path: path.join(OUT, 'page_failure.png')});
        throw e;
      });
      fin = await last();
      tries.push(`seed ${seed}: ${fin[1]}`);
      if (fin[1] === 'stopped') break;
    }
    check(fin[0] === 'msg assistant' && fin[1] === 'stopped', 'Stop ends the reply in the page', tries.join(', ') + ' | ' + fin.join(' | '));
    let idle = false;
    for (let t = 0; t < 100 && !idle; ++t) {
      const h = await (await fetch(base + '/health')).json();
      idle = h.slots_processing === 0;
      if (!idle) await new Promise((r) => setTimeout(r, 50));
    }
    check(idle, 'after Stop the server\'s slot is idle within 5 s', '');
    await page.screenshot({path: path.join(OUT, 'page_stopped.png')});
    check(errors.length === 0, 'no page errors', errors.join('\n'));
    check(outside.length === 0, 'the page fetched nothing from elsewhere', outside.join(' '));

    // CORS: from the named origin the call works; from another port the browser blocks it.
    for (const [s, want] of [[allowed, /^status 200 text_completion$/], [other, /^blocked: TypeError$/]]) {
      const p = await context.newPage();
      await p.goto(origin(s) + '/?target=' + encodeURIComponent(base));
      const got = await p.evaluate(() => window.result);
      check(want.test(got), `a page from ${origin(s)}: ${want}`, got);
      await p.close();
    }
  } finally {
    await browser.close();
    allowed.close();
    other.close();
    const rc = await spawned.stopServer(srv);
    check(rc === 0, 'ml_server exit status 0', rc);
    fs.rmSync(tmp, {recursive: true, force: true});
  }
  done(t0);
}
main().catch((e) => {
  console.log('FAIL ' + (e.stack || e));
  process.exit(1);
});
