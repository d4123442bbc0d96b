// SPDX-License-Identifier: MIT
// Node in the compatibility suite: four worker_threads (one with a stack
// size of its own), results printed in a fixed order; one worker throws.
'use strict';
const { Worker, isMainThread, parentPort, workerData } = require('worker_threads');

if (isMainThread) {
  const runs = [0, 1, 2, 3].map((i) => new Promise((resolve) => {
    const opts = { workerData: i };
    if (i === 1) opts.resourceLimits = { stackSizeMb: 2 };
    const w = new Worker(__filename, opts);
    let got = null;
    w.on('message', (m) => { got = m; });
    w.on('error', (e) => { got = `worker ${i} threw: ${e.message}`; });
    w.on('exit', (code) => resolve(`${got} (exit ${code})`));
  }));
  Promise.all(runs).then((lines) => {
    for (const l of lines) console.log(l);
    console.error('workers: done');
  });
} else {
  if (workerData === 3) throw new Error('deliberate');
  let sum = 0;
  for (let k = 0; k < 1e6; k++) sum += k * (workerData + 1);
  parentPort.postMessage(`worker ${workerData}: ${sum}`);
}
