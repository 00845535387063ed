// --pre-js of the node builds (ml_run.js, ml_tests.js; cmake/wasm.cmake): Emscripten's getenv()
// sees only its own default environment, so copy node's process.env in before main() runs. The
// tests pass ML_SHARED, ML_MODELS, ML_NEEDS_SHARED through it, exactly as for native binaries.
Module['preRun'] = Module['preRun'] || [];
Module['preRun'].push(function () {
  // ENV exists only when the program uses the environment (getenv/environ).
  if (typeof ENV === 'object' && typeof process === 'object' && process.env) {
    for (var k in process.env) ENV[k] = process.env[k];
  }
});
