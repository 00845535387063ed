// N concurrent streaming completions through the official OpenAI client (the `openai` npm package
// pinned in tools/npm), for tools/bench_server.py --openai. Prints one JSON line: per client the
// tokens generated (the final chunk's usage), and the times in seconds from sending all requests to
// its first text chunk (time to first token) and to its end.
//
//   node tools/bench_server_clients.js PORT CLIENTS TOKENS PROMPT...   (prompt i % count for client i)
'use strict';
const path = require('path');
const {createRequire} = require('module');

let OpenAI = createRequire(path.join(__dirname, 'npm', 'package.json'))('openai');
OpenAI = OpenAI.OpenAI || OpenAI.default || OpenAI;

async function one(client, prompt, tokens, t0) {
  const stream = await client.completions.create(
      {model: 'ml', prompt, max_tokens: tokens, temperature: 0, stream: true});
  let first = null, n = 0, pieces = 0;
  for await (const chunk of stream) {
    const c = chunk.choices && chunk.choices[0];
    if (c && c.text) {
      pieces++;
      if (first === null) first = performance.now();
    }
    if (chunk.usage) n = chunk.usage.completion_tokens;
  }
  const end = performance.now();
  return {tokens: n || pieces, ttft_s: ((first === null ? end : first) - t0) / 1000, end_s: (end - t0) / 1000};
}

async function main() {
  const [port, clients, tokens, ...prompts] = process.argv.slice(2);
  const client = new OpenAI({baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'none', maxRetries: 0, timeout: 3600e3});
  const t0 = performance.now();
  const runs = [];
  for (let i = 0; i < Number(clients); i++) runs.push(one(client, prompts[i % prompts.length], Number(tokens), t0));
  const res = await Promise.all(runs);
  console.log(JSON.stringify({wall_s: (performance.now() - t0) / 1000, clients: res}));
}

main().catch((e) => {
  console.error('bench_server_clients: ' + (e && e.message ? e.message : e));
  process.exit(1);
});
