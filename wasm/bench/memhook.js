// wasm/bench: loaded first in every Worker the bench page starts (bench.html wraps the Worker
// constructor), before the engine's own worker script. Records each WebAssembly.Memory the worker
// makes or instantiates (constructed: the pthreads builds' shared memory and Emscripten's imported
// memory; exported by an instance: the rest) in self.__wasmMemories, so the driver
// (side_by_side.mjs) reads both engines' wasm memory the same way: buffer.byteLength of each, after
// the run (wasm memory never shrinks, so that is its peak). A plain script: importScripts and
// import both load it.
(() => {
  if (self.__wasmMemories) return;
  const mems = (self.__wasmMemories = []);
  const W = WebAssembly;
  const Memory = W.Memory, Instance = W.Instance;
  const keep = (m) => {
    if (m instanceof Memory && !mems.includes(m)) mems.push(m);
    return m;
  };
  const scan = (inst) => {
    if (inst instanceof Instance) for (const v of Object.values(inst.exports)) keep(v);
    return inst;
  };
  W.Memory = new Proxy(Memory, {construct: (t, args, nt) => keep(Reflect.construct(t, args, nt))});
  W.Instance = new Proxy(Instance, {construct: (t, args, nt) => scan(Reflect.construct(t, args, nt))});
  for (const f of ['instantiate', 'instantiateStreaming']) {
    const orig = W[f];
    if (orig) W[f] = function (...args) {
      return orig.apply(this, args).then((r) => (scan(r instanceof Instance ? r : r.instance), r));
    };
  }
})();
