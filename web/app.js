/* The playground's page: the controls and the address bar (the view's state), requests to
 * the Web Worker that runs vpipe's library (worker.js), and drawing its answers. The
 * pictures and reports are the library's own text, shown as they come; this file draws only
 * the planner's frontier plot and the memory bars of the pricing. */
'use strict';

const $ = (selector) => document.querySelector(selector);
const form = $('#controls');
const SVG_NS = 'http://www.w3.org/2000/svg';
const GIB = 2 ** 30;
const URL_TEXT_MAX = 4000; // pasted texts longer than this stay out of the address bar
const DEFAULTS = { family: 'v-half', model: 'llama3-8b', gpu: 'h100-80gb' };
const MEMORY_PARTS = [
  ['params', 'parameters'],
  ['grads', 'gradients'],
  ['optimizer', 'optimizer state'],
  ['activations', 'activations'],
  ['other', 'buffers, workspace, reserve'],
];

/* ---- the worker --------------------------------------------------------------------- */

/* The served page loads worker.js; the single-file build carries the worker's source
 * (module included) in a script element and starts it from a blob. */
function startWorker() {
  const embedded = document.getElementById('vp-worker');
  if (!embedded) return new Worker('worker.js');
  const blob = new Blob([embedded.textContent], { type: 'text/javascript' });
  return new Worker(URL.createObjectURL(blob));
}

const worker = startWorker();
const replies = new Map(); // request id -> resolve
let lastId = 0;
worker.onmessage = (e) => {
  const resolve = replies.get(e.data.id);
  replies.delete(e.data.id);
  resolve(e.data);
};
worker.onerror = (e) => {
  $('#status').textContent = `The library could not start: ${e.message}`;
};

/* Sends op to the worker on channel (a newer request of a channel supersedes an older one
 * not yet run); resolves with the reply. */
function ask(channel, op, args) {
  const id = ++lastId;
  worker.postMessage({ id, channel, op, args });
  return new Promise((resolve) => replies.set(id, resolve));
}

/* ---- state: the form's fields, mirrored in the address bar -------------------------- */

let families = []; // the library's: {name, summary, needs}
const STATE = [...new Set([...form.querySelectorAll('[data-state]')].map((el) => el.name))];
let defaults = {};

function read(name) {
  const el = form.elements[name];
  if (el instanceof RadioNodeList) return el.value;
  return el.type === 'checkbox' ? (el.checked ? '1' : '0') : el.value;
}

function write(name, value) {
  const el = form.elements[name];
  if (el instanceof RadioNodeList) el.value = value;
  else if (el.type === 'checkbox') el.checked = value === '1';
  else if (el.tagName !== 'SELECT' || [...el.options].some((o) => o.value === value)) el.value = value;
}

function stateToHash() {
  const params = new URLSearchParams();
  for (const name of STATE) {
    const value = read(name);
    if (value !== defaults[name] && value.length <= URL_TEXT_MAX) params.set(name, value);
  }
  const hash = params.toString();
  history.replaceState(null, '', hash ? `#${hash}` : location.pathname + location.search);
}

function hashToState() {
  const params = new URLSearchParams(location.hash.slice(1));
  for (const name of STATE) write(name, params.has(name) ? params.get(name) : defaults[name]);
}

/* Shows what belongs to the mode (data-modes) and the config.json box with its choice. */
function showMode() {
  const mode = read('mode');
  for (const el of document.querySelectorAll('[data-modes]')) el.hidden = !el.dataset.modes.split(' ').includes(mode);
  for (const el of document.querySelectorAll('[data-when-model]')) el.hidden = read('model') !== el.dataset.whenModel;
  $('#picture-box').classList.toggle('fit', read('fit') === '1');
  const family = families.find((f) => f.name === read('family'));
  $('#family-about').textContent = family ? `${family.summary}; ${family.needs}.` : '';
}

/* The first visible field the browser finds invalid, as a message; '' when all are fine. */
function invalidField() {
  for (const el of form.querySelectorAll('input[data-state], select[data-state], textarea[data-state]')) {
    if (el.closest('[hidden]') || el.checkValidity()) continue;
    const label = el.closest('label').textContent.trim().split('\n')[0].trim();
    return `${label}: ${el.validationMessage}`;
  }
  return '';
}

/* ---- small drawing helpers ----------------------------------------------------------- */

