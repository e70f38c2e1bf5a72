// Evaluates flags with the OpenFeature JS server SDK and the flagd provider in RPC mode
// (gRPC, flagd.evaluation.v2) against flagpole. Driven by tests/flagd/test_flagd_node.py:
//   node evaluate.js INPUT.json OUTPUT.json
// INPUT:  {"port": N, "providers": {NAME: {"selector": KEY, "cache": "disabled"|"lru", or any
//          other provider option, e.g. "resolverType": "in-process" with the sync "port"}},
//          "cases": [{"provider", "type": "boolean"|"string"|"number"|"object", "flag",
//                     "default", "context", "metadata": true (optional)}]}
// OUTPUT: {"results": [{"value", "variant", "reason", "errorCode", and "flagMetadata" when the
//          case asks for it}, ...]}
// Or, as a session (flagd_support.DriverSession): node evaluate.js --session, the same port
// and providers as the first line of input, then one line of cases at a time; provider events
// (READY, ConfigurationChanged) are printed as they happen.
'use strict';
const fs = require('fs');
const { OpenFeature, ProviderEvents } = require('@openfeature/server-sdk');
const { FlagdProvider } = require('@openfeature/flagd-provider');

const METHODS = {
  boolean: 'getBooleanDetails',
  string: 'getStringDetails',
  number: 'getNumberDetails',
  object: 'getObjectDetails',
};

function orNull(v) {
  return v === undefined ? null : v;
}

async function evaluate(cases) {
  const results = [];
  for (const c of cases) {
    const client = OpenFeature.getClient(c.provider);
    const d = await client[METHODS[c.type]](c.flag, c.default, c.context || {});
    const result = {
      value: orNull(d.value),
      variant: orNull(d.variant),
      reason: orNull(d.reason),
      errorCode: orNull(d.errorCode),
    };
    if (c.metadata) {
      result.flagMetadata = d.flagMetadata || {};
    }
    results.push(result);
  }
  return results;
}

// One provider per domain, named as in `providers`.
async function setProviders(port, providers) {
  for (const [name, options] of Object.entries(providers)) {
    const provider = new FlagdProvider({
      host: '127.0.0.1',
      port,
      resolverType: 'rpc',
      deadlineMs: 5000,
      ...options,
    });
    await OpenFeature.setProviderAndWait(name, provider);
  }
}

function print(message) {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

async function session() {
  const lines = require('readline').createInterface({ input: process.stdin });
  let setUp = false;
  for await (const line of lines) {
    const req = JSON.parse(line);
    if (!setUp) {
      await setProviders(req.port, req.providers);
      for (const name of Object.keys(req.providers)) {
        const client = OpenFeature.getClient(name);
        client.addHandler(ProviderEvents.Ready, () => print({ event: 'ready', provider: name }));
        client.addHandler(ProviderEvents.ConfigurationChanged, (details) =>
          print({ event: 'changed', provider: name, flags: details.flagsChanged || [] }));
      }
      setUp = true;
      print({ reply: 'ready' });
    } else {
      print({ reply: await evaluate(req.cases) });
    }
  }
  await OpenFeature.close();
}

async function main() {
  if (process.argv[2] === '--session') {
    return session();
  }
  const [input, output] = process.argv.slice(2);
  const req = JSON.parse(fs.readFileSync(input, 'utf8'));
  await setProviders(req.port, req.providers);
  const out = { results: await evaluate(req.cases) };
  await OpenFeature.close();
  fs.writeFileSync(output, JSON.stringify(out));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
