// Opens flagpole's status page (GET /proxy/status) in headless Chromium, for
// tests/serve/test_status_page.py:
//   node status_page.js INPUT.json OUTPUT.json          (the browser: $FLAGPOLE_CHROMIUM)
// INPUT:  {"url", "screenshot" (a PNG path), "width", "height"}
// OUTPUT: {"browserVersion", "status", "contentType", "title", "summary": {field: text},
//          "rows": [{"environment", "cells": {field: text}, "titles": {field: title attribute},
//                    "requests": {resource: text}}],
//          "injected": number of elements the page's values could have created (b, script, img),
//          "requests": [every URL the page loaded], "console": [...], "pageErrors": [...]}
'use strict';
const fs = require('fs');
const path = require('path');
const { launchChromium } = require(path.join(__dirname, '..', '..', 'ofrep', 'node', 'chromium.js'));

async function main() {
  const [input, output] = process.argv.slice(2);
  const req = JSON.parse(fs.readFileSync(input, 'utf8'));
  const out = { requests: [], console: [], pageErrors: [] };
  const browser = await launchChromium();
  try {
    out.browserVersion = browser.version();
    const context = await browser.newContext({
      viewport: { width: req.width || 1280, height: req.height || 480 },
    });
    const page = await context.newPage();
    page.on('console', (m) => out.console.push({ type: m.type(), text: m.text() }));
    page.on('pageerror', (e) => out.pageErrors.push(String(e)));
    page.on('request', (r) => out.requests.push(r.url()));
    const response = await page.goto(req.url, { waitUntil: 'load', timeout: 20000 });
    out.status = response.status();
    out.contentType = response.headers()['content-type'];
    Object.assign(out, await page.evaluate(() => {
      const text = (el) => el.textContent.trim();
      const summary = {};
      for (const el of document.querySelectorAll('[data-field]')) {
        if (!el.closest('tr')) summary[el.dataset.field] = text(el);
      }
      const rows = [];
      for (const tr of document.querySelectorAll('tr[data-environment]')) {
        const cells = {};
        const titles = {};
        for (const td of tr.querySelectorAll('td[data-field]')) {
          cells[td.dataset.field] = text(td);
          const titled = td.querySelector('[title]');
          if (titled) titles[td.dataset.field] = titled.getAttribute('title');
        }
        const requests = {};
        for (const li of tr.querySelectorAll('li[data-resource]')) {
          requests[li.dataset.resource] = text(li);
        }
        rows.push({ environment: tr.dataset.environment, cells, titles, requests });
      }
      return {
        title: document.title,
        summary,
        rows,
        injected: document.querySelectorAll('table b, table script, table img, script').length,
      };
    }));
    await page.screenshot({ path: req.screenshot, fullPage: true });
  } finally {
    await browser.close();
  }
  fs.writeFileSync(output, JSON.stringify(out, null, 1));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
