/* The playground's page: the controls and the address bar (the view's state), requests to
 * the Web Worker that runs vpipe's library (worker.js), and showing its answers. The
 * pictures and reports are the library's own text, shown as they come (the pictures inline,
 * so every op has its hover text); draw.js draws the rest: the planner's frontier, memory
 * over time and the pricing's memory bars. */
'use strict';

const $ = (selector) => document.querySelector(selector);
const form = $('#controls');
const URL_TEXT_MAX = 4000; // pasted texts longer than this stay out of the address bar
const DEFAULTS = { family: 'v-half', family2: '1f1b', model: 'llama3-8b', gpu: 'h100-80gb' };

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
const STATE = [...new Set([...form.elements].filter((el) => el.hasAttribute('data-state')).map((el) => el.name))];
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
  $('#pictures').classList.toggle('full', read('full') === '1');
  const about = (name) => {
    const family = families.find((f) => f.name === read(name));
    return family ? `${family.name}: ${family.summary}; ${family.needs}.` : '';
  };
  $('#family-about').textContent = mode === 'compare' ? `${about('family')}\n${about('family2')}` : about('family');
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

/* ---- showing answers ------------------------------------------------------------------ */

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

/* A link with nothing to download (shown struck through). */
function unlink(a) {
  if (a.href.startsWith('blob:')) URL.revokeObjectURL(a.href);
  a.removeAttribute('href');
  a.setAttribute('aria-disabled', 'true');
}

/* ---- the schedule views (modes schedule, plan, load, compare) ------------------------ */

let viewSeq = 0;
let firstPicture = true;

function costsText() {
  return ['F', 'B', 'W', 'c'].map((k) => `${k}=${read(k)}`).join(',');
}

/* The request's options (vpipe/request.h) for mode (compare: without its two families). */
function viewOptions(mode) {
  const options = { costs: costsText(), memory_model: read('memory_model') };
  if (mode !== 'load') Object.assign(options, { p: +read('p'), m: +read('m'), v: +read('v') });
  if (mode === 'schedule') options.family = read('family');
  if (mode === 'plan') options.memory = read('memory');
  return options;
}

/* The worker's answer for mode, or the reason no request was sent. */
function askView(mode) {
  const invalid = mode === 'load' && !read('text').trim() ? 'Choose a file or paste a schedule.' : invalidField();
  if (invalid) return { ok: false, error: { message: invalid } };
  const options = JSON.stringify(viewOptions(mode));
  if (mode === 'compare') return ask('view', 'compare', { options, families: [read('family'), read('family2')] });
  return ask('view', 'view', { mode, options, text: read('text') });
}

async function runView(mode) {
  const section = $('#view');
  const seq = ++viewSeq;
  section.dataset.seq = seq;
  section.dataset.state = 'busy';
  const reply = await askView(mode);
  if (reply.superseded || seq !== viewSeq) return;
  showError($('#view-error'), reply.ok ? null : reply.error);
  for (const id of ['#plan-choice', '#plan', '#numbers', '#pictures', '#memory', '#peaks', '#sim-json']) $(id).classList.toggle('stale', !reply.ok);
  if (reply.ok && mode === 'compare') showCompare(reply.result);
  else if (reply.ok) showView(reply.result, reply.ms, mode);
  section.dataset.done = seq;
  section.dataset.state = reply.ok ? 'done' : 'error';
}

/* Name and value pairs as the rows of a numbers list. */
function showNumbers(rows, numbers = $('#numbers')) {
  numbers.replaceChildren();
  for (const [k, v] of rows) {
    el('dt', {}, numbers, k);
    el('dd', {}, numbers, v);
  }
}

