// Evaluates flags with the OpenFeature JS server SDK and the OFREP provider against flagpole.
// Driven by tests/ofrep/test_ofrep_interop.py:
//   node evaluate.js INPUT.json OUTPUT.json
// INPUT:  {"providers": {NAME: {"baseUrl": "...", "headers": [[name, value], ...]}},
//          "cases": [{"provider": NAME, "type": "boolean"|"string"|"number"|"object",
//                     "flag": "...", "default": ..., "context": {...}}]}
// OUTPUT: [{"value", "variant", "reason", "errorCode", "errorMessage", "flagMetadata"}, ...]
//         (one per case; a missing member is null)
'use strict';
const fs = require('fs');
const { OpenFeature } = require('@openfeature/server-sdk');
const { OFREPProvider } = require('@openfeature/ofrep-provider');

const METHODS = {
  boolean: 'getBooleanDetails',
  string: 'getStringDetails',
  number: 'getNumberDetails',
  object: 'getObjectDetails',
};

function orNull(v) {
  return v === undefined ? null : v;
}

async function main() {
  const [input, output] = process.argv.slice(2);
  const req = JSON.parse(fs.readFileSync(input, 'utf8'));
  for (const [name, options] of Object.entries(req.providers)) {
    await OpenFeature.setProviderAndWait(name, new OFREPProvider(options));
  }
  const results = [];
  for (const c of req.cases) {
    const client = OpenFeature.getClient(c.provider);
    const details = await client[METHODS[c.type]](c.flag, c.default, c.context || {});
    results.push({
      value: orNull(details.value),
      variant: orNull(details.variant),
      reason: orNull(details.reason),
      errorCode: orNull(details.errorCode),
      errorMessage: orNull(details.errorMessage),
      flagMetadata: orNull(details.flagMetadata),
    });
  }
  await OpenFeature.close();
  fs.writeFileSync(output, JSON.stringify(results));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