function el(tag, attrs = {}, parent = null, text = '') {
  const node = tag.startsWith('svg:') ? document.createElementNS(SVG_NS, tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text) node.textContent = text;
  if (parent) parent.appendChild(node);
  return node;
}

function fmt(x, digits = 3) {
  return Number(x.toPrecision(digits)).toString();
}

function percent(x) {
  return `${(100 * x).toFixed(1)} %`;
}

function seconds(t) {
  return t < 1 ? `${(t * 1000).toFixed(1)} ms` : `${t.toFixed(3)} s`;
}

function showError(box, error) {
  box.hidden = !error;
  if (!error) return;
  box.textContent = error.line > 0 ? `line ${error.line}, column ${error.column}: ${error.message}` : error.message;
  if (error.status === 'internal') console.error(error.message);
}

/* A blob: link to text, replacing the link's previous one. */
function link(a, text, type, filename) {
  if (a.href.startsWith('blob:')) URL.revokeObjectURL(a.href);
  a.href = URL.createObjectURL(new Blob([text], { type }));
  a.download = filename;
  a.removeAttribute('aria-disabled');
}

/* ---- the schedule view (modes schedule, plan, load) --------------------------------- */

let viewSeq = 0;
let firstPicture = true;

function costsText() {
  return ['F', 'B', 'W', 'c'].map((k) => `${k}=${read(k)}`).join(',');
}

/* The request's options (vpipe/request.h) for mode. */
function viewOptions(mode) {
  const options = { costs: costsText(), memory_model: read('memory_model') };
  if (mode !== 'load') Object.assign(options, { p: +read('p'), m: +read('m'), v: +read('v') });
  if (mode === 'schedule') options.family = read('family');
  if (mode === 'plan') options.memory = read('memory');
  return options;
}

async function runView(mode) {
  const section = $('#view');
  const seq = ++viewSeq;
  section.dataset.seq = seq;
  section.dataset.state = 'busy';
  const invalid = mode === 'load' && !read('text').trim() ? 'Choose a file or paste a schedule.' : invalidField();
  const reply = invalid
    ? { ok: false, error: { message: invalid } }
    : await ask('view', 'view', { mode, options: JSON.stringify(viewOptions(mode)), text: read('text') });
  if (reply.superseded || seq !== viewSeq) return;
  showError($('#view-error'), reply.ok ? null : reply.error);
  for (const id of ['#plan-choice', '#plan', '#numbers', '#picture-box', '#peaks', '#sim-json']) $(id).classList.toggle('stale', !reply.ok);
  if (reply.ok) showView(reply.result, reply.ms, mode);
  section.dataset.done = seq;
  section.dataset.state = reply.ok ? 'done' : 'error';
}

function showView(result, ms, mode) {
  const sim = JSON.parse(result.sim);
  if (result.plan) showPlan(JSON.parse(result.plan), result.plan);
  $('#view-title').textContent = `${sim.family}: p = ${sim.p}, m = ${sim.m}`;
  const numbers = $('#numbers');
  numbers.replaceChildren();
  const rows = [
    ['Makespan', fmt(sim.makespan, 6)],
    ['Bubble', percent(sim.bubble)],
    ['Peak activation memory', `${fmt(sim.peak_memory_max)} units (largest device)`],
    ['Stages', `${sim.stages} (${sim.placement} placement)`],
    ['Computed in', `${ms.toFixed(0)} ms${result.planMs === null ? '' : `, the planner ${result.planMs.toFixed(0)} ms of it`}`],
  ];
  $('#view').dataset.planMs = result.planMs === null ? '' : result.planMs.toFixed(1);
  for (const [k, v] of rows) {
    el('dt', {}, numbers, k);
    el('dd', {}, numbers, v);
  }
  showPicture(result.svg, sim);
  showPeaks(sim);
  const base = `${sim.family}-p${sim.p}-m${sim.m}`;
  link($('#dl-json'), result.json, 'application/json', `${base}.json`);
  link($('#dl-svg'), result.svg, 'image/svg+xml', `${base}.svg`);
  const csv = $('#dl-csv');
  if (result.csv !== null) link(csv, result.csv, 'text/csv', `${base}.csv`);
  else {
    csv.removeAttribute('href');
    csv.setAttribute('aria-disabled', 'true');
  }
  $('#csv-notes').textContent = result.csv !== null ? result.notes : `No PyTorch CSV: ${result.csvError.message}`;
  $('#sim-json').textContent = result.sim;
}

