// A real Unleash server for the upstream tests, started through unleash-server's programmatic API
// so every option is set here rather than by environment variables the caller might also have.
//
// Usage: node server.mjs PORT (Node >= 22: the one npm installs beside this file), with
//   DATABASE_URL           postgres://user@127.0.0.1:port/db of a throwaway database
//   INIT_ADMIN_API_TOKENS, INIT_CLIENT_API_TOKENS, INIT_FRONTEND_API_TOKENS
//                          comma-separated tokens created at start (read by unleash-server
//                          itself; a token already in the database is kept as it is)
// Prints one line `listening PORT` on stdout once it serves; exits 0 on SIGTERM/SIGINT.
import { start } from 'unleash-server';

const port = Number(process.argv[2]);
if (!Number.isInteger(port) || port <= 0 || !process.env.DATABASE_URL) {
  console.error('usage: DATABASE_URL=postgres://... node server.mjs PORT');
  process.exit(2);
}

// Read by createConfig inside start(); the option alone cannot turn it off (`false || env`).
process.env.SEND_TELEMETRY = 'false';

const unleash = await start({
  databaseUrl: process.env.DATABASE_URL,
  // The throwaway cluster speaks plain TCP on loopback; unleash-server's default asks for TLS.
  db: { ssl: false },
  server: { host: '127.0.0.1', port, unleashUrl: `http://127.0.0.1:${port}` },
  // Token checks on, as a production server has them: the tests need a refused token to be refused.
  authentication: { type: 'open-source', enableApiToken: true, createAdminUser: false },
  // No network here but loopback: nothing may phone home.
  versionCheck: { enable: false },
  // Errors only: a test reads this log when the server misbehaves, not on every request.
  logLevel: 'error',
  // Client features are cached per revision, and the revision is re-read every second, so a
  // change shows on /api/client/features (and on the frontend API, which listens to the same
  // revision) within about a second; the cache's age cap only bounds memory.
  clientFeatureCaching: { enabled: true, maxAge: 60_000 },
});

console.log(`listening ${unleash.server.address().port}`);
