// Starts the Unleash Proxy as its own `dist/start` does, but listening on 127.0.0.1 only
// (its start() listens on every interface). Configuration from the environment (UNLEASH_URL,
// UNLEASH_API_TOKEN, UNLEASH_PROXY_CLIENT_KEYS, …), port from PORT.
const { createApp } = require('@unleash/proxy');

const port = Number(process.env.PORT || 3000);
createApp({}).listen(port, '127.0.0.1', () => {
    console.log(`unleash-proxy listening on 127.0.0.1:${port}`);
});