/* The pictures' blob: addresses not yet released. An address is released only once a later
 * picture has loaded: revoking one the image may still be reading fails that read. */
const pictureUrls = [];

function showPicture(svg, sim) {
  const img = $('#picture');
  img.alt = `Timeline of ${sim.family} on ${sim.p} devices with ${sim.m} microbatches: bubble ${percent(sim.bubble)}`;
  const url = URL.createObjectURL(new Blob([svg], { type: 'image/svg+xml' }));
  pictureUrls.push(url);
  img.onload = () => {
    if (firstPicture) performance.mark('vp-first-picture');
    firstPicture = false;
    while (pictureUrls[0] !== url) URL.revokeObjectURL(pictureUrls.shift());
  };
  img.src = url;
}

/* Peak activation memory and busy time per device, as a table. */
function showPeaks(sim) {
  const table = el('table');
  el('caption', {}, table, 'Per device');
  const head = el('tr', {}, el('thead', {}, table));
  for (const h of ['Device', 'Peak memory (units)', 'Busy time']) el('th', { scope: 'col' }, head, h);
  const body = el('tbody', {}, table);
  sim.peak_memory.forEach((peak, d) => {
    const row = el('tr', {}, body);
    el('th', { scope: 'row' }, row, String(d));
    el('td', {}, row, fmt(peak));
    el('td', {}, row, fmt(sim.busy[d], 6));
  });
  $('#peaks').replaceChildren(table);
}

function showPlan(report, text) {
  const params = report.params ? ` (${report.params})` : '';
  const choice = $('#plan-choice');
  choice.replaceChildren('Chosen: ');
  el('strong', {}, choice, `${report.family}${params}`);
  choice.append(`. ${report.reason}.`);
  $('#plan-json').textContent = text;
  $('#frontier').replaceChildren(frontierPlot(report));
}

/* The memory -> bubble plot of a plan report (memory on a log2 axis): candidates as
 * circles, the frontier as a line, the budget dashed, the choice ringed. */
function frontierPlot(report) {
  const W = 560;
  const H = 280;
  const pad = { l: 56, r: 16, t: 12, b: 44 };
  const points = [...report.candidates, ...report.frontier].filter((q) => q.memory > 0);
  const memories = [report.budget, report.peak_memory_max, ...points.map((q) => q.memory)];
  const lo = Math.log2(Math.min(...memories)) - 0.2;
  const hi = Math.max(lo + 1, Math.log2(Math.max(...memories)) + 0.1);
  const maxY = Math.max(0.01, ...points.map((q) => q.bubble)) * 1.1;
  const x = (v) => pad.l + ((Math.log2(v) - lo) / (hi - lo)) * (W - pad.l - pad.r);
  const y = (v) => H - pad.b - (v / maxY) * (H - pad.t - pad.b);
  const svg = el('svg:svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', class: 'plot' });
  el('svg:title', {}, svg, `Memory to bubble frontier; chosen ${report.family} at ${fmt(report.peak_memory_max)} units`);
  for (let e = Math.ceil(lo); e <= hi; e++) {
    el('svg:line', { x1: x(2 ** e), x2: x(2 ** e), y1: y(0), y2: y(maxY), class: 'grid' }, svg);
    el('svg:text', { x: x(2 ** e), y: H - pad.b + 16, 'text-anchor': 'middle' }, svg, fmt(2 ** e));
  }
  for (let i = 0; i <= 4; i++) {
    const vy = (maxY * i) / 4;
    el('svg:line', { x1: pad.l, x2: W - pad.r, y1: y(vy), y2: y(vy), class: 'grid' }, svg);
    el('svg:text', { x: pad.l - 6, y: y(vy) + 4, 'text-anchor': 'end' }, svg, `${(100 * vy).toFixed(0)}%`);
  }
  el('svg:text', { x: (W + pad.l) / 2, y: H - 6, 'text-anchor': 'middle' }, svg, 'peak activation memory (units, log scale)');
  el('svg:text', { x: 12, y: H / 2, transform: `rotate(-90 12 ${H / 2})`, 'text-anchor': 'middle' }, svg, 'bubble');
  el('svg:line', { x1: x(report.budget), x2: x(report.budget), y1: y(0), y2: y(maxY), class: 'budget' }, svg);
  const dot = (q, r, cls) => {
    const c = el('svg:circle', { cx: x(q.memory), cy: y(q.bubble), r, class: cls }, svg);
    el('svg:title', {}, c, `${q.family} ${q.params}: ${fmt(q.memory)} units, bubble ${percent(q.bubble)}`);
  };
  report.candidates.filter((q) => q.memory > 0).forEach((q) => dot(q, 4, 'candidate'));
  const frontier = report.frontier.filter((q) => q.memory > 0);
  el('svg:polyline', { points: frontier.map((q) => `${x(q.memory)},${y(q.bubble)}`).join(' '), class: 'frontier' }, svg);
  frontier.forEach((q) => dot(q, 3, q.fits ? 'fits' : 'over'));
  el('svg:circle', { cx: x(report.peak_memory_max), cy: y(report.bubble), r: 8, class: 'chosen' }, svg);
  return svg;
}

