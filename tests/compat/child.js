// SPDX-License-Identifier: MIT
// Node in the compatibility suite: child_process — spawnSync of a shell,
// execFile of node itself, fork() with messages, a child's exit status and
// its death by a signal.
'use strict';
const cp = require('child_process');

if (process.argv[2] === 'forked') {
  process.on('message', (m) => {
    process.send({ echo: m.n * 2 });
    process.disconnect();
  });
  return;
}

const sh = cp.spawnSync('sh', ['-c', 'echo from sh; echo to stderr >&2; exit 7']);
console.log(`sh: ${sh.stdout.toString().trim()} / ${sh.stderr.toString().trim()} / status ${sh.status}`);
const killed = cp.spawnSync('sh', ['-c', 'kill -TERM $$']);
console.log(`killed: status ${killed.status} signal ${killed.signal}`);
cp.execFile(process.execPath, ['-e', 'console.log(6 * 7)'], (err, out) => {
  console.log(`execFile: ${err ? err.message : out.trim()}`);
  const f = cp.fork(__filename, ['forked']);
  f.on('message', (m) => console.log(`fork: ${JSON.stringify(m)}`));
  f.on('exit', (code) => console.log(`fork exited ${code}`));
  f.send({ n: 21 });
});
