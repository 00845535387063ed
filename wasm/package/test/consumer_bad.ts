// wasm.npm: wrong uses the declarations must reject (npm_test.sh expects exactly one tsc error per
// line marked ERROR, 4 in all).
import {createEngine} from 'legacy-ml';

export async function main(): Promise<void> {
  const engine = await createEngine({model: 42});                                      // ERROR: model
  await engine.chat.completions.create({messages: [{role: 'robot', content: 'hi'}]});  // ERROR: role
  const r = await engine.chat.completions.create({messages: [], stream: false});
  const n: number = r.choices[0].message.content;                                      // ERROR: string
  await engine.completions.create({prompt: 'x', temperature: 'hot'});                  // ERROR: number
}
