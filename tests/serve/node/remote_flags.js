// Runs the official Flagsmith Node SDK in REMOTE evaluation mode against a flagpole instance.
// Driven by tests/serve/test_sdk_interop.py:
//   node remote_flags.js INPUT.json OUTPUT.json
// INPUT:  {"api_url": "http://127.0.0.1:PORT/api/v1/", "key": "...",
//          "identities": [{"identifier": "...", "traits": {"k": v}}]}
// OUTPUT: {"env": FLAGS, "identities": [FLAGS, ...]}, FLAGS = {name: {"id", "enabled", "value", "type"}}
'use strict';
const fs = require('fs');
const { Flagsmith } = require('flagsmith-nodejs');

function dump(flags) {
  const out = {};
  for (const f of flags.allFlags()) {
    out[f.featureName] = {
      id: f.featureId,
      enabled: f.enabled,
      value: f.value === undefined ? null : f.value,
      type: f.value === null || f.value === undefined ? 'null' : typeof f.value,
    };
  }
  return out;
}

async function main() {
  const [input, output] = process.argv.slice(2);
  const req = JSON.parse(fs.readFileSync(input, 'utf8'));
  const client = new Flagsmith({
    environmentKey: req.key,
    apiUrl: req.api_url,
    requestTimeoutMs: 10000,
    retries: 1,
  });
  const result = { env: dump(await client.getEnvironmentFlags()), identities: [] };
  for (const { identifier, traits } of req.identities) {
    result.identities.push(dump(await client.getIdentityFlags(identifier, traits)));
  }
  if (typeof client.close === 'function') await client.close();
  fs.writeFileSync(output, JSON.stringify(result));
}

main().catch((err) => {
  console.error(err && err.stack ? err.stack : err);
  process.exit(1);
});