function showView(result, ms, mode) {
  const sim = JSON.parse(result.sim);
  const plan = result.plan ? JSON.parse(result.plan) : null;
  if (plan) showPlan(plan, result.plan);
  $('#view-title').textContent = `${sim.family}: p = ${sim.p}, m = ${sim.m}`;
  showNumbers([
    ['Makespan', fmt(sim.makespan, 6)],
    ['Bubble', percent(sim.bubble)],
    ['Peak activation memory', `${fmt(sim.peak_memory_max)} units (largest device)`],
    ['Stages', `${sim.stages} (${sim.placement} placement)`],
    ['Computed in', `${ms.toFixed(0)} ms${result.planMs === null ? '' : `, the planner ${result.planMs.toFixed(0)} ms of it`}`],
  ]);
  $('#view').dataset.planMs = result.planMs === null ? '' : result.planMs.toFixed(1);
  showPictures([{ svg: result.svg, alt: pictureAlt(sim) }]);
  showMemory([traceMemory(result.trace)], plan ? plan.budget : null);
  showPeaks(sim);
  const base = `${sim.family}-p${sim.p}-m${sim.m}`;
  link($('#dl-json'), result.json, 'application/json', `${base}.json`);
  link($('#dl-svg'), result.svg, 'image/svg+xml', `${base}.svg`);
  link($('#dl-trace'), result.trace, 'application/json', `${base}.trace.json`);
  if (result.csv !== null) link($('#dl-csv'), result.csv, 'text/csv', `${base}.csv`);
  else unlink($('#dl-csv'));
  $('#csv-notes').textContent = result.csv !== null ? result.notes : `No PyTorch CSV: ${result.csvError.message}`;
  $('#sim-json').textContent = result.sim;
}

/* Two families on one time scale: their numbers side by side, their pictures one above the
 * other (a time unit as wide in both), their memory over time on shared scales. */
function showCompare(results) {
  const sims = results.map((r) => JSON.parse(r.sim));
  $('#view-title').textContent = `${sims[0].family} and ${sims[1].family} on one time scale: p = ${sims[0].p}, m = ${sims[0].m}`;
  const both = (f) => sims.map((sim) => `${sim.family} ${f(sim)}`).join(', ');
  showNumbers([
    ['Makespan', both((sim) => fmt(sim.makespan, 6))],
    ['Bubble', both((sim) => percent(sim.bubble))],
    ['Peak activation memory', both((sim) => `${fmt(sim.peak_memory_max)} units`)],
    ['Time scale', `${fmt(results[0].width / sims[0].makespan, 4)} px per time unit in both pictures`],
  ]);
  showPictures(results.map((r, i) => ({ svg: r.svg, alt: pictureAlt(sims[i]), shared: true })));
  showMemory(results.map((r) => traceMemory(r.trace)), null);
  $('#sim-json').textContent = results.map((r) => r.sim).join('\n');
  const links = $('#dl-compare');
  for (const a of links.querySelectorAll('a')) URL.revokeObjectURL(a.href);
  links.replaceChildren('Download (one time scale): ');
  results.forEach((r, i) => {
    link(el('a', { class: 'compare-svg' }, links, `${r.family} SVG`), r.svg, 'image/svg+xml', `${r.family}-p${sims[i].p}-m${sims[i].m}-width${r.width}.svg`);
    links.append(' ');
  });
}

function pictureAlt(sim) {
  return `Timeline of ${sim.family} on ${sim.p} devices with ${sim.m} microbatches: bubble ${percent(sim.bubble)}`;
}

/* The library's SVG pictures, inline (every op's title is its hover text), fitted to the
 * page unless the visitor asks for full size. Pictures on one time scale (shared) keep it
 * when fitted: each may take the page's width in the share its own width has of the
 * widest's. */
function showPictures(pictures) {
  const roots = pictures.map(({ svg, alt }) => {
    const root = document.importNode(new DOMParser().parseFromString(svg, 'image/svg+xml').documentElement, true);
    root.setAttribute('role', 'img');
    root.setAttribute('aria-label', alt);
    return root;
  });
  const widest = Math.max(...roots.map((r) => +r.getAttribute('width')));
  roots.forEach((root, i) => {
    if (pictures[i].shared) root.style.setProperty('--share', +root.getAttribute('width') / widest);
  });
  $('#pictures').replaceChildren(...roots);
  if (firstPicture) performance.mark('vp-first-picture');
  firstPicture = false;
}

