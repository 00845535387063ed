// wasm.npm: a TypeScript consumer of the installed package, compiled with tsc --strict --noEmit
// (npm_test.sh). Uses every part of the API as README.md shows it.
import {createEngine, type ChatCompletion, type ChatCompletionChunk, type Engine, type EngineInfo, type WasmBuild} from 'legacy-ml';

export async function main(file: Blob): Promise<string> {
  const engine: Engine = await createEngine({
    model: file,
    threads: 2,
    cache: 'prefer',
    onProgress: (p) => console.log(p.loaded, p.total, p.fraction ?? 'unknown', p.phase),
  });
  const info: EngineInfo = engine.info;
  const build: WasmBuild = info.build;
  const isolated: boolean = info.isolated;
  const reply: ChatCompletion = await engine.chat.completions.create({
    messages: [{role: 'system', content: 'Be brief.'}, {role: 'user', content: 'Hello'}],
    max_tokens: 16, temperature: 0.7, top_p: 0.9, seed: 1, stop: ['\n'],
  });
  const text: string = reply.choices[0].message.content;
  const ac = new AbortController();
  const stream = await engine.chat.completions.create({messages: [{role: 'user', content: text}], stream: true, signal: ac.signal});
  let out = '';
  for await (const chunk of stream) {
    const c: ChatCompletionChunk = chunk;
    out += c.choices[0]?.delta.content ?? '';
    if (out.length > 100) ac.abort();
  }
  const done = await engine.completions.create({prompt: 'Once', max_tokens: 4, response_format: {type: 'json_object'}});
  const ids: number[] = await engine.tokenize(done.choices[0].text, {add_bos: false});
  const back: string = await engine.detokenize(ids);
  const cached: number | undefined = reply.usage.prompt_tokens_details.cached_tokens;
  await engine.unload();
  return `${build} ${isolated} ${info.threads} ${back} ${cached}`;
}
