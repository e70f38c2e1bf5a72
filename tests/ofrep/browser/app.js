// The demo page's app (index.html): OpenFeature web SDK + OFREP web provider against Flagpole.
// Every flag is shown as <li data-flag="name"> with its value in .value (a string as is, anything
// else as JSON), its reason and variant in .meta; <body data-status> is the provider status.
// window.flagpoleDemo keeps the provider events (with Date.now() times) for whoever drives the page.
import { OpenFeature, ProviderEvents } from '@openfeature/web-sdk';
import { OFREPWebProvider } from '@openfeature/ofrep-web-provider';

const params = new URLSearchParams(location.search);
const baseUrl = params.get('baseUrl') || 'http://localhost:8000';
const key = params.get('key') || 'example_client_key';
const context = JSON.parse(params.get('context') || '{}');
const flags = (params.get('flags') || 'welcome_message:string,new_checkout:boolean,max_projects:number,layout:string')
  .split(',')
  .filter(Boolean)
  .map((spec) => {
    const [name, type = 'string'] = spec.split(':');
    return { name, type };
  });

const DEFAULTS = { boolean: false, string: '', number: 0, object: {} };
const METHODS = {
  boolean: 'getBooleanDetails',
  string: 'getStringDetails',
  number: 'getNumberDetails',
  object: 'getObjectDetails',
};

const demo = { events: [], renders: 0 };
window.flagpoleDemo = demo;

const client = OpenFeature.getClient();
const list = document.getElementById('flags');
const log = document.getElementById('log');
document.getElementById('source').textContent =
  `${baseUrl} · context ${JSON.stringify(context)}`;

const rows = new Map();
for (const flag of flags) {
  const li = document.createElement('li');
  li.dataset.flag = flag.name;
  li.dataset.type = flag.type;
  li.innerHTML = '<span class="name"></span><span class="value">…</span><span class="meta"></span>';
  li.querySelector('.name').textContent = `${flag.name} (${flag.type})`;
  list.append(li);
  rows.set(flag.name, li);
}

function setStatus(status) {
  document.body.dataset.status = status;
  document.getElementById('status').textContent = status;
}

function render(changed = []) {
  for (const flag of flags) {
    const d = client[METHODS[flag.type]](flag.name, DEFAULTS[flag.type]);
    const li = rows.get(flag.name);
    const value = li.querySelector('.value');
    const text = typeof d.value === 'string' ? d.value : JSON.stringify(d.value);
    value.textContent = text;
    value.dataset.json = JSON.stringify(d.value);
    const meta = [d.reason, d.variant && `variant ${d.variant}`, d.errorCode].filter(Boolean);
    li.querySelector('.meta').textContent = meta.join(' · ');
    li.classList.toggle('changed', changed.includes(flag.name));
  }
  demo.renders += 1;
  demo.renderedAt = Date.now();
  setStatus(client.providerStatus);
}

function record(event, details) {
  const entry = { event, at: Date.now(), flagsChanged: details?.flagsChanged ?? null,
    message: details?.message ?? null };
  demo.events.push(entry);
  const li = document.createElement('li');
  const changed = entry.flagsChanged ? ` ${entry.flagsChanged.join(', ')}` : '';
  li.textContent = `${new Date(entry.at).toISOString().slice(11, 23)} ${event}${changed}`;
  log.prepend(li);
  while (log.children.length > 8) log.lastChild.remove();
}

client.addHandler(ProviderEvents.Ready, (d) => { record('Ready', d); render(); });
client.addHandler(ProviderEvents.ConfigurationChanged, (d) => {
  record('ConfigurationChanged', d);
  render(d?.flagsChanged ?? []);
});
client.addHandler(ProviderEvents.Stale, (d) => { record('Stale', d); setStatus(client.providerStatus); });
client.addHandler(ProviderEvents.Error, (d) => { record('Error', d); render(); });

try {
  await OpenFeature.setProviderAndWait(
    new OFREPWebProvider({ baseUrl, headers: [['X-API-Key', key]] }),
    context,
  );
} catch (err) {
  record('InitFailed', { message: String(err) });
  render();
}
