// Runs the OpenFeature web SDK with the OFREP web provider (in Node, `eventsource` as the
// EventSource) against flagpole, through one scenario. Driven by
// tests/ofrep/test_ofrep_web_provider.py:
//   node web.js INPUT.json OUTPUT.json
// INPUT:
//   {"baseUrl", "headers": [[name, value]], "badHeaders": [[name, value]],
//    "context": {...}, "newContext": {...},
//    "reads": [["boolean"|"string"|"number"|"object", flag, default], ...],
//    "docPath", "nextDocument" (text written atomically to docPath), "changedFlag", "changedValue",
//    "waitMs" (how long any wait for an event may take: only a hang takes that long),
//    "polls" (revalidations the polling provider makes before its reads are compared), "settleMs"}
// OUTPUT (times in ms since the start):
//   {"bad": {"initError", "details"}, "initial": [details...],
//    "sseOpened", "edit": {"at", "changedAt", "valueAt", "events": [...]}, "afterEdit": [details...],
//    "poll": {"initial", "after", "changed", "from", "to"},
//    "contextChange": {"from", "to", "reads"},
//    "fetches": [{"provider", "url", "ifNoneMatch", "status", "etag", "at"}],
//    "eventSources": [{"url", "opened", "errors", "messages", "created"}],
//    "configurationChanged": {"web": [...], "poll": [...]}}
// Each detail: {"value", "variant", "reason", "errorCode"} (a missing member is null).
'use strict';
const fs = require('fs');
const path = require('path');
const { EventSource } = require('eventsource');
const { OpenFeature, ProviderEvents } = require('@openfeature/web-sdk');
const { OFREPWebProvider } = require('@openfeature/ofrep-web-provider');

const T0 = Date.now();
const now = () => Date.now() - T0;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const eventSources = [];
// The provider creates `new EventSource(url)` from the global: record what it connects to.
class RecordingEventSource extends EventSource {
  constructor(url, init) {
    super(url, init);
    const entry = { url: String(url), opened: 0, errors: 0, messages: 0, created: now() };
    eventSources.push(entry);
    this.addEventListener('open', () => { entry.opened += 1; });
    this.addEventListener('error', () => { entry.errors += 1; });
    this.addEventListener('message', () => { entry.messages += 1; });
  }
}
globalThis.EventSource = RecordingEventSource;

const fetches = [];
function recordingFetch(provider) {
  return async (request, init) => {
    const entry = {
      provider,
      method: request.method,
      url: request.url,
      ifNoneMatch: request.headers.get('if-none-match'),
      at: now(),
    };
    fetches.push(entry);
    try {
      const response = await fetch(request, init);
      entry.status = response.status;
      entry.etag = response.headers.get('etag');
      return response;
    } catch (err) {
      entry.error = String(err);
      throw err;
    }
  };
}

function orNull(v) {
  return v === undefined ? null : v;
}

const METHODS = {
  boolean: 'getBooleanDetails',
  string: 'getStringDetails',
  number: 'getNumberDetails',
  object: 'getObjectDetails',
};

function read(client, reads) {
  return reads.map(([type, flag, dflt]) => {
    const d = client[METHODS[type]](flag, dflt);
    return {
      flag,
      value: orNull(d.value),
      variant: orNull(d.variant),
      reason: orNull(d.reason),
      errorCode: orNull(d.errorCode),
    };
  });
}

async function waitFor(pred, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() >= deadline) return false;
    await sleep(20);
  }
  return true;
}

function writeAtomic(file, text) {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.tmp-web`);
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, file);
}

async function main() {
  const [input, output] = process.argv.slice(2);
  const req = JSON.parse(fs.readFileSync(input, 'utf8'));
  const out = { configurationChanged: { web: [], poll: [] }, fetches, eventSources };
  const options = (name, extra) => ({
    baseUrl: req.baseUrl,
    headers: req.headers,
    cacheMode: 'disabled',
    fetchImplementation: recordingFetch(name),
    ...extra,
  });

  // A bad key: initialisation fails for good.
  const badClient = OpenFeature.getClient('bad');
  try {
    await OpenFeature.setProviderAndWait('bad', new OFREPWebProvider(options('bad', { headers: req.badHeaders })), req.context);
    out.bad = { initError: null };
  } catch (err) {
    out.bad = { initError: `${err && err.name}: ${err && err.message}`, initErrorCode: orNull(err && err.code) };
  }
  out.bad.details = read(badClient, [['boolean', 'flag_on', false]])[0];

  // SSE (the default change detection).
  const web = OpenFeature.getClient('web');
  web.addHandler(ProviderEvents.ConfigurationChanged, (details) => {
    out.configurationChanged.web.push({ at: now(), flagsChanged: orNull(details && details.flagsChanged) });
  });
  await OpenFeature.setProviderAndWait('web', new OFREPWebProvider(options('web')), req.context);
  out.initial = read(web, req.reads);
  out.sseOpened = await waitFor(() => eventSources.some((e) => e.opened > 0), req.waitMs);
  // Time for a (wrong) event at connect to show up as a refetch.
  await sleep(req.settleMs);

  // A document edit reaches the application through the stream.
  const edit = { at: now() };
  out.edit = edit;
  writeAtomic(req.docPath, req.nextDocument);
  const changed = () => web.getStringValue(req.changedFlag, '') === req.changedValue;
  await waitFor(() => {
    if (edit.valueAt === undefined && changed()) edit.valueAt = now();
    if (edit.changedAt === undefined && out.configurationChanged.web.length > 0) {
      edit.changedAt = out.configurationChanged.web[0].at;
    }
    return edit.valueAt !== undefined && edit.changedAt !== undefined;
  }, req.waitMs);
  out.afterEdit = read(web, req.reads);

  // Polling without a change: revalidation only.
  const poll = OpenFeature.getClient('poll');
  poll.addHandler(ProviderEvents.ConfigurationChanged, (details) => {
    out.configurationChanged.poll.push({ at: now(), flagsChanged: orNull(details && details.flagsChanged) });
  });
  const pollFrom = now();
  const pollProvider = new OFREPWebProvider(options('poll', { changeDetection: 'polling', pollInterval: 500 }));
  await OpenFeature.setProviderAndWait('poll', pollProvider, req.context);
  const pollInitial = read(poll, req.reads);
  // Counted, not timed: the initial fetch and `polls` revalidations, answered.
  const answered = () => fetches.filter((f) => f.provider === 'poll' && f.status !== undefined);
  await waitFor(() => answered().length > req.polls, req.waitMs);
  out.poll = { from: pollFrom, initial: pollInitial, after: read(poll, req.reads), to: now() };
  await pollProvider.onClose(); // stops polling

  // A new context with the same targetingKey: the provider revalidates with its old ETag.
  const from = now();
  await OpenFeature.setContext('web', req.newContext);
  out.contextChange = { from, reads: read(web, req.reads) };
  // Time for the reconnected stream to (wrongly) send an event.
  await waitFor(() => eventSources.length >= 2 && eventSources[eventSources.length - 1].opened > 0, req.waitMs);
  await sleep(req.settleMs);
  out.contextChange.to = now();

  await OpenFeature.close();
  fs.writeFileSync(output, JSON.stringify(out));
}

// Never hang: whatever happens, stop before the test's own timeout (300 s).
setTimeout(() => {
  console.error('web.js: scenario timed out');
  process.exit(3);
}, 240000).unref();

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
