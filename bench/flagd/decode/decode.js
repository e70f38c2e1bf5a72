// What a Node caller pays for a ResolveAll answer: decodes saved answer bytes with protobufjs
// (the runtime the flagd JS provider's generated messages use) from the vendored schema, and
// reads every flag (reason, variant, value, metadata as a plain object), for about a second.
// Prints one JSON line: µs per decode.
//
//   node decode.js ANSWER.bin PROTO_ROOT
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const protobuf = require('protobufjs');

const [answer, protoRoot] = process.argv.slice(2);
const root = new protobuf.Root();
root.resolvePath = (origin, target) =>
  target.startsWith('google/') ? target : path.join(protoRoot, target);
root.loadSync('flagd/evaluation/v1/evaluation.proto');
root.resolveAll();
const Response = root.lookupType('flagd.evaluation.v1.ResolveAllResponse');
const Struct = root.lookupType('google.protobuf.Struct');
const data = fs.readFileSync(answer);

function plain(s) {
  return Struct.toObject(s, { oneofs: true });
}

function read() {
  const message = Response.decode(data);
  let seen = 0;
  for (const [key, flag] of Object.entries(message.flags)) {
    let value = flag.value ? flag[flag.value] : undefined;
    if (flag.value === 'objectValue') value = plain(value);
    const metadata = flag.metadata ? plain(flag.metadata) : {};
    seen += key.length + flag.reason.length + flag.variant.length + (value !== undefined) + Object.keys(metadata).length;
  }
  return seen;
}

function run(n) {
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) read();
  return Number(process.hrtime.bigint() - start) / 1e9;
}

run(500);
let n = 500;
for (;;) {
  const elapsed = run(n);
  if (elapsed > 0.3) {
    n = Math.max(1, Math.floor(n / elapsed));
    break;
  }
  n *= 4;
}
const elapsed = run(n);
const flags = Object.keys(Response.decode(data).flags).length;
console.log(JSON.stringify({ language: 'node', bytes: data.length, flags, us_per_decode: (elapsed / n) * 1e6 }));
