// Headless Chromium for the browser tests, through playwright-core (which never downloads a
// browser): the system Chromium that tests/browser_support.py found, passed in FLAGPOLE_CHROMIUM
// (or as the argument). Playwright already runs it without the setuid sandbox (needed as root).
//   const { launchChromium } = require('../node/chromium.js');
//   const browser = await launchChromium();
'use strict';
const { chromium } = require('playwright-core');

async function launchChromium(executablePath = process.env.FLAGPOLE_CHROMIUM) {
  if (!executablePath) {
    throw new Error('no Chromium: set FLAGPOLE_CHROMIUM to its path (tests/browser_support.py finds it)');
  }
  return chromium.launch({
    executablePath,
    headless: true,
    timeout: 30000,
    // Containers often have a small /dev/shm; no first-run UI, extensions or background fetches.
    args: ['--disable-dev-shm-usage', '--no-first-run', '--no-default-browser-check',
      '--disable-extensions', '--disable-background-networking', '--disable-component-update'],
  });
}

module.exports = { launchChromium };
