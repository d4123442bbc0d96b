// SPDX-License-Identifier: MIT
// Node in the compatibility suite: RangeError from unbounded recursion,
// caught on the main thread and in a worker, then work goes on.
'use strict';
const { Worker, isMainThread, parentPort } = require('worker_threads');

function recurse(n) {
  return recurse(n + 1) + 1;
}

function overflow(who) {
  try {
    recurse(0);
    return `${who}: no RangeError`;
  } catch (e) {
    return `${who}: caught ${e.constructor.name}: ${e.message}`;
  }
}

if (isMainThread) {
  console.log(overflow('main'));
  const w = new Worker(__filename);
  w.on('message', (m) => console.log(m));
  w.on('exit', (code) => {
    console.log(`worker exited ${code}`);
    process.exitCode = 3;
  });
} else {
  parentPort.postMessage(overflow('worker'));
}
