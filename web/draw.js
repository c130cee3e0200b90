/* The playground's own drawings (the library draws the schedules themselves): the planner's
 * frontier, memory over time per device (the library's Chrome trace counters), the memory
 * bars of the pricing and of the cluster's winner, and the hover tip every picture on the page shares. Loaded before
 * app.js, which calls them. */
'use strict';

const SVG_NS = 'http://www.w3.org/2000/svg';
const GIB = 2 ** 30;

/* ---- small helpers ------------------------------------------------------------------- */

function el(tag, attrs = {}, parent = null, text = '') {
  const node = tag.startsWith('svg:') ? document.createElementNS(SVG_NS, tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text) node.textContent = text;
  if (parent) parent.appendChild(node);
  return node;
}

/* An SVG element with a title: its hover text (and its name for screen readers). */
function titled(tag, attrs, parent, title) {
  const node = el(tag, attrs, parent);
  el('svg:title', {}, node, title);
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

function gib(bytes, digits = 1) {
  return `${(bytes / GIB).toFixed(digits)} GiB`;
}

/* ---- hover --------------------------------------------------------------------------- */

/* The hover text of node: that of the nearest element, up to (not including) its SVG root,
 * with a title of its own. The title moves into data-tip and aria-label the first time, so
 * the browser's own, slower tooltip does not repeat ours. */
function tipOf(node) {
  for (let n = node; n instanceof SVGElement && n.tagName !== 'svg'; n = n.parentNode) {
    if (n.dataset.tip !== undefined) return n.dataset.tip;
    const title = [...n.children].find((c) => c.tagName === 'title');
    if (title) {
      n.dataset.tip = title.textContent;
      n.setAttribute('aria-label', title.textContent);
      title.remove();
      return n.dataset.tip;
    }
  }
  return null;
}

/* Shows the tip of whatever the pointer is over in any picture on the page, beside the
 * pointer; hides it elsewhere. */
function startHover(tip) {
  const place = (e) => {
    const text = e.target instanceof SVGElement ? tipOf(e.target) : null;
    tip.hidden = !text;
    if (!text) return;
    tip.textContent = text;
    const x = Math.min(e.clientX + 14, innerWidth - tip.offsetWidth - 4);
    const y = e.clientY + 18 + tip.offsetHeight > innerHeight ? e.clientY - tip.offsetHeight - 10 : e.clientY + 18;
    tip.style.left = `${Math.max(4, x)}px`;
    tip.style.top = `${y}px`;
  };
  document.addEventListener('pointermove', place);
  document.addEventListener('pointerleave', () => (tip.hidden = true));
}

/* ---- the planner's frontier ---------------------------------------------------------- */

/* What a plan point is: family (with its block's parameters), memory, bubble, makespan. */
function pointText(q, unit) {
  const name = q.params ? `${q.family} ${q.params}` : q.family;
  return `${name}: ${fmt(q.memory)} ${unit}, bubble ${percent(q.bubble)}, makespan ${fmt(q.makespan, 6)}`;
}

/* Labels the frontier's points with their family where a label has room (no overlap with
 * one placed before), left to right. */
function frontierLabels(svg, points, x, y) {
  const placed = [];
  for (const q of points) {
    const box = { x: x(q.memory) + 9, y: y(q.bubble) - 7, w: 6.6 * q.family.length, h: 13 };
    const clash = placed.some((b) => box.x < b.x + b.w && b.x < box.x + box.w && box.y - box.h < b.y && b.y - b.h < box.y);
    if (clash || box.x + box.w > +svg.getAttribute('width')) continue;
    placed.push(box);
    el('svg:text', { x: box.x, y: box.y, class: 'label' }, svg, q.family);
  }
}

/* The memory -> bubble plot of a plan report (memory on a log2 axis): candidates as
 * circles, the frontier as a labelled line, the budget dashed, the choice ringed; every
 * point's hover text says which family or block it is, its memory, bubble and makespan. */
function frontierPlot(report) {
  const W = 560;
  const H = 280;
  const pad = { l: 56, r: 16, t: 12, b: 44 };
  const unit = report.budget_unit;
  const points = [...report.candidates, ...report.frontier].filter((q) => q.memory > 0);
  const memories = [report.budget, report.peak_memory_max, ...points.map((q) => q.memory)];
  const lo = Math.log2(Math.min(...memories)) - 0.2;
  const hi = Math.max(lo + 1, Math.log2(Math.max(...memories)) + 0.1);
  const maxY = Math.max(0.01, ...points.map((q) => q.bubble)) * 1.1;
  const x = (v) => pad.l + ((Math.log2(v) - lo) / (hi - lo)) * (W - pad.l - pad.r);
  const y = (v) => H - pad.b - (v / maxY) * (H - pad.t - pad.b);
  const svg = el('svg:svg', { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'img', class: 'plot' });
  el('svg:title', {}, svg, `Memory to bubble frontier; chosen ${report.family} at ${fmt(report.peak_memory_max)} ${unit}`);
  for (let e = Math.ceil(lo); e <= hi; e++) {
    el('svg:line', { x1: x(2 ** e), x2: x(2 ** e), y1: y(0), y2: y(maxY), class: 'grid' }, svg);
    el('svg:text', { x: x(2 ** e), y: H - pad.b + 16, 'text-anchor': 'middle' }, svg, fmt(2 ** e));
  }
  for (let i = 0; i <= 4; i++) {
    const vy = (maxY * i) / 4;
    el('svg:line', { x1: pad.l, x2: W - pad.r, y1: y(vy), y2: y(vy), class: 'grid' }, svg);
    el('svg:text', { x: pad.l - 6, y: y(vy) + 4, 'text-anchor': 'end' }, svg, `${(100 * vy).toFixed(0)}%`);
  }
  el('svg:text', { x: (W + pad.l) / 2, y: H - 6, 'text-anchor': 'middle' }, svg, `peak activation memory (${unit}, log scale)`);
  el('svg:text', { x: 12, y: H / 2, transform: `rotate(-90 12 ${H / 2})`, 'text-anchor': 'middle' }, svg, 'bubble');
  titled('svg:line', { x1: x(report.budget), x2: x(report.budget), y1: y(0), y2: y(maxY), class: 'budget' }, svg, `budget: ${fmt(report.budget)} ${unit}`);
  const dot = (q, r, cls, what) => titled('svg:circle', { cx: x(q.memory), cy: y(q.bubble), r, class: cls }, svg, `${what}: ${pointText(q, unit)}`);
  report.candidates.filter((q) => q.memory > 0).forEach((q) => dot(q, 4, 'candidate', 'candidate'));
  const frontier = report.frontier.filter((q) => q.memory > 0);
  el('svg:polyline', { points: frontier.map((q) => `${x(q.memory)},${y(q.bubble)}`).join(' '), class: 'frontier' }, svg);
  frontier.forEach((q) => dot(q, 4, q.fits ? 'fits' : 'over', q.fits ? 'frontier, fits the budget' : 'frontier, over the budget'));
  frontierLabels(svg, frontier, x, y);
  const chosen = { ...report, memory: report.peak_memory_max };
  dot(chosen, 8, 'chosen', 'chosen');
  return svg;
}

/* Axis ticks from 0 to max, a 1, 2 or 5 times a power of ten apart, at most about n + 1. */
function ticks(max, n) {
  const e = 10 ** Math.floor(Math.log10(max / n));
  const step = [1, 2, 5, 10].map((f) => f * e).find((s) => s >= max / n);
  return Array.from({ length: Math.floor(max / step + 1e-9) + 1 }, (_, i) => i * step);
}

/* ---- memory over time per device ----------------------------------------------------- */

/* The memory counters of a Chrome trace written by the library (vp_request_render
 * "trace"): per device the steps [time, memory] in time units, the unit, the makespan. */
function traceMemory(text) {
  const trace = JSON.parse(text);
  const info = trace.otherData;
  const devices = Array.from({ length: info.p }, () => []);
  let unit = 'units';
  for (const e of trace.traceEvents) {
    if (e.ph !== 'C') continue;
    const [[name, value]] = Object.entries(e.args);
    unit = name;
    devices[e.pid].push([e.ts / info.us_per_time_unit, value]);
  }
  return { family: info.family, devices, unit, makespan: info.makespan };
}

/* The memory over time of one schedule (traceMemory's), one step line per device coloured
 * from the first device to the last, on scale {time, memory} (shared by the plots that are
 * compared); budget: the planner's budget (a dashed line) or null. Each line's hover text:
 * its device, peak and when it was first reached. */
function memoryPlot(data, scale, budget = null) {
  const W = 760;
  const H = 216;
  const pad = { l: 56, r: 96, t: 26, b: 34 };
  const x = (t) => pad.l + (t / scale.time) * (W - pad.l - pad.r);
  const y = (v) => H - pad.b - (v / scale.memory) * (H - pad.t - pad.b);
  const svg = el('svg:svg', { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'img', class: 'plot memory-plot' });
  Object.assign(svg.dataset, { time: scale.time, memory: scale.memory, x0: x(0), x1: x(scale.time), y0: y(0), y1: y(scale.memory) });
  el('svg:title', {}, svg, `Memory over time per device: ${data.family}`);
  el('svg:text', { x: pad.l, y: 14, class: 'plot-title' }, svg, data.family);
  for (const v of ticks(scale.memory, 4)) {
    el('svg:line', { x1: x(0), x2: x(scale.time), y1: y(v), y2: y(v), class: 'grid' }, svg);
    el('svg:text', { x: pad.l - 6, y: y(v) + 4, 'text-anchor': 'end' }, svg, fmt(v));
  }
  for (const t of ticks(scale.time, 8)) el('svg:text', { x: x(t), y: H - pad.b + 16, 'text-anchor': 'middle' }, svg, fmt(t));
  el('svg:text', { x: (x(0) + x(scale.time)) / 2, y: H - 4, 'text-anchor': 'middle' }, svg, 'time');
  el('svg:text', { x: 12, y: H / 2 - 4, transform: `rotate(-90 12 ${H / 2 - 4})`, 'text-anchor': 'middle' }, svg, `memory (${data.unit})`);
  if (budget !== null) titled('svg:line', { x1: x(0), x2: x(scale.time), y1: y(budget), y2: y(budget), class: 'budget' }, svg, `budget: ${fmt(budget)} ${data.unit}`);
  const p = data.devices.length;
  data.devices.forEach((steps, d) => {
    if (!steps.length) return;
    let peak = steps[0];
    let path = `M${x(steps[0][0]).toFixed(2)} ${y(steps[0][1]).toFixed(2)}`;
    for (const [t, v] of steps.slice(1)) {
      path += ` H${x(t).toFixed(2)} V${y(v).toFixed(2)}`;
      if (v > peak[1]) peak = [t, v];
    }
    path += ` H${x(data.makespan).toFixed(2)}`;
    const hue = p > 1 ? 215 - (185 * d) / (p - 1) : 215;
    titled('svg:path', { d: path, class: 'device', style: `--hue: ${hue.toFixed(0)}`, 'data-device': d }, svg,
      `device ${d}: peak ${fmt(peak[1], 4)} ${data.unit} at ${fmt(peak[0], 6)}`);
    if (d === 0 || d === p - 1) el('svg:text', { x: x(scale.time) + 8, y: pad.t + 10 + (d ? 18 : 0), style: `--hue: ${hue.toFixed(0)}`, class: 'device-label' }, svg, `device ${d}`);
  });
  return svg;
}

/* ---- the pricing's memory bars --------------------------------------------------------- */

const MEMORY_PARTS = [
  ['params', 'parameters'],
  ['grads', 'gradients'],
  ['optimizer', 'optimizer state'],
  ['activations', 'activations'],
  ['other', 'the rest: buffers, workspace, logits, gathers, allocator cache, context, communicators, reserve'],
];
const HEADROOM = 1.2; // the bars' scale: the accelerator's capacity and a fifth more

/* One stacked bar per rank (GiB) on the scale of the accelerator: its capacity (the dashed
 * line, at one height in every family's bars) and a fifth more. A family that does not fit
 * cannot squash the others: a rank above the scale is drawn to its top and cut (the break
 * mark), its number in the hover text. report: memory_per_rank, memory_max_bytes and
 * capacity_bytes (a pricing report's); size: the bars' height, each bar's width at most,
 * and their width together at most (px). */
function memoryBars(report, parent, { height = 72, bar = 14, width = 160 } = {}) {
  const ranks = report.memory_per_rank;
  const H = height;
  const top = report.capacity_bytes * HEADROOM;
  const bw = Math.max(3, Math.min(bar, width / ranks.length));
  const W = ranks.length * (bw + 2) + 2;
  const svg = el('svg:svg', { width: W, height: H, role: 'img', class: 'bars', 'data-top': top }, parent);
  el('svg:title', {}, svg, `Memory per rank, largest ${gib(report.memory_max_bytes)} of ${gib(report.capacity_bytes, 0)}`);
  ranks.forEach((rank, i) => {
    const parts = { ...rank, other: rank.total - rank.params - rank.grads - rank.optimizer - rank.activations };
    const g = titled('svg:g', { 'data-bytes': rank.total }, svg,
      `rank ${rank.rank}: ${gib(rank.total, 2)} (${MEMORY_PARTS.map(([k, n]) => `${n} ${(parts[k] / GIB).toFixed(2)}`).join(', ')})`);
    let below = 0;
    for (const [k] of MEMORY_PARTS) {
      const h = (Math.min(parts[k], top - below) / top) * H;
      if (h > 0) el('svg:rect', { x: 2 + i * (bw + 2), y: H - (below / top) * H - h, width: bw, height: h, class: `part-${k}` }, g);
      below = Math.min(top, below + parts[k]);
    }
    if (rank.total > top) el('svg:path', { d: `M${1 + i * (bw + 2)} 7 l${bw + 2} -4 M${1 + i * (bw + 2)} 11 l${bw + 2} -4`, class: 'break' }, g);
  });
  const cap = H - (report.capacity_bytes / top) * H;
  el('svg:line', { x1: 0, x2: W, y1: cap, y2: cap, class: 'capacity' }, svg);
  return svg;
}
