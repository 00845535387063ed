// wasm.npm's page (page.html): the installed package, an animation, and the measurements
// browser_test.mjs reads: frames drawn and main-thread long tasks (PerformanceObserver 'longtask':
// every task over 50 ms) that end after mark(), up to report().
import * as legacyMl from './node_modules/legacy-ml/index.js';

const box = document.getElementById('box');
let frames = 0;
function frame(t) {
  frames++;
  box.style.left = `${40 + 200 * (0.5 + 0.5 * Math.sin(t / 300))}px`;
  requestAnimationFrame(frame);
}
requestAnimationFrame(frame);

const longTasks = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) longTasks.push({start: e.startTime, duration: e.duration});
}).observe({type: 'longtask', buffered: true});

let t0 = 0, f0 = 0;
window.t = {
  ...legacyMl,
  mark() {
    t0 = performance.now();
    f0 = frames;
  },
  report() {
    const ms = performance.now() - t0;
    return {ms, frames: frames - f0, longTasks: longTasks.filter((e) => e.start + e.duration > t0)};
  },
  log(s) {
    document.getElementById('log').textContent += s + '\n';
  },
};
window.ready = true;
