// ml_server as a child process for the node tests (server_openai.js, server_json_schema.js):
// startServer(args) resolves with the process (its .port read from the "listening on" line of
// stderr) or rejects naming why; stopServer(proc) sends SIGTERM and resolves with its exit status
// (or the signal's name). With ML_EMULATOR ('|'-separated: the win-* presets' wine_run.sh, which
// passes SIGTERM on as Ctrl-C) the binary is started through it; emulated(binary, args) gives the
// [program, args] pair for execFileSync.
'use strict';
const {spawn} = require('child_process');

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

module.exports = {startServer, stopServer, emulated};
