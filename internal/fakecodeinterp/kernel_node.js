// The driver of a node kernel process of sandboxkit's fake code
// interpreter (process.go): the same protocol as kernel_python.py. Code
// runs as a script in node's own global context, so var and function
// declarations persist between requests; the script's completion value
// (awaited when it is a promise) is the cell's result.
"use strict";
const fs = require("fs");
const readline = require("readline");
const util = require("util");
const vm = require("vm");

const mark = process.env.SANDBOXKIT_KERNEL_MARK;
delete process.env.SANDBOXKIT_KERNEL_MARK;
let seq = 0;
let count = 0;

// Between cells an interrupt does nothing; during one, breakOnSigint
// turns it into an error of the cell.
process.on("SIGINT", () => {});

function sync() {
  seq += 1;
  const line = mark + seq + "\n";
  for (const fd of [1, 2]) {
    try { fs.writeSync(fd, line); } catch (_) { /* closed by the code */ }
  }
  return seq;
}

function send(msg) {
  msg.seq = sync();
  fs.writeSync(4, JSON.stringify(msg) + "\n");
}

function bundle(value) {
  return { text: util.inspect(value) };
}

function error(e) {
  if (e instanceof Error) {
    return { name: e.name, value: e.message, traceback: e.stack || String(e) };
  }
  return { name: "Error", value: String(e), traceback: "Uncaught " + util.inspect(e) };
}

async function run(code) {
  count += 1;
  const script = new vm.Script(code, { filename: "Cell In[" + count + "]" });
  let value = script.runInThisContext({ breakOnSigint: true, displayErrors: false });
  if (value && typeof value.then === "function") {
    value = await value;
  }
  return value === undefined ? null : bundle(value);
}

async function main() {
  const input = readline.createInterface({ input: fs.createReadStream(null, { fd: 3 }), crlfDelay: Infinity });
  for await (const line of input) {
    const req = JSON.parse(line);
    for (const [k, v] of Object.entries(req.env || {})) {
      if (v === null) delete process.env[k];
      else process.env[k] = v;
    }
    try {
      send({ type: "done", result: await run(req.code), error: null });
    } catch (e) {
      send({ type: "done", result: null, error: error(e) });
    }
  }
  process.exit(0);
}

main();
