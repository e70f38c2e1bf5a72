// Drives the demo page (index.html) in headless Chromium, for tests/ofrep/test_ofrep_browser.py:
//   node drive.js INPUT.json OUTPUT.json          (the browser: $FLAGPOLE_CHROMIUM)
// INPUT:
//   {"pageUrl", "apiOrigin" (flagpole's origin: its requests are recorded),
//    "before": {flag: text}, "after": {flag: text} (what the flags' .value must read),
//    "docPath", "nextDocument" (text written atomically to docPath once the page shows "before"
//    and its event stream is open), "waitMs" (how long any wait may take: only a hang takes that
//    long), "screenshot" (a PNG path)}
// OUTPUT (times are Date.now() values):
//   {"ready": {"at", "flags"}, "streamOpen", "edit": {"at", "seenAt"}, "after": {"flags"}, "status",
//    "demo": window.flagpoleDemo, "requests": [{method, url, type, headers, status,
//    responseHeaders, at}], "console": [{type, text}], "pageErrors": [...], "failed": [...]}
// A flag reads {"value", "json", "meta"}; a missed wait leaves its time null and an "error" (the
// test says so), and without "before" there is no edit.
'use strict';
const fs = require('fs');
const path = require('path');
const { launchChromium } = require('../node/chromium.js');

function writeAtomic(file, text) {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.tmp-browser`);
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, file);
}

// The flags as the page shows them.
function readFlags() {
  const out = {};
  for (const li of document.querySelectorAll('#flags li[data-flag]')) {
    const value = li.querySelector('.value');
    out[li.dataset.flag] = { value: value.textContent, json: value.dataset.json ?? null,
      meta: li.querySelector('.meta').textContent };
  }
  return out;
}

function shows(expected) {
  for (const [flag, text] of Object.entries(expected)) {
    const el = document.querySelector(`#flags li[data-flag="${CSS.escape(flag)}"] .value`);
    if (!el || el.textContent !== text) return false;
  }
  return true;
}

async function main() {
  const [input, output] = process.argv.slice(2);
  const req = JSON.parse(fs.readFileSync(input, 'utf8'));
  const out = { requests: [], console: [], pageErrors: [], failed: [] };
  const browser = await launchChromium();
  try {
    out.browserVersion = browser.version();
    const context = await browser.newContext({ viewport: { width: 900, height: 560 } });
    const page = await context.newPage();
    let closing = false; // the open event stream is aborted at close: not a failure of the page
    page.on('console', (m) => out.console.push({ type: m.type(), text: m.text() }));
    page.on('pageerror', (e) => out.pageErrors.push(String(e)));
    page.on('requestfailed', (r) => {
      if (!closing) out.failed.push({ url: r.url(), error: r.failure()?.errorText });
    });
    const byRequest = new Map();
    page.on('request', (r) => {
      if (!r.url().startsWith(req.apiOrigin)) return;
      const entry = { method: r.method(), url: r.url(), type: r.resourceType(), headers: r.headers(),
        at: Date.now() };
      byRequest.set(r, entry);
      out.requests.push(entry);
    });
    // Headers as sent and received (Origin, Sec-Fetch-* and CORS headers included): allHeaders().
    const pending = [];
    page.on('response', (resp) => {
      const entry = byRequest.get(resp.request());
      if (!entry) return;
      entry.status = resp.status();
      entry.respondedAt = Date.now();
      pending.push((async () => {
        entry.headers = await resp.request().allHeaders();
        entry.responseHeaders = await resp.allHeaders();
      })());
    });
    const streamOpen = () => out.requests.some((r) => r.type === 'eventsource' && r.status === 200);

    await page.goto(req.pageUrl, { waitUntil: 'domcontentloaded' });
    out.ready = { at: null };
    try {
      await page.waitForFunction(shows, req.before, { polling: 20, timeout: req.waitMs });
      out.ready.at = Date.now();
    } catch (err) {
      out.ready.error = String(err).split('\n')[0];
    }
    out.ready.flags = await page.evaluate(readFlags);
    if (out.ready.at !== null) {
      const deadline = Date.now() + req.waitMs;
      while (!streamOpen() && Date.now() < deadline) await page.waitForTimeout(20);
      out.streamOpen = streamOpen();

      const edit = { at: Date.now(), seenAt: null };
      out.edit = edit;
      writeAtomic(req.docPath, req.nextDocument);
      try {
        await page.waitForFunction(shows, req.after, { polling: 20, timeout: req.waitMs });
        edit.seenAt = Date.now();
      } catch (err) {
        edit.error = String(err).split('\n')[0];
      }
    }
    out.after = { flags: await page.evaluate(readFlags) };
    out.status = await page.evaluate(() => document.body.dataset.status);
    out.demo = await page.evaluate(() => window.flagpoleDemo);
    await Promise.all(pending);
    await page.screenshot({ path: req.screenshot, fullPage: true });
    closing = true;
    await context.close();
  } finally {
    await browser.close();
  }
  fs.writeFileSync(output, JSON.stringify(out, null, 1));
}

// Never hang: whatever happens, stop before the test's own timeout (browser_support: 300 s).
setTimeout(() => {
  console.error('drive.js: timed out');
  process.exit(3);
}, 240000).unref();

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
