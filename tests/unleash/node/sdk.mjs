// Unleash's official Node SDKs against a Flagpole serving Unleash toggles offline:
// `unleash-client` (server side, /api/client/features) and `unleash-proxy-client` (frontend,
// /api/frontend). Usage: node sdk.mjs BASE_URL CLIENT_TOKEN FRONTEND_TOKEN; prints one JSON
// object of what each SDK answered, and any error it reported.
import { initialize } from 'unleash-client';
import { UnleashClient, InMemoryStorageProvider } from 'unleash-proxy-client';

const [base, clientToken, frontendToken] = process.argv.slice(2);
const out = { errors: [] };

async function server() {
  const unleash = initialize({
    url: `${base}/api/`,
    appName: 'flagpole-test',
    instanceId: 'node-1',
    refreshInterval: 500,
    metricsInterval: 200,
    customHeaders: { Authorization: clientToken },
  });
  unleash.on('error', (e) => out.errors.push(`unleash-client: ${e.message ?? e}`));
  let sent = 0;
  unleash.on('sent', () => { sent += 1; });
  let registered = false;
  unleash.on('registered', () => { registered = true; });
  await new Promise((resolve, reject) => {
    unleash.once('synchronized', resolve);
    setTimeout(() => reject(new Error('unleash-client never synchronized')), 10000);
  });
  out.server = {
    alpha: unleash.isEnabled('alpha'),
    betaU1: unleash.isEnabled('beta', { userId: 'u1' }),
    betaU3: unleash.isEnabled('beta', { userId: 'u3' }),
    off: unleash.isEnabled('off'),
    gamma: unleash.getVariant('gamma'),
    names: unleash.getFeatureToggleDefinitions().map((t) => t.name).sort(),
  };
  // Metrics are posted every metricsInterval: wait for one accepted post.
  const deadline = Date.now() + 5000;
  while (sent === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  out.server.metricsSent = sent > 0;
  out.server.registered = registered;
  unleash.destroy();
}

async function frontend() {
  const client = new UnleashClient({
    url: `${base}/api/frontend`,
    clientKey: frontendToken,
    appName: 'flagpole-web',
    refreshInterval: 0,
    metricsInterval: 0,
    disableMetrics: true,
    storageProvider: new InMemoryStorageProvider(),
    context: { userId: 'u1' },
  });
  client.on('error', (e) => out.errors.push(`unleash-proxy-client: ${e?.message ?? JSON.stringify(e)}`));
  await client.start();
  const u1 = { alpha: client.isEnabled('alpha'), beta: client.isEnabled('beta'), gamma: client.isEnabled('gamma'),
    alphaVariant: client.getVariant('alpha') };
  await client.updateContext({ userId: 'u3' });
  const u3 = { beta: client.isEnabled('beta') };
  client.stop();
  out.frontend = { u1, u3 };
}

try {
  await server();
  await frontend();
} catch (e) {
  out.errors.push(String(e?.stack ?? e));
}
console.log(JSON.stringify(out));
process.exit(0);
