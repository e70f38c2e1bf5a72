// Runs the official Flagsmith Node SDK with flag analytics on against a flagpole instance.
// Driven by tests/serve/test_analytics.py:
//   node analytics.js INPUT.json OUTPUT.json
// INPUT:  {"api_url": "http://127.0.0.1:PORT/api/v1/", "key": "...", "rounds": N,
//          "identifier": "..."}
// Each round reads every flag of the environment once (isFeatureEnabled) and every flag of the
// identity once (getFeatureValue); then the SDK's analytics are flushed.
// OUTPUT: {"tracked": {feature name: evaluations the SDK counted}, "flushed": true}
'use strict';
const fs = require('fs');
const { Flagsmith } = require('flagsmith-nodejs');

async function main() {
  const [input, output] = process.argv.slice(2);
  const req = JSON.parse(fs.readFileSync(input, 'utf8'));
  const client = new Flagsmith({
    environmentKey: req.key,
    apiUrl: req.api_url,
    enableAnalytics: true,
    requestTimeoutMs: 10000,
    retries: 1,
  });
  const tracked = {};
  const count = (name) => { tracked[name] = (tracked[name] || 0) + 1; };
  for (let round = 0; round < req.rounds; round++) {
    const env = await client.getEnvironmentFlags();
    for (const flag of env.allFlags()) {
      env.isFeatureEnabled(flag.featureName);
      count(flag.featureName);
    }
    const identity = await client.getIdentityFlags(req.identifier, { plan: 'pro' });
    for (const flag of identity.allFlags()) {
      identity.getFeatureValue(flag.featureName);
      count(flag.featureName);
    }
  }
  // The SDK posts on its own only once 10 s have passed at a later evaluation; flush as an
  // application does before it exits.
  await client.analyticsProcessor.flush();
  const left = Object.keys(client.analyticsProcessor.analyticsData).length;
  await client.close();
  fs.writeFileSync(output, JSON.stringify({ tracked, flushed: left === 0 }));
}

main().catch((err) => {
  console.error(err && err.stack ? err.stack : err);
  process.exit(1);
});
