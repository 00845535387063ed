// What the node server tests (verify/server_*.js) share. ml_server as a child process:
// startServer(binary, args) resolves with the process (its .port read from the "listening on" line of
// stderr) or rejects naming why; stopServer(proc) sends SIGTERM and resolves with its exit status
// (or the signal's name). With ML_EMULATOR ('|'-separated: the win-* presets' wine_run.sh, which
// passes SIGTERM on as Ctrl-C) the binary is started through it; emulated(binary, args) gives the
// [program, args] pair for execFileSync. Their opening: npmPackages(names) loads the packages
// pinned in tools/npm (each one's default export where it has one), needFiles(files) checks the
// inputs, each exiting 77 (skipped, ctest's SKIP_RETURN_CODE) naming what is missing; checks()
// gives check(ok, what, detail), which prints and counts, and done(t0), which prints the summary
// and exits 1 after a failure, else 0.
'use strict';
const {spawn} = require('child_process');
const fs = require('fs');
const path = require('path');
const {createRequire} = require('module');

const EMU = (process.env.ML_EMULATOR || '').split('|').filter((a) => a);
const emulated = (binary, args) => (EMU.length ? [EMU[0], [...EMU.slice(1), binary, ...args]] : [binary, args]);

function startServer(binary, args) {
  return new Promise((resolve, reject) => {
    const proc = spawn(...emulated(binary, [...args, '--port', '0']), {stdio: ['ignore', 'ignore', 'pipe']});
    let log = '';
    const timer = setTimeout(() => reject(new Error('ml_server did not start: ' + log)), 60000);
    proc.stderr.on('data', (d) => {
      log += d.toString();
      const m = /listening on http:\/\/[^ ]*:(\d+)/.exec(log);
      if (m && !proc.port) {
        proc.port = Number(m[1]);
        clearTimeout(timer);
        resolve(proc);
      }
    });
    proc.on('exit', (code) => reject(new Error('ml_server exited with ' + code + ': ' + log)));
  });
}

function stopServer(proc) {
  return new Promise((resolve) => {
    proc.removeAllListeners('exit');
    proc.on('exit', (code, sig) => resolve(code === 0 ? 0 : code === null ? sig : code));
    proc.kill('SIGTERM');
  });
}

function skip(why) {
  console.log('*** SKIPPED: ' + why);
  process.exit(77);
}

function npmPackages(names) {
  const source = process.env.ML_SOURCE || path.join(__dirname, '..');
  try {
    const req = createRequire(path.join(source, 'tools', 'npm', 'package.json'));
    return names.map((n) => req(n).default || req(n));
  } catch (e) {
    return skip(names.join(' or ') + ' is not installed in tools/npm (tools/setup.sh runs npm ci): ' + e.message);
  }
}

function needFiles(files) {
  for (const f of files)
    if (!f || !fs.existsSync(f)) skip(f ? 'missing ' + f : 'an input path is unset (ML_SERVER, ML_MODELS, ML_SHARED: cmake/Tests.cmake sets them)');
}

// quiet: print only the failures (every check with VERBOSE set in the environment).
function checks({quiet = false} = {}) {
  const c = {passes: 0, failures: 0};
  c.check = (ok, what, detail) => {
    if (!ok || !quiet || process.env.VERBOSE) console.log((ok ? 'ok   ' : 'FAIL ') + what + (ok ? '' : '\n     ' + detail));
    if (ok) c.passes++; else c.failures++;
  };
  c.done = (t0) => {
    console.log(`${c.failures ? 'FAILED' : 'passed'}: ${c.passes} checks, ${c.failures} failures (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
    process.exit(c.failures ? 1 : 0);
  };
  return c;
}

module.exports = {startServer, stopServer, emulated, npmPackages, needFiles, checks};