/* ---- pricing (mode price) ------------------------------------------------------------ */

let priceSeq = 0;

/* The pricing options (without a family), or a message saying what does not divide. */
function priceOptions() {
  const [gpus, tp, dp, batch, mbs] = ['gpus', 'tp', 'dp', 'batch', 'mbs'].map((k) => +read(k));
  if (gpus % (tp * dp)) return `GPUs (${gpus}) must be a multiple of tensor × data parallel (${tp * dp}).`;
  if (batch % (mbs * dp)) return `The global batch (${batch}) must be a multiple of microbatch size × data parallel (${mbs * dp}).`;
  const options = { p: gpus / (tp * dp), m: batch / (mbs * dp), gpu: read('gpu'), seq: +read('seq'), mbs, tp, dp };
  Object.assign(options, { recompute: read('recompute'), flash: read('flash') === '1', zero1: read('zero1') === '1', sp: read('sp') === '1' });
  if (read('model') !== 'config') options.model = read('model');
  return options;
}

async function runPrice() {
  const section = $('#price');
  const seq = ++priceSeq;
  section.dataset.seq = seq;
  section.dataset.state = 'busy';
  const options = invalidField() || priceOptions();
  const custom = read('model') === 'config';
  $('#price-shape').textContent = typeof options === 'string' ? '' : `${options.p} pipeline stages × ${options.m} microbatches per step, every family priced with its own stage costs.`;
  let reply;
  if (typeof options === 'string') reply = { ok: false, error: { message: options } };
  else if (custom && !read('config').trim()) reply = { ok: false, error: { message: 'Paste a config.json.' } };
  else {
    const args = { options: JSON.stringify(options), families: families.map((f) => f.name) };
    if (custom) args.config = read('config');
    reply = await ask('price', 'price', args);
  }
  if (reply.superseded || seq !== priceSeq) return;
  showError($('#price-error'), reply.ok ? null : reply.error);
  $('#price-table').classList.toggle('stale', !reply.ok);
  if (reply.ok) showPrices(reply.result);
  section.dataset.done = seq;
  section.dataset.state = reply.ok ? 'done' : 'error';
}

function showPrices(results) {
  const reports = results.filter((r) => r.report).map((r) => JSON.parse(r.report));
  const top = Math.max(1, ...reports.map((r) => Math.max(r.capacity_bytes, r.memory_max_bytes)));
  const table = el('table', { class: 'prices' });
  el('caption', {}, table, reports.length ? `${reports[0].model} on ${reports[0].gpus} × ${reports[0].gpu}` : 'No family could be priced');
  const head = el('tr', {}, el('thead', {}, table));
  for (const h of ['Family', 'Fits', 'Step time', 'Bubble', 'MFU', 'Largest rank', 'Memory per rank', 'Report']) el('th', { scope: 'col' }, head, h);
  const body = el('tbody', {}, table);
  for (const r of results) {
    const row = el('tr', { 'data-family': r.family }, body);
    el('th', { scope: 'row' }, row, r.family);
    if (!r.report) {
      el('td', { colspan: 7, class: 'error' }, row, r.error.message);
      continue;
    }
    const p = JSON.parse(r.report);
    el('td', { class: p.fits ? 'yes' : 'no' }, row, p.fits ? 'fits' : 'does not fit');
    el('td', {}, row, seconds(p.step_time_s));
    el('td', {}, row, percent(p.bubble));
    el('td', {}, row, percent(p.mfu));
    el('td', {}, row, `${(p.memory_max_bytes / GIB).toFixed(1)} GiB`);
    memoryBars(p, top, el('td', {}, row));
    const details = el('details', {}, el('td', {}, row));
    el('summary', {}, details, 'JSON');
    el('pre', {}, details, r.report);
  }
  $('#price-table').replaceChildren(table);
}

