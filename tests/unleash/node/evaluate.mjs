// Unleash's official Node SDKs asked about given toggles for given contexts, so a test can set
// what they answer through one server beside what another answers: `unleash-client` (server
// side, /api/client/features with a client token, evaluating locally) and
// `unleash-proxy-client` (frontend, /api/frontend with a frontend token, one fetch per context).
//
// Usage: node evaluate.mjs IN.json, IN being
//   {"url": BASE_URL, "clientToken": T, "frontendToken": F, "appName": A,
//    "toggles": [names], "contexts": [{"userId": ..., "sessionId": ..., "properties": {...}}]}
// Prints one JSON line: {"errors": [...], "server": [per context {name: {enabled, variant}}],
// "frontend": [the same], "registered": bool, "metricsSent": bool}.
import { readFileSync } from 'node:fs';
import { initialize } from 'unleash-client';
import { UnleashClient, InMemoryStorageProvider } from 'unleash-proxy-client';

const input = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const out = { errors: [] };

// The fields the tests compare: a variant's payload only when it has one.
function variantOf(v) {
  const variant = { name: v.name, enabled: v.enabled };
  if (v.payload) variant.payload = { type: v.payload.type, value: v.payload.value };
  return variant;
}

async function serverSide() {
  const unleash = initialize({
    url: `${input.url}/api/`,
    appName: input.appName,
    instanceId: `${input.appName}-node`,
    refreshInterval: 1000,
    metricsInterval: 500,
    customHeaders: { Authorization: input.clientToken },
  });
  unleash.on('error', (e) => out.errors.push(`unleash-client: ${e.message ?? e}`));
  let sent = false;
  unleash.on('sent', () => { sent = true; });
  let registered = false;
  unleash.on('registered', () => { registered = true; });
  await new Promise((resolve, reject) => {
    unleash.once('synchronized', resolve);
    setTimeout(() => reject(new Error('unleash-client never synchronized')), 20000);
  });
  out.server = input.contexts.map((context) => Object.fromEntries(input.toggles.map((name) => [name, {
    enabled: unleash.isEnabled(name, context),
    variant: variantOf(unleash.getVariant(name, context)),
  }])));
  // The evaluations above are posted as metrics at the next interval: wait for one accepted post.
  const deadline = Date.now() + 10000;
  while (!sent && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  out.registered = registered;
  out.metricsSent = sent;
  unleash.destroy();
}

async function frontend() {
  const client = new UnleashClient({
    url: `${input.url}/api/frontend`,
    clientKey: input.frontendToken,
    appName: `${input.appName}-web`,
    refreshInterval: 0,
    disableMetrics: true,
    storageProvider: new InMemoryStorageProvider(),
    context: input.contexts[0] ?? {},
  });
  client.on('error', (e) => out.errors.push(`unleash-proxy-client: ${e?.message ?? JSON.stringify(e)}`));
  await client.start();
  out.frontend = [];
  for (const [i, context] of input.contexts.entries()) {
    // updateContext replaces the whole context and fetches for it.
    if (i > 0) await client.updateContext(context);
    out.frontend.push(Object.fromEntries(input.toggles.map((name) => [name, {
      enabled: client.isEnabled(name),
      variant: variantOf(client.getVariant(name)),
    }])));
  }
  client.stop();
}

try {
  await serverSide();
  await frontend();
} catch (e) {
  out.errors.push(String(e?.stack ?? e));
}
console.log(JSON.stringify(out));
process.exit(0);
