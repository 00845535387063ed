// wasm.npm (browser_test.mjs): the machine-load reference for the long-task check: a Worker that
// burns CPU for e.data ms and posts a small message every 30 ms, as the engine posts its chunks
// (on an overloaded machine the page's main thread misses its slices even so).
self.onmessage = (e) => {
  const s = performance.now();
  let last = s, n = 0;
  for (let now = s; now - s < e.data; now = performance.now())
    if (now - last >= 30) {
      last = now;
      self.postMessage({tick: ++n});
    }
  self.postMessage({done: n});
};
