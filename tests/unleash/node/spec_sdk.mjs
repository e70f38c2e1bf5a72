// Unleash's client specification through the official Node SDK fed by Flagpole: `unleash-client`
// reads one specification file's state from Flagpole's /api/client/features (a client token)
// and answers each of the file's cases locally, as an application would.
//
// Usage: node spec_sdk.mjs BASE_URL CLIENT_TOKEN SPEC_FILE
// Prints one JSON line: {"errors": [...], "cases": [{"description", "expected", "actual"}]},
// `actual` holding only what `expected` names (a boolean, or the variant's fields).
import { readFileSync } from 'node:fs';
import { Unleash } from 'unleash-client';

const [base, token, file] = process.argv.slice(2);
const spec = JSON.parse(readFileSync(file, 'utf8'));
const out = { errors: [], cases: [] };

const unleash = new Unleash({
  url: `${base}/api/`,
  appName: 'flagpole-spec',
  instanceId: 'spec-node',
  refreshInterval: 60000,
  disableMetrics: true,
  customHeaders: { Authorization: token },
});
unleash.on('error', (e) => out.errors.push(`unleash-client: ${e.message ?? e}`));
unleash.on('warn', () => {});
let timer;
await new Promise((resolve, reject) => {
  unleash.once('synchronized', resolve);
  timer = setTimeout(() => reject(new Error('unleash-client never synchronized')), 15000);
});
clearTimeout(timer);

for (const c of spec.tests ?? []) {
  out.cases.push({ description: c.description, expected: c.expectedResult,
    actual: unleash.isEnabled(c.toggleName, c.context) });
}
for (const c of spec.variantTests ?? []) {
  const v = unleash.getVariant(c.toggleName, c.context);
  const actual = {};
  for (const key of Object.keys(c.expectedResult)) actual[key] = v[key];
  out.cases.push({ description: c.description, expected: c.expectedResult, actual });
}
unleash.destroy();
console.log(JSON.stringify(out));