/* Memory over time per device of each schedule (traceMemory's) on one time and one memory
 * scale; budget: the planner's (drawn dashed), or null. */
function showMemory(schedules, budget) {
  const peaks = schedules.flatMap((s) => s.devices.flatMap((steps) => steps.map(([, v]) => v)));
  const scale = { time: Math.max(...schedules.map((s) => s.makespan)) || 1, memory: Math.max(budget ?? 0, ...peaks) || 1 };
  $('#memory').replaceChildren(...schedules.map((s) => memoryPlot(s, scale, budget)));
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

/* ---- pricing (mode price) ------------------------------------------------------------ */

let priceSeq = 0;

/* The pricing options (without a family; then the "More options" ones), or a message
 * saying what does not divide or what More options cannot read. */
function priceOptions() {
  const [gpus, tp, dp, batch, mbs] = ['gpus', 'tp', 'dp', 'batch', 'mbs'].map((k) => +read(k));
  if (gpus % (tp * dp)) return `GPUs (${gpus}) must be a multiple of tensor × data parallel (${tp * dp}).`;
  if (batch % (mbs * dp)) return `The global batch (${batch}) must be a multiple of microbatch size × data parallel (${mbs * dp}).`;
  const options = { p: gpus / (tp * dp), m: batch / (mbs * dp), gpu: read('gpu'), seq: +read('seq'), mbs, tp, dp };
  Object.assign(options, { recompute: read('recompute'), flash: read('flash') === '1', sp: read('sp') === '1' });
  if (read('zero1') === '1') options.zero = true; // --zero: ZeRO-1
  if (read('model') !== 'config') options.model = read('model');
  const more = moreOptions(read('more') || '');
  return typeof more === 'string' ? more : Object.assign(options, more);
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

/* Whether a priced report fits: by how much it does not, or how little room it leaves when
 * that is less than the margin a plan keeps (tight). */
function fitsText(p) {
  if (!p.fits) return `does not fit: ${gib(p.memory_max_bytes)}`;
  return p.tight ? `fits, tight: ${gib(p.capacity_bytes - p.memory_max_bytes)} of room` : 'fits';
}

/* Every family's row: whether it fits (and by how much it does not), step time, bubble,
 * MFU, its largest rank, its memory bars (memoryBars: one scale, the accelerator's, in
 * every row) and its report; a family that could not be priced, the reason. */
function showPrices(results) {
  const reports = results.filter((r) => r.report).map((r) => JSON.parse(r.report));
  const table = el('table', { class: 'prices' });
  el('caption', {}, table, reports.length ? `${reports[0].model} on ${reports[0].gpus} × ${reports[0].gpu}` : 'No family could be priced');
  const head = el('tr', {}, el('thead', {}, table));
  for (const h of ['Family', 'Fits', 'Step time', 'Bubble', 'MFU', 'Largest rank', 'Memory per rank', 'Report']) el('th', { scope: 'col' }, head, h);
  const body = el('tbody', {}, table);
  for (const r of results) {
    const row = el('tr', { 'data-family': r.family }, body);
    el('th', { scope: 'row' }, row, r.family);
    if (!r.report) {
      el('td', { colspan: 7, class: 'refused' }, row, r.error.message);
      continue;
    }
    const p = JSON.parse(r.report);
    el('td', { class: p.fits ? 'yes' : 'no' }, row, fitsText(p));
    el('td', {}, row, seconds(p.step_time_s));
    el('td', {}, row, percent(p.bubble));
    el('td', {}, row, percent(p.mfu));
    el('td', {}, row, gib(p.memory_max_bytes));
    memoryBars(p, el('td', {}, row));
    const details = el('details', {}, el('td', {}, row));
    el('summary', {}, details, 'JSON');
    el('pre', {}, details, r.report);
  }
  $('#price-table').replaceChildren(table);
}

/* The memory bars' legend into legend. */
function showLegend(legend) {
  for (const [k, name] of MEMORY_PARTS) {
    const item = el('span', {}, legend);
    el('span', { class: `swatch part-${k}`, 'aria-hidden': 'true' }, item);
    item.append(name);
  }
  const cap = el('span', {}, legend);
  el('span', { class: 'swatch capacity', 'aria-hidden': 'true' }, cap);
  cap.append(`accelerator memory (the bars' scale: it and a fifth more; a rank above is cut)`);
}

/* ---- the whole configuration (mode cluster) --------------------------------------------- */

/* A Web Worker of the cluster view's own, answering one search at a time. A search takes
 * seconds and the library cannot be interrupted inside it, so a newer search (or leaving
 * the view) ends the worker running an older one and the next search starts a fresh
 * worker: nobody waits behind a search nobody wants, and the other views' worker never
 * waits behind any. */
function lane() {
  let worker = null;
  let pending = null; // resolves the search in flight
  const settle = (reply) => {
    const resolve = pending;
    pending = null;
    if (resolve) resolve(reply);
  };
  return {
    /* Starts the worker (it loads the module at once) unless it is there. */
    warm() {
      if (worker) return;
      const started = startWorker();
      const mine = (f) => (e) => worker === started && f(e); // not an ended worker's
      started.onmessage = mine((e) => settle(e.data));
      started.onerror = mine((e) => {
        started.terminate();
        worker = null;
        settle({ ok: false, error: { status: 'internal', message: `The library could not start: ${e.message}` } });
      });
      worker = started;
    },
    stop() {
      if (!pending) return;
      worker.terminate();
      worker = null;
      settle({ superseded: true });
    },
    ask(args) {
      this.stop();
      this.warm();
      return new Promise((resolve) => {
        pending = resolve;
        worker.postMessage({ id: 0, channel: 'cluster', op: 'cluster', args });
      });
    },
  };
}

/* Two lanes: the JSON report alone first (the report shows after one search), then the text
 * report and Megatron-LM's flags at once, one in each lane, on two cores. */
const lanes = [lane(), lane()];
const CLUSTER_FIXED = [['tp', 'fix_tp'], ['pp', 'fix_pp'], ['dp', 'fix_dp'], ['mbs', 'fix_mbs']];
const CLUSTER_OUT = ['#cluster-why', '#cluster-winner', '#cluster-numbers', '#cluster-table', '#cluster-text', '#cluster-json'];
const CLUSTER_LINKS = ['#dl-toml', '#dl-titan-csv', '#dl-winner', '#dl-megatron', '#dl-report', '#dl-report-json'];
let clusterSeq = 0;
let clusterLast = null; // the last whole answer: {key, json, text, megatron, firstMs, allMs}
let clusterTimer = 0;

/* The "More options" field (the price and cluster views): flags as the command line takes
 * them ("--ep 8 --fp8 auto --flash"), as the request's JSON keys; a message when a word is
 * neither a flag nor its value. The library checks the keys and values. */
function moreOptions(text) {
  const out = {};
  const words = text.split(/\s+/).filter(Boolean);
  for (let i = 0; i < words.length; i++) {
    if (!/^--[a-z]/.test(words[i])) return `More options: '${words[i]}' is not a flag (--name or --name value)`;
    const key = words[i].slice(2).replace(/-/g, '_');
    const value = i + 1 < words.length && !words[i + 1].startsWith('--') ? words[++i] : true;
    out[key] = typeof value === 'string' && /^-?\d+(\.\d+)?$/.test(value) ? +value : value;
  }
  return out;
}

/* The search's options: `vpipe plan --model`'s JSON keys (no model for a pasted
 * config.json; the degrees left empty are searched; then the "More options" ones). */
function clusterOptions() {
  const options = read('model') === 'config' ? {} : { model: read('model') };
  Object.assign(options, { gpu: read('gpu'), gpus: +read('gpus'), seq: +read('seq'), global_batch: +read('batch') });
  for (const [key, name] of CLUSTER_FIXED) if (read(name)) options[key] = +read(name);
  if (read('fix_recompute')) options.recompute = read('fix_recompute');
  // FlashAttention is on unless given: an unchecked box is 0 (--flash 0), not left out
  Object.assign(options, { flash: read('flash') === '1' || 0, sp: read('sp') === '1' });
  if (read('zero1') === '1') options.zero = true; // --zero: ZeRO-1; else plan searches the stage
  const more = moreOptions(read('more') || '');
  return typeof more === 'string' ? more : Object.assign(options, more);
}

/* The command line that answers the same (a pasted config.json as the file config.json). */
function clusterCommand(options) {
  const args = ['vpipe', 'plan', ...(options.model ? [] : ['--model', 'config.json'])];
  for (const [key, value] of Object.entries(options)) {
    if (value === false) continue;
    args.push(`--${key.replace(/_/g, '-')}`);
    if (value !== true) args.push(String(value));
  }
  return args.join(' ');
}

/* "v-block f1=1 ..." or "interleaved v=4" of a configuration, as the text report names it. */
function configName(c) {
  if (c.v) return `${c.family} v=${c.v}`;
  return c.params ? `${c.family} ${c.params}` : c.family;
}

/* The progress line while part of the answer is searched: what, for how long. */
function clusterProgress(started, what) {
  clearInterval(clusterTimer);
  const box = $('#cluster-progress');
  const tick = () => {
    box.replaceChildren(el('span', { class: 'spinner', 'aria-hidden': 'true' }), `${what}: ${((performance.now() - started) / 1000).toFixed(0)} s`);
  };
  tick();
  clusterTimer = setInterval(tick, 1000);
}

/* Ends the searches in flight and their progress line. */
function stopCluster() {
  lanes.forEach((lane) => lane.stop());
  clearInterval(clusterTimer);
}

/* The end of request seq: an error (or null) shown, the view's state. */
function clusterFinish(seq, error) {
  clearInterval(clusterTimer);
  if (error) $('#cluster-progress').replaceChildren();
  showError($('#cluster-error'), error);
  for (const id of CLUSTER_OUT) $(id).classList.toggle('stale', !!error);
  const section = $('#cluster');
  section.dataset.done = seq;
  section.dataset.state = error ? 'error' : 'done';
}

async function runCluster() {
  const section = $('#cluster');
  const seq = ++clusterSeq;
  section.dataset.seq = seq;
  section.dataset.state = 'busy';
  stopCluster();
  $('#cluster-title').textContent = 'The whole configuration';
  for (const id of CLUSTER_OUT) $(id).classList.add('stale');
  CLUSTER_LINKS.forEach((id) => unlink($(id)));
  const options = invalidField() || clusterOptions();
  const custom = read('model') === 'config';
  if (typeof options === 'string') return clusterFinish(seq, { message: options });
  if (custom && !read('config').trim()) return clusterFinish(seq, { message: 'Paste a config.json.' });
  $('#cluster-command').replaceChildren('The command line: ', el('code', {}, null, clusterCommand(options)));
  const args = { options: JSON.stringify(options), ...(custom ? { config: read('config') } : {}) };
  const key = JSON.stringify(args);
  if (clusterLast && clusterLast.key === key) {
    showCluster(clusterLast.json);
    return clusterDone(seq, clusterLast, 'memory');
  }
  showError($('#cluster-error'), null);
  const started = performance.now();
  clusterProgress(started, 'Searching every configuration');
  lanes[1].warm(); // its module loads while the first search runs
  const json = await lanes[0].ask({ ...args, what: 'json' });
  if (json.superseded || seq !== clusterSeq) return;
  if (!json.ok) return clusterFinish(seq, json.error);
  showCluster(json.result);
  const firstMs = performance.now() - started;
  clusterProgress(started, 'Searching again for the text report and Megatron-LM’s flags');
  const rest = await Promise.all([lanes[1].ask({ ...args, what: 'text' }), lanes[0].ask({ ...args, what: 'megatron' })]);
  if (rest.some((r) => r.superseded) || seq !== clusterSeq) return;
  clusterLast = { key, json: json.result, text: rest[0], megatron: rest[1], firstMs, allMs: performance.now() - started };
  clusterDone(seq, clusterLast, 'search');
}

/* The rest of answer (the text report, Megatron-LM's flags: or why Megatron-LM runs none of
 * its configurations) shown after its JSON, how long it took, and where it came from:
 * "search", or "memory" when it is the last answer asked again. */
function clusterDone(seq, answer, from) {
  const { json, text, megatron } = answer;
  const report = JSON.parse(json.stdout);
  const base = `${report.model}-${report.gpus}x${report.gpu}`;
  if (text.ok) {
    $('#cluster-text').textContent = text.result.stdout;
    link($('#dl-report'), text.result.stdout, 'text/plain', `plan-${base}.txt`);
  }
  if (megatron.ok) link($('#dl-megatron'), megatron.result.stdout, 'text/plain', `megatron-${base}.txt`);
  else $('#cluster-notes').textContent += `\nNo Megatron-LM flags: ${megatron.error.message}`;
  const section = $('#cluster');
  Object.assign(section.dataset, { from, firstMs: answer.firstMs.toFixed(0), allMs: answer.allMs.toFixed(0) });
  section.dataset.searchMs = [json.ms, text.result?.ms, megatron.result?.ms].map((ms) => (ms === undefined ? '' : ms.toFixed(0))).join(' ');
  const s = (ms) => `${(ms / 1000).toFixed(1)} s`;
  $('#cluster-progress').textContent = `Answered in ${s(answer.allMs)}${from === 'memory' ? ' (shown again: the same request as the last)' : ''}: three searches of the whole configuration in this page (the report with the exports, the text report, Megatron-LM’s flags), the first shown after ${s(answer.firstMs)}.`;
  clusterFinish(seq, text.ok ? null : text.error);
}

/* The structured report (the JSON search's): the winner, why, its memory per rank against
 * the accelerator's capacity, the best of every family, and the downloads it brings. */
function showCluster(result) {
  const report = JSON.parse(result.stdout);
  const best = report.best;
  for (const id of CLUSTER_OUT) if (id !== '#cluster-text') $(id).classList.remove('stale');
  $('#cluster-title').textContent = `${report.model} on ${report.gpus} × ${report.gpu}: ${best.family} wins`;
  $('#cluster-why').textContent = `Why: ${report.reason}`;
  const capacity = result.capacityBytes;
  showNumbers([
    ['Winner', configName(best)],
    ['Parallelism', `DP ${best.dp} × TP ${best.tp} × PP ${best.pp}, microbatch size ${best.mbs}, ${best.m} microbatches, recompute ${best.recompute}`],
    ['Step time', `${seconds(best.step_time_s)}, MFU ${percent(best.mfu)}, bubble ${percent(best.bubble)}`],
    ['Largest rank', `${gib(best.memory_max_bytes, 2)} of ${gib(capacity, 2)}${best.tight ? `: tight, ${gib(best.headroom_bytes, 2)} of room under the ${gib(report.margin_bytes, 2)} margin` : ''}`],
    ['Searched', `${report.candidates} configurations: ${report.evaluated} evaluated, ${report.pruned} pruned, ${report.refused} refused${report.timed_out ? ' (time limit: the best so far)' : ''}`],
  ], $('#cluster-numbers'));
  const bars = { ...best, capacity_bytes: capacity };
  $('#cluster-bars').replaceChildren();
  memoryBars(bars, $('#cluster-bars'), { height: 180, bar: 48, width: 420 });
  $('#cluster-bars-caption').textContent = `The winner's memory per rank (GiB) against the accelerator's ${gib(capacity, 0)} (dashed), on a scale a fifth above it. Hover a rank for its parts.`;
  $('#cluster-table').replaceChildren(clusterTable(report));
  $('#cluster-json').textContent = result.stdout;
  const base = `${report.model}-${report.gpus}x${report.gpu}`;
  const file = (path) => result.files.find((f) => f.path === path).text;
  link($('#dl-toml'), file('titan/job.toml'), 'application/toml', 'job.toml');
  link($('#dl-titan-csv'), file('titan/schedule.csv'), 'text/csv', 'schedule.csv');
  link($('#dl-winner'), file('winner.json'), 'application/json', `${base}-${best.family}.json`);
  link($('#dl-report-json'), result.stdout, 'application/json', `plan-${base}.json`);
  $('#cluster-notes').textContent = 'job.toml finds its schedule at titan/schedule.csv: keep both in a folder titan, as the command line with --emit torchtitan titan writes them.';
}

/* A configuration's largest rank in GiB, marked tight when it leaves less room than the
 * plan's margin. */
function largest(c) {
  return `${(c.memory_max_bytes / GIB).toFixed(2)}${c.tight ? ' (tight)' : ''}`;
}

/* The best configuration of every family, fastest first, the winner's row marked (a tight
 * one's largest rank says so). */
function clusterTable(report) {
  const table = el('table', { class: 'cluster-table' });
  el('caption', {}, table, 'The best configuration of every family (1f1b-r: 1F1B with full recomputation)');
  const head = el('tr', {}, el('thead', {}, table));
  for (const h of ['Family', 'DP', 'TP', 'PP', 'mbs', 'm', 'Recompute', 'Step (s)', 'Slower', 'MFU', 'Bubble', 'Largest rank (GiB)']) el('th', { scope: 'col' }, head, h);
  const body = el('tbody', {}, table);
  const best = report.best;
  const same = (c) => ['family', 'params', 'v', 'dp', 'tp', 'pp', 'mbs', 'recompute'].every((k) => c[k] === best[k]);
  for (const [group, c] of Object.entries(report.best_per_family)) {
    const row = el('tr', { 'data-family': group, ...(same(c) ? { class: 'winner' } : {}) }, body);
    const name = el('th', { scope: 'row' }, row, group);
    const schedule = configName(c);
    if (schedule !== group && schedule !== c.family) el('span', { class: 'params' }, name, schedule.slice(c.family.length + 1));
    const slower = same(c) ? 'winner' : `+${percent(c.step_time_s / best.step_time_s - 1)}`;
    const cells = [c.dp, c.tp, c.pp, c.mbs, c.m, c.recompute, c.step_time_s.toFixed(2), slower, percent(c.mfu), percent(c.bubble), largest(c)];
    for (const v of cells) el('td', {}, row, String(v));
  }
  return table;
}

/* ---- start ----------------------------------------------------------------------------- */

function run() {
  const mode = read('mode');
  if (mode !== 'cluster') stopCluster(); // a search nobody looks at
  if (mode === 'cluster') return runCluster();
  return mode === 'price' ? runPrice() : runView(mode);
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
  fill(form.elements.family2, info.families.map((f) => f.name), DEFAULTS.family2);
  defaults = Object.fromEntries(STATE.map((name) => [name, read(name)]));
  showLegend($('#price-legend'));
  showLegend($('#cluster-legend'));
  hashToState();
  showMode();
  startHover($('#tip'));
  $('#version').textContent = info.version;
  $('#status').textContent = `Ready: vpipe ${info.version}, ${info.families.length} families, computed in a Web Worker.`;
  $('main').hidden = false;
  document.addEventListener('input', (e) => {
    if (e.target.form !== form || e.target.type === 'file') return;
    if (e.target.name !== 'full') return changed();
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
