// ml_server's GET /metrics (server/metrics.{h,cc}): the text parsed by parse-prometheus-text-format
// (pinned in tools/npm), every family present with its type, and the counters' exact values after
// known requests: responses by status (200 / 400 / 404, a scrape counted in the next one), prompt
// tokens evaluated and reused from the KV cache and generated tokens equal to the sums of the
// requests' own "timings", the rates equal to those sums over the summed times, the gauges (queue,
// busy/idle slots, KV cache positions = the sum of /slots' n_past) idle and while a stream runs.
//
//   node verify/server_metrics.js     (environment: ML_SERVER, ML_MODELS, ML_SHARED, ML_SOURCE)
// Exit status: 0 passed, 1 failed, 77 skipped (the package is not installed: tools/setup.sh).
'use strict';
const http = require('http');
const path = require('path');
const spawned = require('./server_spawn.js');

const env = process.env;
const SOURCE = env.ML_SOURCE || path.join(__dirname, '..');
const TOK512 = path.join(env.ML_SHARED || '', 'models', 'stories260K', 'tok512.bin');
const STORIES = path.join(env.ML_MODELS || '', 'stories260K_q8_0.mlb');
const [parse] = spawned.npmPackages(['parse-prometheus-text-format']);
spawned.needFiles([env.ML_SERVER, TOK512, STORIES]);
const {check, done} = spawned.checks();
const eq = (got, want, what) => check(got === want, what + ' = ' + want, 'got ' + got);

function request(port, method, p, body) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    const req = http.request({host: '127.0.0.1', port, method, path: p,
                              headers: data === undefined ? {} : {'Content-Type': 'application/json'}}, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({status: res.statusCode, headers: res.headers, text}));
    });
    req.on('error', reject);
    if (data !== undefined) req.write(data);
    req.end();
  });
}

// The parsed families as {name: {type, samples: {labelsKey: number}}}.
async function scrape(port) {
  const r = await request(port, 'GET', '/metrics');
  check(r.status === 200 && r.headers['content-type'].startsWith('text/plain; version=0.0.4'),
        'GET /metrics: 200, text/plain; version=0.0.4', r.status + ' ' + r.headers['content-type']);
  const out = {};
  for (const f of parse(r.text)) {
    const samples = {};
    for (const m of f.metrics) samples[JSON.stringify(m.labels || {})] = Number(m.value);
    out[f.name] = {type: f.type, samples};
  }
  return out;
}
const value = (m, name, labels = {}) => (m[name] ? m[name].samples[JSON.stringify(labels)] : undefined);

const kFamilies = {
  ml_requests_total: 'COUNTER', ml_completions_total: 'COUNTER', ml_prompt_tokens_total: 'COUNTER',
  ml_prompt_tokens_cached_total: 'COUNTER', ml_generated_tokens_total: 'COUNTER', ml_prompt_seconds_total: 'COUNTER',
  ml_generation_seconds_total: 'COUNTER', ml_prompt_tokens_per_second: 'GAUGE', ml_generated_tokens_per_second: 'GAUGE',
  ml_requests_queued: 'GAUGE', ml_slots: 'GAUGE', ml_kv_cache_tokens: 'GAUGE', ml_kv_cache_usage_ratio: 'GAUGE',
};

