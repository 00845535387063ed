// legacy-ml package: the Worker the browser engine runs in (index.js starts it). The protocol,
// private to index.js and this file:
//   page → worker  {id, op: 'open'|'generate'|'tokenize'|'detokenize'|'memory'|'unload', args}
//                  {op: 'abort', target: id}            (stops generation `target` at its next token)
//   worker → page  {id, progress}                       (open: loading progress)
//                  {id, chunk: {text, finish}}          (generate: each piece of text)
//                  {id, result} | {id, error: {name, message}}   (the end of every call)
import {EngineCore} from './engine.js';

const core = new EngineCore();

self.onmessage = async (e) => {
  const {id, op, args} = e.data;
  if (op === 'abort') {
    core.abort(e.data.target);
    return;
  }
  try {
    let result;
    if (op === 'open') result = await core.open(args, (progress) => self.postMessage({id, progress}));
    else if (op === 'generate') result = await core.generate(args.kind, id, args.request, (text, finish) => self.postMessage({id, chunk: {text, finish}}));
    else if (op === 'tokenize') result = core.tokenize(args.text, args.add_bos);
    else if (op === 'detokenize') result = core.detokenize(args.ids);
    else if (op === 'memory') result = core.memory();
    else if (op === 'unload') result = core.unload();
    else throw new Error(`unknown operation ${op}`);
    self.postMessage({id, result});
  } catch (err) {
    self.postMessage({id, error: {name: err.name || 'Error', message: err.message || String(err)}});
  }
};