/* One stacked bar per rank (GiB, scaled to top bytes) and the accelerator's capacity. */
function memoryBars(report, top, parent) {
  const ranks = report.memory_per_rank;
  const H = 64;
  const bw = Math.max(3, Math.min(14, 160 / ranks.length));
  const svg = el('svg:svg', { width: ranks.length * (bw + 2) + 2, height: H, role: 'img', class: 'bars' }, parent);
  el('svg:title', {}, svg, `Memory per rank, largest ${(report.memory_max_bytes / GIB).toFixed(1)} GiB of ${(report.capacity_bytes / GIB).toFixed(0)} GiB`);
  ranks.forEach((rank, i) => {
    const parts = { ...rank, other: rank.buffers + rank.workspace + rank.reserve };
    let yTop = H;
    const g = el('svg:g', {}, svg);
    el('svg:title', {}, g, `rank ${rank.rank}: ${(rank.total / GIB).toFixed(2)} GiB (${MEMORY_PARTS.map(([k, n]) => `${n} ${(parts[k] / GIB).toFixed(2)}`).join(', ')})`);
    for (const [k] of MEMORY_PARTS) {
      const h = (parts[k] / top) * H;
      yTop -= h;
      el('svg:rect', { x: 2 + i * (bw + 2), y: yTop, width: bw, height: h, class: `part-${k}` }, g);
    }
  });
  const cap = H - (report.capacity_bytes / top) * H;
  el('svg:line', { x1: 0, x2: ranks.length * (bw + 2) + 2, y1: cap, y2: cap, class: 'capacity' }, svg);
}

function showLegend() {
  const legend = $('#price-legend');
  for (const [k, name] of MEMORY_PARTS) {
    const item = el('span', {}, legend);
    el('span', { class: `swatch part-${k}`, 'aria-hidden': 'true' }, item);
    item.append(name);
  }
  const cap = el('span', {}, legend);
  el('span', { class: 'swatch capacity', 'aria-hidden': 'true' }, cap);
  cap.append('accelerator memory');
}

/* ---- start ----------------------------------------------------------------------------- */

function run() {
  return read('mode') === 'price' ? runPrice() : runView(read('mode'));
}

function changed() {
  stateToHash();
  showMode();
  run();
}

function fill(select, values, chosen, extra = []) {
  for (const [value, label] of [...values.map((v) => [v, v]), ...extra]) el('option', { value }, select, label);
  select.value = chosen;
}

async function start() {
  const hello = await ask('hello', 'hello');
  if (!hello.ok) {
    $('#status').textContent = `The library could not start: ${hello.error.message}`;
    return;
  }
  const info = hello.result;
  families = info.families;
  fill(form.elements.family, info.families.map((f) => f.name), DEFAULTS.family);
  fill(form.elements.model, info.models, DEFAULTS.model, [['config', 'Paste a config.json…']]);
  fill(form.elements.gpu, info.gpus, DEFAULTS.gpu);
  defaults = Object.fromEntries(STATE.map((name) => [name, read(name)]));
  showLegend();
  hashToState();
  showMode();
  $('#version').textContent = info.version;
  $('#status').textContent = `Ready: vpipe ${info.version}, ${info.families.length} families, computed in a Web Worker.`;
  document.addEventListener('input', (e) => {
    if (e.target.form !== form || e.target.type === 'file') return;
    if (e.target.name !== 'fit') return changed();
    stateToHash();
    showMode();
  });
  form.elements.file.addEventListener('change', async (e) => {
    const file = e.target.files[0];
    if (!file) return;
    form.elements.text.value = await file.text();
    changed();
  });
  form.addEventListener('submit', (e) => e.preventDefault());
  addEventListener('hashchange', () => {
    hashToState();
    showMode();
    run();
  });
  run();
}

start();