async function main() {
  const t0 = Date.now();
  const srv = await spawned.startServer(env.ML_SERVER, [STORIES, '-z', TOK512, '--parallel', '2', '-t', '1']);
  try {
    const port = srv.port;
    let m = await scrape(port);
    for (const [name, type] of Object.entries(kFamilies)) eq(m[name] && m[name].type, type, name + "'s type");
    eq(value(m, 'ml_completions_total'), 0, 'completions before any request');
    eq(value(m, 'ml_slots', {state: 'idle'}), 2, 'idle slots');

    // Known requests: three completions (the second reuses the first's prompt from the KV cache),
    // one streamed, one 400 and one 404.
    const sums = {prompt: 0, cached: 0, generated: 0, prompt_ms: 0, gen_ms: 0};
    const add = (t) => {
      sums.prompt += t.prompt_n, sums.cached += t.cache_n, sums.generated += t.predicted_n;
      sums.prompt_ms += t.prompt_ms, sums.gen_ms += t.predicted_ms;
    };
    for (const [prompt, n] of [['Once upon a time', 8], ['Once upon a time', 5], ['The dog', 12]]) {
      const r = await request(port, 'POST', '/v1/completions', {prompt, max_tokens: n, temperature: 0});
      const j = JSON.parse(r.text);
      eq(r.status, 200, 'completion ' + prompt);
      add(j.timings);
    }
    const s = await request(port, 'POST', '/v1/completions', {prompt: 'Lily', max_tokens: 6, temperature: 0, stream: true});
    const events = s.text.split('\n\n').filter((e) => e.startsWith('data: {')).map((e) => JSON.parse(e.slice(6)));
    add(events[events.length - 1].timings);
    eq((await request(port, 'POST', '/v1/completions', '{"prompt": ')).status, 400, 'malformed JSON');
    eq((await request(port, 'GET', '/nowhere')).status, 404, 'unknown path');
    check(sums.cached > 0, 'the second request reused the KV cache', JSON.stringify(sums));

    m = await scrape(port);
    eq(value(m, 'ml_requests_total', {status: '200'}), 5, 'responses 200 (4 completions + the first scrape)');
    eq(value(m, 'ml_requests_total', {status: '400'}), 1, 'responses 400');
    eq(value(m, 'ml_requests_total', {status: '404'}), 1, 'responses 404');
    eq(value(m, 'ml_completions_total'), 4, 'completions');
    eq(value(m, 'ml_prompt_tokens_total'), sums.prompt, 'prompt tokens evaluated (the timings\' prompt_n)');
    eq(value(m, 'ml_prompt_tokens_cached_total'), sums.cached, 'prompt tokens reused (cache_n)');
    eq(value(m, 'ml_generated_tokens_total'), sums.generated, 'generated tokens (predicted_n)');
    eq(sums.generated, 8 + 5 + 12 + 6, 'every request ran to max_tokens');
    const close = (a, b) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b));
    const gsec = value(m, 'ml_generation_seconds_total'), psec = value(m, 'ml_prompt_seconds_total');
    check(close(gsec, sums.gen_ms / 1000) && close(psec, sums.prompt_ms / 1000), 'seconds = the timings\' sums',
          gsec + ' ' + psec + ' vs ' + JSON.stringify(sums));
    check(close(value(m, 'ml_generated_tokens_per_second'), sums.generated / gsec), 'generated tok/s = tokens / seconds',
          value(m, 'ml_generated_tokens_per_second'));
    check(close(value(m, 'ml_prompt_tokens_per_second'), sums.prompt / psec), 'prompt tok/s = tokens / seconds',
          value(m, 'ml_prompt_tokens_per_second'));
    eq(value(m, 'ml_requests_queued'), 0, 'queued');
    eq(value(m, 'ml_slots', {state: 'busy'}), 0, 'busy slots');
    const slots = JSON.parse((await request(port, 'GET', '/slots')).text);
    const kv = slots.reduce((a, x) => a + x.n_past, 0);
    eq(value(m, 'ml_kv_cache_tokens'), kv, 'KV cache positions = the sum of /slots\' n_past');
    check(close(value(m, 'ml_kv_cache_usage_ratio'), kv / (2 * slots[0].n_ctx)), 'KV usage ratio', value(m, 'ml_kv_cache_usage_ratio'));

    // A stream held open: one slot busy.
    await new Promise((resolve, reject) => {
      const req = http.request({host: '127.0.0.1', port, method: 'POST', path: '/v1/completions',
                                headers: {'Content-Type': 'application/json'}}, (res) => {
        res.once('data', async () => {
          try {
            const mm = await scrape(port);
            eq(value(mm, 'ml_slots', {state: 'busy'}), 1, 'busy slots while a stream runs');
            eq(value(mm, 'ml_slots', {state: 'idle'}), 1, 'idle slots while a stream runs');
            resolve();
          } catch (e) {
            reject(e);
          } finally {
            req.destroy();
          }
        });
      });
      req.on('error', () => {});
      req.end(JSON.stringify({prompt: 'Once', max_tokens: 400, temperature: 0, stream: true}));
    });
  } finally {
    const rc = await spawned.stopServer(srv);
    eq(rc, 0, 'ml_server exit status');
  }
  done(t0);
}
main().catch((e) => {
  console.log('FAIL ' + (e.stack || e));
  process.exit(1);
});
