// The playground's browser test (ctest label "browser"): Debian's headless Chromium, driven by
// playwright-core, loads the page built by web/build.sh from a loopback HTTP server and the
// single file from disk, works its controls as a visitor would, and checks that every picture
// and report it shows is byte for byte what the native build answers for the same request: the
// vpipe command line (render --svg, simulate --json, schedule --format, plan --json,
// validate's message; each family's pricing as `vpipe simulate FAMILY --model ... --json`
// through the Python package's front door, More options included). The cluster view (Llama-3-70B on 64
// H100s) against `vpipe plan --model`: its text and JSON reports (the search's seconds
// masked), the winner's bars, the table, the why line, and the downloads against --emit
// torchtitan, --emit megatron and -o; that it shows its search running while the other views
// still answer, and answers a request asked again from memory. Also: the hover text of an op,
// a frontier point and a memory line; two families on one time scale; memory over time equal
// to the library's trace; the picture fitted to the page; the pricing's bars on the
// accelerator's scale (a family that does not fit cut, not squashing the others); one error
// for one bad input; nothing shown before the library is ready; dark mode; the view in the
// address, labels on every control, no overflow at phone width, no console errors, and the
// served files' gzipped size (asserted: under 400 KB). Timings (first picture, the warm
// planner, the cluster's plan) are printed as a benchmark, never asserted. Writes the README's
// light and dark screenshots beside the page.
// Usage: node web/test.mjs BUILD_WEB VPIPE_CLI LIBVPIPE_SO SOURCE_DIR
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import { launch, serve, settled } from './harness.mjs';

const [buildWeb, vpipe, libvpipe, source] = process.argv.slice(2).map((p) => resolve(p));
const site = join(buildWeb, 'site');
const scratch = mkdtempSync(join(tmpdir(), 'vpipe-web-'));
const SIZE_LIMIT = 400 * 1024;
const GiB = 2 ** 30;
let passed = 0;
let failed = 0;

function check(what, ok, detail = '') {
  if (ok) passed++;
  else failed++;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}${ok || !detail ? '' : `\n     ${detail}`}`);
  return ok;
}

/* Equal texts; on a difference, where it starts. */
function same(what, got, want) {
  let i = 0;
  while (got !== null && i < Math.min(got.length, want.length) && got[i] === want[i]) i++;
  const near = got === null ? 'nothing shown' : `${got.length} vs ${want.length} bytes, first difference at ${i}: ${JSON.stringify(got.slice(i, i + 60))} vs ${JSON.stringify(want.slice(i, i + 60))}`;
  return check(what, got === want, near);
}

/* ---- the native side ---------------------------------------------------------------- */

function cli(args, input, cwd) {
  const r = spawnSync(vpipe, args, { input, cwd, encoding: 'utf8', maxBuffer: 1 << 28 });
  return { status: r.status, out: r.stdout, err: r.stderr };
}

function cliOut(args, input, cwd) {
  const r = cli(args, input, cwd);
  if (r.status !== 0) throw new Error(`vpipe ${args.join(' ')} failed: ${r.err}`);
  return r.out;
}

/* The library's message in the command line's error line "vpipe: error: [-: |-:L:C: ]msg",
 * as the page shows it ("line L, column C: msg"). */
function cliMessage(stderr) {
  const line = stderr.split('\n').find((l) => l.startsWith('vpipe: error: '));
  const m = /^vpipe: error: (?:-:(\d+):(\d+): |-: )?(.*)$/.exec(line);
  return m[1] ? `line ${m[1]}, column ${m[2]}: ${m[3]}` : m[3];
}

/* The native reports (text) for options with each family: `vpipe simulate FAMILY --json`
 * through the library's front door (the Python package's vpipe.call). */
function nativePrices(options, families) {
  const program = `
import json, sys
import vpipe
options, families = json.loads(sys.argv[1]), json.loads(sys.argv[2])
reports = []
for family in families:
    try:
        reports.append(vpipe.call("simulate", family, json=True, **options).stdout)
    except vpipe.Error as e:
        reports.append({"error": e.message})
print(json.dumps(reports))`;
  const env = { ...process.env, VPIPE_LIBRARY: libvpipe, PYTHONPATH: join(source, 'python') };
  const r = spawnSync('python3', ['-c', program, JSON.stringify(options), JSON.stringify(families)], { env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`python: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

/* ---- the page ---------------------------------------------------------------------- */

const consoleErrors = [];

async function open(browser, url, viewport = { width: 1280, height: 900 }) {
  const page = await browser.newPage({ viewport });
  page.on('console', (m) => m.type() === 'error' && consoleErrors.push(`${url}: ${m.text()}`));
  page.on('pageerror', (e) => consoleErrors.push(`${url}: ${e.message}`));
  // A picture replaced while it loads has its read aborted by the browser, by design, and
  // so has the module of a cluster worker ended while it loads (a newer search ends the
  // worker of an older one); any other failed request (a revoked or missing address, a
  // file not served) is an error.
  page.on('requestfailed', (r) => {
    const why = r.failure()?.errorText ?? '';
    const moduleFile = /\/vpipe\.(js|wasm)$/.test(new URL(r.url()).pathname);
    if (!((r.url().startsWith('blob:') || moduleFile) && why === 'net::ERR_ABORTED'))
      consoleErrors.push(`${url}: request failed ${r.url()} (${why})`);
  });
  await page.goto(url);
  return page;
}


/* What the schedule view shows: its texts, the files behind its links, the ops drawn in its
 * inline pictures and the lines of its memory plots. */
async function shown(page) {
  await settled(page);
  return page.evaluate(async () => {
    const text = (s) => document.querySelector(s).textContent;
    const fetchText = async (url) => (url && url.startsWith('blob:') ? (await fetch(url)).text() : null);
    const href = (s) => document.querySelector(s).getAttribute('href');
    const error = document.querySelector('#view-error');
    return {
      state: document.querySelector('#view').dataset.state,
      error: error.hidden ? null : error.textContent,
      sim: text('#sim-json'),
      plan: text('#plan-json'),
      svg: await fetchText(href('#dl-svg')),
      trace: await fetchText(href('#dl-trace')),
      json: await fetchText(href('#dl-json')),
      csv: await fetchText(href('#dl-csv')),
      compared: await Promise.all([...document.querySelectorAll('#dl-compare a')].map((a) => fetchText(a.getAttribute('href')))),
      csvNote: text('#csv-notes'),
      planMs: document.querySelector('#view').dataset.planMs,
      frontierDots: document.querySelectorAll('#frontier circle').length,
      pictures: [...document.querySelectorAll('#pictures svg')].map((svg) => ({
        ops: svg.querySelectorAll('.vp-edge > g').length,
        width: +svg.getAttribute('width'),
        shown: svg.getBoundingClientRect().width,
      })),
      memory: [...document.querySelectorAll('#memory svg')].map((svg) => ({
        scale: Object.fromEntries(Object.entries(svg.dataset).map(([k, v]) => [k, +v])),
        lines: [...svg.querySelectorAll('path.device')].map((path) => [+path.dataset.device, path.getAttribute('d')]),
      })),
    };
  });
}

/* The memory steps [time, memory] per device of a Chrome trace (its counter events). */
function traceSteps(text) {
  const trace = JSON.parse(text);
  const devices = Array.from({ length: trace.otherData.p }, () => []);
  for (const e of trace.traceEvents) if (e.ph === 'C') devices[e.pid].push([e.ts / trace.otherData.us_per_time_unit, Object.values(e.args)[0]]);
  return devices;
}

/* The steps a memory plot's line draws ("M x y H x V y ... H x"), read back through the
 * plot's scales. */
function plotSteps(scale, d) {
  const t = (x) => ((x - scale.x0) / (scale.x1 - scale.x0)) * scale.time;
  const v = (y) => ((y - scale.y0) / (scale.y1 - scale.y0)) * scale.memory;
  const steps = [];
  let x = null;
  for (const [, cmd, a, b] of d.matchAll(/([MHV])(-?[\d.]+)(?: (-?[\d.]+))?/g)) {
    if (cmd === 'M') steps.push([t(+a), v(+b)]);
    else if (cmd === 'H') x = +a;
    else steps.push([t(x), v(+a)]);
  }
  return steps;
}

/* A memory plot draws every device's steps of the library's trace, to the plot's precision. */
function memoryMatches(label, plot, trace) {
  const want = traceSteps(trace);
  const bad = want.map((steps, dev) => {
    const line = plot && plot.lines.find(([d]) => d === dev);
    if (!line) return `device ${dev}: no line`;
    const got = plotSteps(plot.scale, line[1]);
    const off = steps.findIndex(([t, v], i) => !got[i] || Math.abs(got[i][0] - t) > 1e-4 * plot.scale.time || Math.abs(got[i][1] - v) > 1e-4 * plot.scale.memory);
    return got.length !== steps.length || off >= 0 ? `device ${dev}: ${got.length} steps vs ${steps.length}, first difference at ${off}` : null;
  }).filter(Boolean);
  check(`${label}: memory over time = the trace's counters, every device`, plot && plot.lines.length === want.length && !bad.length, bad.join('; '));
}

/* The command line's flags for the page's pipeline fields. */
function flags(f) {
  return ['-p', f.p, '-m', f.m, '-v', f.v ?? '2', '--cost', `F=${f.F},B=${f.B},W=${f.W},c=${f.c}`, '--memory-model', f.mm ?? 'at-w'];
}

async function setFields(page, fields) {
  const names = { mm: 'memory_model' };
  for (const [k, v] of Object.entries(fields)) {
    const sel = `[name="${names[k] || k}"]`;
    if (k === 'family') await page.selectOption(sel, v);
    else await page.fill(sel, String(v));
  }
}

async function expectFamily(page, where, f) {
  const got = await shown(page);
  const label = `${where}: ${f.family} p=${f.p} m=${f.m} F=${f.F} B=${f.B} W=${f.W} c=${f.c}`;
  check(`${label}: shown without error`, got.state === 'done', got.error);
  const svg = cliOut(['render', f.family, ...flags(f), '--svg', '-']);
  same(`${label}: SVG = vpipe render --svg`, got.svg, svg);
  const ops = svg.split('<g><title>').length - 1 - f.p; // less one memory strip per device
  check(`${label}: the inline picture has the SVG's ${ops} ops`, got.pictures.length === 1 && got.pictures[0].ops === ops, JSON.stringify(got.pictures));
  const trace = cliOut(['render', f.family, ...flags(f), '--trace', '-']);
  same(`${label}: Chrome trace = vpipe render --trace`, got.trace, trace);
  memoryMatches(label, got.memory[0], trace);
  same(`${label}: report = vpipe simulate --json`, got.sim, cliOut(['simulate', f.family, ...flags(f), '--json']));
  same(`${label}: JSON download = vpipe schedule --format json`, got.json, cliOut(['schedule', f.family, ...flags(f), '--format', 'json']));
  const csv = cli(['schedule', f.family, ...flags(f), '--format', 'torch-csv']);
  if (csv.status === 0) same(`${label}: CSV download = vpipe schedule --format torch-csv`, got.csv, csv.out);
  else check(`${label}: no CSV, with the command line's reason`, got.csv === null && got.csvNote === `No PyTorch CSV: ${cliMessage(csv.err)}`, got.csvNote);
  return got;
}

/* The plan view for fields f and budget: report, chosen schedule and its picture. */
async function expectPlan(page, where, f, budget) {
  const got = await shown(page);
  const label = `${where}: plan p=${f.p} m=${f.m} --memory ${budget}`;
  check(`${label}: shown without error`, got.state === 'done', got.error);
  // "blocks_built" counts the V blocks the search built, which depends on how many workers
  // split it (one per core, up to the planner's maximum; the page has one): compared apart.
  const want = cliOut(['plan', ...flags(f), '--memory', budget, '--json']);
  const built = (text) => (/"blocks_built": (\d+),/.exec(text || '') || [])[1];
  const apart = (text) => text && text.replace(/"blocks_built": \d+,/, '"blocks_built": N,');
  same(`${label}: report = vpipe plan --json (but blocks_built)`, apart(got.plan), apart(want));
  console.log(`     blocks_built: ${built(got.plan)} in the page (one worker), ${built(want)} natively (${cpus().length} cores)`);
  const chosen = cliOut(['plan', ...flags(f), '--memory', budget, '-o', '-']);
  same(`${label}: chosen schedule = vpipe plan -o -`, got.json, chosen);
  const file = join(scratch, 'chosen.json');
  writeFileSync(file, chosen);
  const cost = flags(f).slice(6);
  same(`${label}: chosen picture = vpipe render --svg`, got.svg, cliOut(['render', file, ...cost, '--svg', '-']));
  memoryMatches(`${label}: chosen`, got.memory[0], cliOut(['render', file, ...cost, '--trace', '-']));
  same(`${label}: chosen report = vpipe simulate --json`, got.sim, cliOut(['simulate', file, ...cost, '--json']));
  const report = JSON.parse(got.plan);
  check(`${label}: the frontier plot has a dot for every candidate and frontier point and the choice`,
    got.frontierDots === [...report.candidates, ...report.frontier].filter((q) => q.memory > 0).length + 1);
  return got;
}

async function firstPictureMs(page) {
  await page.waitForFunction(() => performance.getEntriesByName('vp-first-picture').length > 0);
  return page.evaluate(() => performance.getEntriesByName('vp-first-picture')[0].startTime);
}

/* ---- the scenarios ------------------------------------------------------------------- */

const bench = [];

async function servedPage(browser, base) {
  const page = await open(browser, `${base}/`);
  bench.push(`first picture, served page: ${(await firstPictureMs(page)).toFixed(0)} ms after navigation (target 1000 ms)`);
  const f = { family: 'v-half', p: 4, m: 8, F: 1, B: 1, W: 1, c: 0 };
  await expectFamily(page, 'served, defaults', f);

  // family, p, m, costs changed through the controls
  Object.assign(f, { family: 'zb-h1', p: 6, m: 12, F: 2, B: 1.5, W: 1, c: 0.25 });
  await setFields(page, f);
  await expectFamily(page, 'served', f);
  Object.assign(f, { family: 'interleaved', v: 3, p: 4, m: 8 });
  await setFields(page, f);
  await expectFamily(page, 'served', f);
  Object.assign(f, { family: 'dualpipe', v: 2 });
  await setFields(page, f);
  await expectFamily(page, 'served (no PyTorch CSV)', f);

  // the family by keyboard: focus the select, one step down the list
  const families = familyNames();
  await page.focus('[name="family"]');
  await page.keyboard.press('ArrowDown');
  f.family = families[families.indexOf('dualpipe') + 1];
  check(`keyboard: ArrowDown on the family list picks ${f.family}`, (await page.inputValue('[name="family"]')) === f.family);
  await expectFamily(page, 'served, keyboard', f);

  // the view in the address: a new tab on the same URL shows the same picture
  const again = await open(browser, page.url());
  same('the address restores the view: same picture in a new tab', (await shown(again)).svg, (await shown(page)).svg);
  await again.close();
  return page;
}

async function planner(page) {
  await page.focus('[name="mode"][value="schedule"]');
  await page.keyboard.press('ArrowRight'); // radio group: the next mode, plan
  check('keyboard: ArrowRight on the mode radios picks "plan"', await page.isChecked('[name="mode"][value="plan"]'));
  const f = { p: 8, m: 32, F: 1, B: 1, W: 1, c: 0, v: 2 };
  await setFields(page, { ...f, memory: '0.5' });
  await expectPlan(page, 'served', f, '0.5');
  for (const budget of ['4u', '0.5', '4u']) { // the module is warm: time the planner alone
    await page.fill('[name="memory"]', budget);
    const got = await shown(page);
    bench.push(`planner p=8 m=32 --memory ${budget}, warm: ${got.planMs} ms in the worker (target 200 ms)`);
  }
  const g = { ...f, F: 2, B: 1, W: 1, c: 0.5, p: 6, m: 18 };
  await setFields(page, { ...g, memory: '0.6' });
  await expectPlan(page, 'served', g, '0.6');
  await page.fill('[name="memory"]', '0.01');
  const low = await shown(page);
  const refused = cli(['plan', ...flags(g), '--memory', '0.01']);
  check('a budget below every schedule: the planner\'s message', low.state === 'error' && refused.status !== 0 && low.error === cliMessage(refused.err), `${low.error} vs ${refused.err}`);
}

async function loader(page) {
  await page.check('[name="mode"][value="load"]');
  const f = { F: 1, B: 2, W: 1, c: 0.1 };
  await setFields(page, f);
  const csv = cliOut(['schedule', 'zb-v', '-p', '4', '-m', '8', '--format', 'torch-csv']);
  const file = join(scratch, 'zb-v.csv');
  writeFileSync(file, csv);
  await page.setInputFiles('[name="file"]', file);
  // the page reads the file asynchronously into the text box, then asks for the view
  await page.waitForFunction((text) => document.querySelector('[name="text"]').value === text, csv);
  const got = await shown(page);
  const cost = flags({ ...f, p: 0, m: 0 }).slice(6);
  check('upload a PyTorch CSV: shown without error', got.state === 'done', got.error);
  same('upload a PyTorch CSV: picture = vpipe render FILE --svg', got.svg, cliOut(['render', file, ...cost, '--svg', '-']));
  same('upload a PyTorch CSV: report = vpipe simulate FILE --json', got.sim, cliOut(['simulate', file, ...cost, '--json']));
  same('upload a PyTorch CSV: CSV download = the file', got.csv, csv);

  const bad = [
    ['a CSV whose W comes before its I', '0F0,0F1,0I1,0W0,0I0,0W1\n1F0,1I0,1F1,1I1,1W0,1W1\n'],
    ['a JSON schedule that deadlocks', JSON.stringify({ format: 'vpipe-schedule', version: 1, family: '1f1b', p: 2, stages: 2, microbatches: 1, route_len: 2, placement: 'single', stage_device: [0, 1], devices: [[['F', 0, 0], ['BW', 0, 0]], [['BW', 1, 0], ['F', 1, 0]]] })],
    ['malformed JSON', '{"format": "vpipe-schedule",'],
  ];
  for (const [what, text] of bad) {
    await page.fill('[name="text"]', text);
    const shownBad = await shown(page);
    const r = cli(['validate', '-'], text);
    check(`invalid schedule (${what}): the validator's message`, shownBad.state === 'error' && r.status === 3 && shownBad.error === cliMessage(r.err), `page: ${shownBad.error}; vpipe validate: ${r.err.trim()}`);
  }
}

/* The hover tip shown with the pointer over what locate (run in the page with arg) returns:
 * an element (at its centre, scrolled into view) or a point {x, y} of the viewport. */
async function hoverTip(page, locate, arg) {
  const handle = await page.evaluateHandle(locate, arg);
  const element = handle.asElement();
  let at;
  if (element) {
    await element.scrollIntoViewIfNeeded();
    const box = await element.boundingBox();
    at = { x: box.x + box.width / 2, y: box.y + box.height / 2 };
  } else at = await handle.jsonValue();
  await handle.dispose();
  await page.mouse.move(at.x, at.y);
  await page.waitForSelector('#tip', { state: 'visible' });
  const tip = await page.textContent('#tip');
  await page.mouse.move(1, 1);
  return tip;
}

/* The page's numbers, as it writes them (3 significant digits unless said). */
const fmt = (x, digits = 3) => Number(x.toPrecision(digits)).toString();
const pct = (x) => `${(100 * x).toFixed(1)} %`;

/* Hover: an op of the picture (its pass, stage, microbatch, device, start and end, as the
 * native trace has them), a memory line (its device's peak), and in the plan view a point
 * of the frontier (its family, memory, bubble, makespan, as the native report has them). */
async function hovering(page) {
  await page.check('[name="mode"][value="schedule"]');
  const f = { family: 'zb-h1', p: 4, m: 8, F: 1, B: 2, W: 1, c: 0 };
  await setFields(page, f);
  await shown(page);
  const trace = JSON.parse(cliOut(['render', f.family, ...flags(f), '--trace', '-']));
  const [d, i] = [2, 5];
  const op = trace.traceEvents.filter((e) => e.ph === 'X' && e.pid === d)[i];
  const want = `${op.args.kind} stage ${op.args.stage}, microbatch ${op.args.microbatch}; device ${d}, ${op.ts / 1000} to ${(op.ts + op.dur) / 1000}`;
  const got = await hoverTip(page, ([dev, k]) => document.querySelectorAll('#pictures svg .vp-edge')[dev].children[k].querySelector('rect'), [d, i]);
  check(`hover on op ${i} of device ${d}: its pass, stage, microbatch, device, start and end`, got === want, `"${got}" vs "${want}"`);

  const last = f.p - 1;
  const steps = traceSteps(JSON.stringify(trace))[last];
  const peak = steps.reduce((a, b) => (b[1] > a[1] ? b : a));
  const line = await hoverTip(page, (dev) => {
    const path = document.querySelector(`#memory path.device[data-device="${dev}"]`);
    path.scrollIntoView({ block: 'center' });
    const at = path.getPointAtLength(path.getTotalLength() / 2);
    const { x, y } = new DOMPoint(at.x, at.y).matrixTransform(path.getScreenCTM());
    return { x, y };
  }, last);
  const wantLine = `device ${last}: peak ${fmt(peak[1], 4)} units at ${fmt(peak[0], 6)}`;
  check(`hover on device ${last}'s memory line: its peak and when`, line === wantLine, `"${line}" vs "${wantLine}"`);

  await page.check('[name="mode"][value="plan"]');
  const g = { p: 8, m: 32, F: 1, B: 1, W: 1, c: 0, v: 2 };
  await setFields(page, { ...g, memory: '0.5' });
  await shown(page);
  const report = JSON.parse(cliOut(['plan', ...flags(g), '--memory', '0.5', '--json']));
  const frontier = report.frontier.filter((q) => q.memory > 0);
  for (const k of [0, frontier.length - 1]) {
    const q = frontier[k];
    const name = q.params ? `${q.family} ${q.params}` : q.family;
    const wantPoint = `frontier, ${q.fits ? 'fits' : 'over'} the budget: ${name}: ${fmt(q.memory)} units, bubble ${pct(q.bubble)}, makespan ${fmt(q.makespan, 6)}`;
    const point = await hoverTip(page, (n) => document.querySelectorAll('#frontier circle.fits, #frontier circle.over')[n], k);
    check(`hover on frontier point ${k} (${q.family}): which family, its memory, bubble and makespan`, point === wantPoint, `"${point}" vs "${wantPoint}"`);
  }
  const labels = await page.$$eval('#frontier text.label', (ts) => ts.map((t) => t.textContent));
  check('the frontier labels its points with their families', labels.length > 0 && labels.every((l) => frontier.some((q) => q.family === l)), labels.join(', '));
}

/* The picture fits the page by default (no scrolling), and at full size it scrolls. */
async function fitting(page) {
  await page.check('[name="mode"][value="plan"]');
  await setFields(page, { p: 8, m: 32, memory: '0.5' });
  const box = async () => {
    await shown(page);
    return page.evaluate(() => {
      const pictures = document.querySelector('#pictures');
      const svg = pictures.querySelector('svg');
      return { scroll: pictures.scrollWidth, client: pictures.clientWidth, shown: svg.getBoundingClientRect().width, width: +svg.getAttribute('width'), height: svg.getBoundingClientRect().height, h: +svg.getAttribute('height') };
    });
  };
  const fit = await box();
  check(`the picture (${fit.width} px) fits the page by default: shown ${fit.shown.toFixed(0)} px wide in ${fit.client} px, no scrolling, its shape kept`,
    fit.width > fit.client && fit.shown <= fit.client && fit.scroll <= fit.client && Math.abs(fit.height / fit.shown - fit.h / fit.width) < 0.01, JSON.stringify(fit));
  await page.check('[name="full"]');
  check('the address holds the full-size choice', page.url().includes('full=1'), page.url());
  const full = await box();
  check('full size: the picture at its own width, the box scrolls', full.shown === full.width && full.scroll > full.client, JSON.stringify(full));
  await page.uncheck('[name="full"]');
}

/* Two families on one time scale: each picture is `vpipe render --width W` with the longer
 * makespan at 1600 px and the other at its share; shown, fitted or not, at one scale; their
 * memory over time on shared scales, each equal to its trace. */
async function comparing(page) {
  await page.check('[name="mode"][value="compare"]');
  const f = { p: 6, m: 12, F: 1, B: 2, W: 1, c: 0.25, v: 2 };
  await setFields(page, f);
  await page.selectOption('[name="family"]', 'zb-h1');
  await page.selectOption('[name="family2"]', 'gpipe');
  for (const full of [false, true]) {
    if (full) await page.check('[name="full"]');
    const got = await shown(page);
    const label = `compare zb-h1 and gpipe p=6 m=12${full ? ', full size' : ''}`;
    check(`${label}: shown without error`, got.state === 'done', got.error);
    const makespans = ['zb-h1', 'gpipe'].map((fam) => JSON.parse(cliOut(['simulate', fam, ...flags(f), '--json'])).makespan);
    const widths = makespans.map((ms) => Math.round((1600 * ms) / Math.max(...makespans)));
    ['zb-h1', 'gpipe'].forEach((fam, i) => {
      same(`${label}: ${fam} = vpipe render --width ${widths[i]} --svg`, got.compared[i], cliOut(['render', fam, ...flags(f), '--width', widths[i], '--svg', '-']));
      memoryMatches(`${label}: ${fam}`, got.memory[i], cliOut(['render', fam, ...flags(f), '--trace', '-']));
    });
    const [a, b] = got.pictures;
    check(`${label}: one time scale on the page (${(a.shown / a.width).toFixed(4)} vs ${(b.shown / b.width).toFixed(4)} of each picture's width)`,
      got.pictures.length === 2 && Math.abs(a.shown / a.width - b.shown / b.width) < 0.005 * (a.shown / a.width), JSON.stringify(got.pictures));
    check(`${label}: memory plots on one time and one memory scale`, got.memory.length === 2 && got.memory[0].scale.time === got.memory[1].scale.time && got.memory[0].scale.memory === got.memory[1].scale.memory);
  }
  await page.uncheck('[name="full"]');
  await page.selectOption('[name="family2"]', 'dualpipe'); // odd m: DualPipe refuses, named
  await page.fill('[name="m"]', '13');
  const refused = await shown(page);
  const r = cli(['render', 'dualpipe', ...flags({ ...f, m: 13 }), '--svg', '-']);
  check('compare with a family that cannot be built: its message, once, named', refused.state === 'error' && r.status !== 0 && refused.error === `dualpipe: ${cliMessage(r.err)}`, `${refused.error} vs ${r.err}`);
}

/* The families vpipe lists, in its order. */
function familyNames() {
  return cliOut(['list']).split('\n').filter((l) => /^\S/.test(l)).map((l) => l.split(/\s+/)[0]);
}

/* Prices setup s (model, gpu, GPUs, tensor parallel, sequence, batch, recompute; one data
 * parallel rank and one sequence per microbatch) through the controls and compares every
 * family's report with the native one. Returns the options priced. */
async function priceSetup(page, label, s) {
  await page.check('[name="mode"][value="price"]');
  await page.selectOption('[name="model"]', s.model);
  await page.selectOption('[name="gpu"]', s.gpu);
  await setFields(page, { gpus: s.gpus, tp: s.tp, dp: 1, seq: s.seq, batch: s.batch, mbs: 1 });
  await page.selectOption('[name="recompute"]', s.recompute);
  await settled(page, '#price');
  const options = { p: s.gpus / s.tp, m: s.batch, gpu: s.gpu, seq: s.seq, mbs: 1, tp: s.tp, dp: 1, recompute: s.recompute, flash: true, sp: false, model: s.model };
  await comparePrices(page, label, options, familyNames());
  return options;
}

async function pricing(page) {
  const setup = { model: 'llama2-7b', gpu: 'a100-80gb', gpus: 8, tp: 2, seq: 2048, batch: 16, recompute: 'selective' };
  const options = await priceSetup(page, 'price llama2-7b on 8 x a100-80gb (tp 2)', setup);
  const families = familyNames();
  const again = await open(page.context().browser(), page.url());
  await settled(again, '#price');
  await comparePrices(again, 'price, restored from the address in a new tab', options, families);
  await again.close();

  // a pasted Hugging Face config.json (Llama 3 8B's), priced as the same file natively
  const config = JSON.stringify({ architectures: ['LlamaForCausalLM'], hidden_act: 'silu', hidden_size: 4096, intermediate_size: 14336, max_position_embeddings: 8192, model_type: 'llama', num_attention_heads: 32, num_hidden_layers: 32, num_key_value_heads: 8, rms_norm_eps: 1e-5, tie_word_embeddings: false, torch_dtype: 'bfloat16', vocab_size: 128256 });
  await page.selectOption('[name="model"]', 'config');
  await page.fill('[name="config"]', config);
  await settled(page, '#price');
  const path = join(scratch, 'config.json');
  writeFileSync(path, config);
  await comparePrices(page, 'price a pasted config.json', { ...options, model: path }, families);
  const rows = await page.locator('#price-table tbody tr').count();
  check('pricing: one row per family', rows === families.length, `${rows} rows`);

  // one bad input, one error: malformed JSON, and a config.json the reader refuses
  for (const [what, bad] of [['malformed JSON', config.slice(0, 60)], ['no layer count', JSON.stringify({ hidden_size: 4096, model_type: 'llama' })]]) {
    await page.fill('[name="config"]', bad);
    await settled(page, '#price');
    writeFileSync(path, bad);
    const want = nativePrices({ ...options, model: path }, families);
    const message = want[0].error ? want[0].error.replace(path, '/config.json') : null;
    const shownErrors = await page.$$eval('#price .error:not([hidden]), #price td.refused', (els) => els.filter((e) => e.checkVisibility() && !e.closest('.stale')).map((e) => e.textContent));
    const count = await page.evaluate((m) => [...document.querySelectorAll('#price *')].filter((e) => e.checkVisibility() && !e.closest('.stale') && [...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.includes(m))).length, message);
    check(`a bad config.json (${what}): its error once, the native one (natively refused for all ${families.length} families alike)`,
      message && want.every((w) => w.error === want[0].error) && shownErrors.length === 1 && shownErrors[0] === message && count === 1,
      `${JSON.stringify(shownErrors)} (${count} on the page) vs ${message}`);
  }

  // More options: any other flag of vpipe simulate --model, as its command line takes it
  await page.selectOption('[name="model"]', setup.model);
  await page.fill('[name="more"]', '--grad-bytes 2 --optimizer-dtype bf16-moments');
  await settled(page, '#price');
  await comparePrices(page, 'price with More options --grad-bytes 2 --optimizer-dtype bf16-moments', { ...options, grad_bytes: 2, optimizer_dtype: 'bf16-moments' }, families);
  await page.fill('[name="more"]', '--fp8 tensorwise'); // the A100 has no FP8: every family refused alike
  await settled(page, '#price');
  const want = nativePrices({ ...options, fp8: 'tensorwise' }, families);
  const shown = await page.$$eval('#price .error:not([hidden]), #price td.refused', (els) => els.filter((e) => e.checkVisibility() && !e.closest('.stale')).map((e) => e.textContent));
  check('price with More options --fp8 tensorwise on an A100: the native refusal, once', want.every((w) => w.error && w.error === want[0].error) && shown.length === 1 && shown[0] === want[0].error, `${JSON.stringify(shown)} vs ${JSON.stringify(want[0])}`);
  await page.fill('[name="more"]', 'grad-bytes 2');
  await settled(page, '#price');
  const stray = await page.$$eval('#price .error:not([hidden])', (els) => els.filter((e) => e.checkVisibility()).map((e) => e.textContent));
  check('price with More options "grad-bytes 2": a word that is no flag, said once', stray.length === 1 && stray[0] === "More options: 'grad-bytes' is not a flag (--name or --name value)", JSON.stringify(stray));
  await page.fill('[name="more"]', '');
  await settled(page, '#price');
  await comparePrices(page, 'price with More options emptied', options, families);
}

/* The pricing's bars of Llama 3 70B on 64 H100s, which GPipe's memory does not fit many times
 * over: every family's bars on the accelerator's scale (capacity and a fifth more: the
 * capacity line at one height in every row), each rank's bar as tall as its bytes on that
 * scale, the ranks above it cut (a break mark), the family saying by how much it does not
 * fit; the reports equal the native ones. */
async function priceScales(page) {
  const setup = { model: 'llama3-70b', gpu: 'h100-80gb', gpus: 64, tp: 8, seq: 4096, batch: 256, recompute: 'none' };
  await priceSetup(page, 'price llama3-70b on 64 x h100-80gb (tp 8, batch 256)', setup);
  const families = familyNames();
  const priced = await page.$$eval('#price-table tbody tr:has(svg.bars)', (trs) => trs.map((tr) => ({
    family: tr.dataset.family,
    report: JSON.parse(tr.querySelector('pre').textContent),
    fits: tr.querySelector('td.yes, td.no').textContent,
  })));
  const bars = await barsIn(page, '#price-table');
  const rows = priced.map((r, i) => ({ ...r, ...bars[i] }));
  const bad = [];
  for (const r of rows) {
    bad.push(...barsWrong(r.family, r, r.report.capacity_bytes));
    if (Math.abs(r.capacity - rows[0].capacity) > 1e-6) bad.push(`${r.family}: capacity line at ${r.capacity}, not ${rows[0].capacity}`);
    const room = `${((r.report.capacity_bytes - r.report.memory_max_bytes) / GiB).toFixed(1)} GiB`;
    const fitsText = !r.report.fits ? `does not fit: ${(r.report.memory_max_bytes / GiB).toFixed(1)} GiB`
      : r.report.tight ? `fits, tight: ${room} of room` : 'fits';
    if (r.fits !== fitsText) bad.push(`${r.family}: "${r.fits}", want "${fitsText}"`);
  }
  const cut = rows.filter((r) => r.ranks.some((k) => k.cut)).map((r) => r.family);
  const fitting = rows.filter((r) => r.report.fits);
  check(`pricing scales: every family's bars on the accelerator's scale, ${cut.join(', ')} cut, ${fitting.length} fitting families drawn to scale`,
    rows.length === families.length && cut.length > 0 && fitting.length > 0 && !bad.length, bad.slice(0, 8).join('\n     '));
  const tallest = Math.min(...fitting.map((r) => Math.max(...r.ranks.map((k) => k.drawn)) / r.height));
  console.log(`     the fitting families' tallest bars take ${(100 * tallest).toFixed(0)}% or more of their height; ${cut.join(', ')} up to ${(Math.max(...rows.map((r) => r.report.memory_max_bytes)) / GiB).toFixed(0)} GiB`);
}

/* The memory bars (svg.bars) under selector, in order: each one's scale (bytes at its top),
 * height, capacity line (y) and ranks (bytes, drawn height, cut or not). */
function barsIn(page, selector) {
  return page.$$eval(`${selector} svg.bars`, (svgs) => svgs.map((svg) => ({
    top: +svg.dataset.top,
    height: +svg.getAttribute('height'),
    capacity: +svg.querySelector('.capacity').getAttribute('y1'),
    ranks: [...svg.querySelectorAll('g[data-bytes]')].map((g) => ({
      bytes: +g.dataset.bytes,
      drawn: [...g.querySelectorAll('rect')].reduce((h, r) => h + +r.getAttribute('height'), 0),
      cut: !!g.querySelector('.break'),
    })),
  })));
}

/* What is wrong with bars b (barsIn's) for an accelerator of capacity bytes: the scale is
 * it and a fifth more, the capacity line where it belongs, each rank as tall as its bytes
 * on that scale, a rank above it cut. */
function barsWrong(label, b, capacity) {
  const top = capacity * 1.2;
  const bad = [];
  if (Math.abs(b.top - top) > 1) bad.push(`${label}: scale ${b.top} bytes, not 1.2 x capacity`);
  if (Math.abs(b.capacity - b.height * (1 - 1 / 1.2)) > 1e-6) bad.push(`${label}: capacity line at ${b.capacity} of ${b.height} px`);
  b.ranks.forEach((k, i) => {
    const want = (Math.min(k.bytes, top) / top) * b.height;
    if (Math.abs(k.drawn - want) > 0.01) bad.push(`${label} rank ${i}: ${k.drawn.toFixed(2)} px, want ${want.toFixed(2)}`);
    if (k.cut !== k.bytes > top) bad.push(`${label} rank ${i}: cut ${k.cut} at ${(k.bytes / GiB).toFixed(1)} GiB`);
  });
  return bad;
}

async function comparePrices(page, label, options, families) {
  const want = nativePrices(options, families);
  const got = await page.evaluate(() => [...document.querySelectorAll('#price-table tbody tr')].map((tr) => {
    const pre = tr.querySelector('pre');
    return pre ? pre.textContent : { error: tr.querySelector('td.refused').textContent };
  }));
  const priced = want.filter((w) => typeof w === 'string').length;
  check(`${label}: some families priced`, priced > 0, JSON.stringify(want).slice(0, 300));
  families.forEach((family, i) => {
    if (typeof want[i] === 'string') same(`${label}: ${family} report = native vpipe simulate --json`, got[i], want[i]);
    else check(`${label}: ${family} refused with the native message`, got[i] && got[i].error === want[i].error.replace(options.model, '/config.json'), `${JSON.stringify(got[i])} vs ${want[i].error}`);
  });
}

/* ---- the cluster view ---------------------------------------------------------------- */

/* The README's and bench_hybrid's 70B plan, as the command line's flags. */
const PLAN_70B = ['--model', 'llama3-70b', '--gpu', 'h100-80gb', '--gpus', '64', '--seq', '8192', '--global-batch', '512', '--flash', '--sp', '--zero'];
const DOWNLOADS = ['toml', 'titan-csv', 'winner', 'megatron', 'report', 'report-json'];

/* A report with the search's wall-clock seconds masked, as tests/test_cli_parity.c does. */
function masked(text) {
  return text && text.replace(/( refused; )[^ ,\n]*/g, '$1X').replace(/("elapsed_s": )[^ ,\n]*/g, '$1X');
}

/* The search's own seconds in a text report. */
function searchSeconds(text) {
  return +(/ refused; ([\d.]+) s\n/.exec(text) || [])[1];
}

/* What the cluster view shows once it has answered: its texts, the files behind its
 * links, the best-per-family rows and its timings (ms after the click). */
async function clusterShown(page) {
  await settled(page, '#cluster');
  return page.evaluate(async (links) => {
    const $ = (s) => document.querySelector(s);
    const error = $('#cluster-error');
    const file = async (a) => (a.href.startsWith('blob:') ? { name: a.download, text: await (await fetch(a.href)).text() } : null);
    return {
      state: $('#cluster').dataset.state,
      error: error.hidden ? null : error.textContent,
      errors: [...document.querySelectorAll('#cluster .error')].filter((e) => e.checkVisibility()).length,
      title: $('#cluster-title').textContent,
      why: $('#cluster-why').textContent,
      command: $('#cluster-command code')?.textContent,
      text: $('#cluster-text').textContent,
      json: $('#cluster-json').textContent,
      files: Object.fromEntries(await Promise.all(links.map(async (k) => [k, await file($(`#dl-${k}`))]))),
      rows: [...document.querySelectorAll('#cluster-table tbody tr')].map((tr) => ({ group: tr.dataset.family, winner: tr.classList.contains('winner'), cells: [...tr.querySelectorAll('td')].map((td) => td.textContent) })),
      stale: [...document.querySelectorAll('#cluster .stale')].length,
      from: $('#cluster').dataset.from,
      timing: { first: +$('#cluster').dataset.firstMs, all: +$('#cluster').dataset.allMs, search: $('#cluster').dataset.searchMs },
    };
  }, DOWNLOADS);
}

/* Sets the cluster view's fields: model, accelerator, GPUs, sequence, global batch, the
 * three switches and the fixed degrees (empty: searched), as a visitor does. */
async function clusterSetup(page, s) {
  await page.check('[name="mode"][value="cluster"]');
  await page.selectOption('[name="model"]', s.model);
  await page.selectOption('[name="gpu"]', s.gpu);
  await setFields(page, { gpus: s.gpus, seq: s.seq, batch: s.batch, fix_tp: '', fix_pp: '', fix_dp: '', fix_mbs: '' });
  for (const name of ['flash', 'sp', 'zero1']) await page.setChecked(`[name="${name}"]`, true);
}

/* The cluster view for Llama-3-70B on 64 H100s (the README's plan): the report equals
 * `vpipe plan --model` (text and --json, the search's seconds masked), the winner's bars its
 * bytes per rank on the accelerator's scale, the table and the why line the JSON's, the
 * downloads the command line's --emit torchtitan, --emit megatron, -o and reports; the
 * address restores it; one bad input gives one error, the command line's. */
async function clusterView(page) {
  await clusterSetup(page, { model: 'llama3-70b', gpu: 'h100-80gb', gpus: 64, seq: 8192, batch: 512 });
  const got = await clusterShown(page);
  const label = 'cluster llama3-70b on 64 x h100-80gb';
  check(`${label}: shown without error`, got.state === 'done' && got.stale === 0, got.error);
  check(`${label}: the command line it names is the plan's`, got.command === `vpipe plan ${PLAN_70B.join(' ')}`, got.command);
  const text = cliOut(['plan', ...PLAN_70B]);
  same(`${label}: report = vpipe plan --model (the search's seconds masked)`, masked(got.text), masked(text));
  const json = cliOut(['plan', ...PLAN_70B, '--json', '--emit', 'torchtitan', 'titan', '-o', 'winner.json'], undefined, scratch);
  same(`${label}: JSON report = vpipe plan --model --json (seconds masked)`, masked(got.json), masked(json));
  const report = JSON.parse(json);
  check(`${label}: the why line is the report's reason`, got.why === `Why: ${report.reason}` && got.title.endsWith(`${report.best.family} wins`), `${got.why} | ${got.title}`);

  const groups = Object.keys(report.best_per_family);
  const badRows = groups.map((g, i) => {
    const c = report.best_per_family[g];
    const row = got.rows[i];
    const largest = `${(c.memory_max_bytes / GiB).toFixed(2)}${c.tight ? ' (tight)' : ''}`;
    // the cells the JSON gives as they are shown (null: slower, MFU and bubble, not checked)
    const want = [c.dp, c.tp, c.pp, c.mbs, c.m, c.recompute, c.step_time_s.toFixed(2), null, null, null, largest];
    return row && row.group === g && want.every((v, k) => v === null || row.cells[k] === String(v)) && row.winner === (i === 0) ? null : `${g}: ${JSON.stringify(row)}`;
  }).filter(Boolean);
  check(`${label}: the table has the best of each of the ${groups.length} families, in the report's order, the winner marked`, got.rows.length === groups.length && !badRows.length, badRows.slice(0, 3).join('\n     '));

  const capacity = JSON.parse(cliOut(['model', 'list', '--json'])).gpus.find((g) => g.name === 'h100-80gb').memory_gib * GiB;
  const [bars] = await barsIn(page, '#cluster-bars');
  const ranks = report.best.memory_per_rank;
  const bad = bars ? barsWrong('winner', bars, capacity) : ['no bars'];
  check(`${label}: the winner's ${ranks.length} bars are its bytes per rank, on the accelerator's scale (${capacity / GiB} GiB and a fifth)`,
    bars && bars.ranks.length === ranks.length && ranks.every((r, i) => bars.ranks[i].bytes === r.total) && !bad.length, bad.join('\n     '));

  const files = got.files;
  same(`${label}: job.toml = --emit torchtitan titan`, files.toml?.text ?? null, readFileSync(join(scratch, 'titan', 'job.toml'), 'utf8'));
  same(`${label}: schedule.csv = --emit torchtitan titan`, files['titan-csv']?.text ?? null, readFileSync(join(scratch, 'titan', 'schedule.csv'), 'utf8'));
  same(`${label}: the winner's schedule = plan -o`, files.winner?.text ?? null, readFileSync(join(scratch, 'winner.json'), 'utf8'));
  same(`${label}: Megatron-LM flags = --emit megatron`, files.megatron?.text ?? null, cliOut(['plan', ...PLAN_70B, '--emit', 'megatron']));
  same(`${label}: report download = the report`, files.report?.text ?? null, got.text);
  same(`${label}: JSON report download = the JSON report`, files['report-json']?.text ?? null, got.json);
  check(`${label}: the downloads are named`, files.toml?.name === 'job.toml' && files['titan-csv']?.name === 'schedule.csv' && DOWNLOADS.every((k) => files[k]?.name), JSON.stringify(Object.values(files).map((f) => f?.name)));

  const secs = (ms) => `${(ms / 1000).toFixed(1)} s`;
  const searches = got.timing.search.split(' ').map((ms) => secs(+ms)).join(', ');
  bench.push(`cluster view, plan ${PLAN_70B.slice(0, 10).join(' ')}: the report shown ${secs(got.timing.first)} after the click, the whole answer (its text and Megatron-LM's flags, two more searches) ${secs(got.timing.all)} (target 10 s); the page's three searches ${searches} in its workers (the last two at once); natively one search ${searchSeconds(text).toFixed(2)} s (one thread)`);

  // the address holds the view: a new tab on it plans the same, by the same command line
  const again = await open(page.context().browser(), page.url());
  await again.waitForFunction(() => document.querySelector('#cluster-command code'), null, { timeout: 0 });
  check('cluster: the address restores the view (the same command line in a new tab)', (await again.textContent('#cluster-command code')) === got.command && (await again.isChecked('[name="mode"][value="cluster"]')), page.url());
  await again.close();

  // one bad input, one error: TP 3 does not divide the heads
  await page.fill('[name="fix_tp"]', '3');
  const refused = await clusterShown(page);
  const r = cli(['plan', ...PLAN_70B, '--tp', '3']);
  check('cluster with TP 3: the command line\'s message, once, the rest marked stale', refused.state === 'error' && r.status !== 0 && refused.error === cliMessage(r.err) && refused.errors === 1 && refused.stale >= 4, `${refused.error} vs ${r.err.trim()} (${refused.errors} errors)`);
  await page.fill('[name="fix_tp"]', '');
  const back = await clusterShown(page);
  check('cluster: back to the searched TP, the last answer shown again from memory, not searched again', back.state === 'done' && back.from === 'memory' && back.text === got.text && back.json === got.json, `${back.state}, from ${back.from}`);

  // More options: any other flag of vpipe plan, as its command line takes it
  const moreFlags = ['--fp8', 'auto', '--grad-bytes', '2'];
  await page.fill('[name="more"]', moreFlags.join(' '));
  const more = await clusterShown(page);
  check('cluster with More options --fp8 auto --grad-bytes 2: shown, and the command line it names carries them', more.state === 'done' && more.command === `vpipe plan ${[...PLAN_70B, ...moreFlags].join(' ')}`, more.command);
  same('cluster with More options: report = vpipe plan with those flags (seconds masked)', masked(more.text), masked(cliOut(['plan', ...PLAN_70B, ...moreFlags])));
  await page.fill('[name="more"]', '--cp 3');
  const badMore = await clusterShown(page);
  const rm = cli(['plan', ...PLAN_70B, '--cp', '3']);
  check('cluster with More options --cp 3: the command line\'s message, once', badMore.state === 'error' && rm.status !== 0 && badMore.error === cliMessage(rm.err) && badMore.errors === 1, `${badMore.error} vs ${rm.err.trim()}`);
  await page.fill('[name="more"]', 'fp8 auto');
  const stray = await clusterShown(page);
  check('cluster with More options "fp8 auto": a word that is no flag, said once', stray.state === 'error' && stray.error === "More options: 'fp8' is not a flag (--name or --name value)" && stray.errors === 1, stray.error);
  await page.fill('[name="more"]', '');
  const plain = await clusterShown(page);
  check('cluster: More options emptied, the first answer again', plain.state === 'done' && masked(plain.text) === masked(got.text), plain.state);

  // FlashAttention's box unchecked: the command line writes --flash 0 (on unless given) and
  // answers the same as the page
  await page.setChecked('[name="flash"]', false);
  const noFlash = await clusterShown(page);
  const noFlashArgs = PLAN_70B.flatMap((a) => (a === '--flash' ? ['--flash', '0'] : [a]));
  check('cluster without FlashAttention: the command line it names says --flash 0', noFlash.state === 'done' && noFlash.command === `vpipe plan ${noFlashArgs.join(' ')}`, noFlash.command);
  same('cluster without FlashAttention: report = vpipe plan --flash 0 (seconds masked)', masked(noFlash.text), masked(cliOut(['plan', ...noFlashArgs])));
  await page.setChecked('[name="flash"]', true);
  check('cluster: FlashAttention checked again, the first answer again', masked((await clusterShown(page)).text) === masked(got.text));

  // a pasted config.json the reader refuses: its message (the door spells the option as
  // its JSON key, the command line as its flag), once
  const config = '{"hidden_size": 8192, "num_hidden_layers": 80';
  await page.selectOption('[name="model"]', 'config');
  await page.fill('[name="config"]', config);
  const badShown = await clusterShown(page);
  const path = join(scratch, 'config.json');
  writeFileSync(path, config);
  const native = cli(['plan', ...PLAN_70B.slice(2), '--model', path]);
  const want = native.status === 0 ? null : cliMessage(native.err).replace(`--model ${path}`, "option 'model' /config.json");
  check('cluster with a malformed config.json: the reader\'s message, once', want && badShown.state === 'error' && badShown.error === want && badShown.errors === 1, `${badShown.error} vs ${want}`);
  await page.selectOption('[name="model"]', 'llama3-70b');
  check('cluster: back to the preset, its answer from memory', (await clusterShown(page)).from === 'memory');
}

/* The page while a search runs: with the cluster's workers held back (their WebAssembly
 * not yet arrived), the view says it is searching, and the other views still answer. */
async function clusterBusy(browser, base) {
  const page = await browser.newPage();
  page.on('pageerror', (e) => consoleErrors.push(`cluster busy: ${e.message}`));
  let release;
  const held = new Promise((ok) => (release = ok));
  let asked;
  const clusterAsked = new Promise((ok) => (asked = ok));
  let loads = 0;
  await page.route('**/vpipe.wasm', async (route) => {
    if (++loads > 1) { // the views' worker loads first; the cluster's lanes wait
      asked();
      await held;
    }
    await route.continue().catch(() => {}); // a lane ended meanwhile: nothing to continue
  });
  await page.goto(`${base}/#mode=cluster`);
  await clusterAsked;
  const busy = await page.evaluate(() => ({
    state: document.querySelector('#cluster').dataset.state,
    spinner: document.querySelector('#cluster-progress .spinner')?.checkVisibility() ?? false,
    text: document.querySelector('#cluster-progress').textContent,
  }));
  check(`while the cluster searches: a spinner and "${busy.text}"`, busy.state === 'busy' && busy.spinner && busy.text.startsWith('Searching every configuration'), JSON.stringify(busy));
  await page.check('[name="mode"][value="schedule"]');
  await settled(page);
  const pictures = await page.locator('#pictures svg').count();
  check('while a search waits, the schedule view answers (its own worker)', pictures === 1, `${pictures} pictures`);
  await page.check('[name="mode"][value="cluster"]');
  release();
  const got = await clusterShown(page);
  check('the search left and asked again answers', got.state === 'done' && got.command.startsWith('vpipe plan --model llama3-8b'), got.error ?? got.command);
  await page.close();
}

async function accessibility(browser, url) {
  const page = await open(browser, url, { width: 375, height: 800 });
  await settled(page);
  const unlabelled = await page.evaluate(() => [...document.querySelectorAll('input, select, textarea')].filter((e) => !e.labels.length && !e.getAttribute('aria-label')).map((e) => e.name));
  check('every control has a label', unlabelled.length === 0, unlabelled.join(', '));
  for (const mode of ['schedule', 'plan', 'compare', 'load', 'price', 'cluster']) {
    await page.check(`[name="mode"][value="${mode}"]`);
    await settled(page, { price: '#price', cluster: '#cluster' }[mode] ?? '#view');
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    check(`phone width (375 px), ${mode}: nothing wider than the screen`, width <= 375, `${width} px`);
  }
  await page.close();
}

/* Nothing but the status line shows until the library is ready: with the WebAssembly held
 * back, no control and no section is visible; once it arrives, the page is. */
async function loading(browser, url) {
  const page = await browser.newPage();
  page.on('pageerror', (e) => consoleErrors.push(`${url} (loading): ${e.message}`));
  let release;
  const held = new Promise((ok) => (release = ok));
  const asked = new Promise((ok) => page.route('**/vpipe.wasm', async (route) => {
    ok();
    await held;
    await route.continue();
  }));
  await page.goto(url);
  await asked;
  const visible = () => page.evaluate(() => [...document.querySelectorAll('main, input, select, textarea, section, fieldset')].filter((e) => e.checkVisibility()).length);
  const status = await page.textContent('#status');
  const before = await visible();
  check(`while the library loads, only the status shows ("${status}")`, before === 0 && status.startsWith('Loading'), `${before} controls or sections visible`);
  release();
  await settled(page);
  const after = await visible();
  check('once it is ready, the controls and the view show', after > 10, `${after} visible`);
  await page.close();
}

/* Light or dark (prefers-color-scheme): the page's background and the picture's follow. */
async function colours(page) {
  return page.evaluate(() => {
    const lum = (css) => {
      const [r, g, b] = css.match(/\d+(\.\d+)?/g).map(Number);
      return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
    };
    const bg = document.querySelector('#pictures svg .vp-bg');
    return { page: lum(getComputedStyle(document.documentElement).backgroundColor), text: lum(getComputedStyle(document.body).color), picture: lum(getComputedStyle(bg).fill) };
  });
}

/* The README's pictures, light and dark: the planner's view of p=8, m=32 under half of
 * 1F1B's memory, an op's hover text showing; both schemes read (background vs text). */
async function screenshots(browser, url) {
  for (const scheme of ['light', 'dark']) {
    const page = await browser.newPage({ viewport: { width: 1280, height: 1100 }, colorScheme: scheme });
    page.on('pageerror', (e) => consoleErrors.push(`${url} (${scheme}): ${e.message}`));
    await page.goto(url);
    await settled(page);
    const c = await colours(page);
    const dark = scheme === 'dark';
    check(`${scheme} scheme: page and picture backgrounds ${dark ? 'dark' : 'light'}, text contrasting`,
      dark ? c.page < 0.15 && c.picture < 0.15 && c.text > 0.7 : c.page > 0.9 && c.picture > 0.9 && c.text < 0.3, JSON.stringify(c));
    const op = await page.evaluateHandle(() => document.querySelectorAll('#pictures svg .vp-edge')[3].children[40].querySelector('rect'));
    const box = await op.asElement().boundingBox();
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.waitForSelector('#tip', { state: 'visible' });
    const file = join(buildWeb, dark ? 'playground-dark.png' : 'playground.png');
    await page.screenshot({ path: file });
    console.log(`screenshot: ${file}`);
    await page.close();
  }
}

function sizes() {
  let total = 0;
  const parts = readdirSync(site).sort().map((name) => {
    const n = gzipSync(readFileSync(join(site, name)), { level: 9 }).length;
    total += n;
    return `${name} ${(n / 1024).toFixed(1)}`;
  });
  console.log(`size: served page ${(total / 1024).toFixed(1)} KB gzipped (${parts.join(', ')})`);
  const single = readFileSync(join(buildWeb, 'vpipe-playground.html'));
  console.log(`size: single file ${(single.length / 1024).toFixed(1)} KB, ${(gzipSync(single, { level: 9 }).length / 1024).toFixed(1)} KB gzipped`);
  check('the served page is under 400 KB gzipped', total < SIZE_LIMIT, `${total} bytes`);
}

/* The README's two commands: build into a folder, open the single file in it. */
function readmeCommands() {
  const readme = readFileSync(join(source, 'README.md'), 'utf8');
  const block = /## Playground[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme);
  const lines = block ? block[1].split('\n').map((l) => l.replace(/\s+#.*$/, '').trim()).filter(Boolean) : [];
  const build = /^web\/build\.sh (\S+)$/.exec(lines[0] || '');
  const openCmd = /^chromium (\S+)$/.exec(lines[1] || '');
  check('README: "## Playground" holds two commands, web/build.sh DIR and chromium FILE', lines.length === 2 && build && openCmd, lines.join(' | '));
  const file = openCmd ? resolve(source, openCmd[1]) : '';
  const ok = build && file === join(resolve(source, build[1]), 'vpipe-playground.html');
  check('README: the file it opens is the single file its build command makes', ok, file);
  check('README: that is the file this test opens', ok && realpathSync(file) === realpathSync(join(buildWeb, 'vpipe-playground.html')), `${file} vs ${buildWeb}`);
  return file;
}

async function singleFile(browser, file) {
  const base = `file://${file}`;
  const page = await open(browser, base);
  bench.push(`first picture, single file from disk: ${(await firstPictureMs(page)).toFixed(0)} ms after navigation (target 1000 ms)`);
  await expectFamily(page, 'single file', { family: 'v-half', p: 4, m: 8, F: 1, B: 1, W: 1, c: 0 });
  await page.goto(`${base}#mode=plan&p=8&m=32`);
  await page.reload(); // a new document on the address: the plan view it names
  await expectPlan(page, 'single file, from the address', { p: 8, m: 32, F: 1, B: 1, W: 1, c: 0 }, '0.5');
  // the cluster view's workers start from the embedded source too: its defaults planned
  await page.goto(`${base}#mode=cluster`);
  await page.reload();
  const got = await clusterShown(page);
  const args = (got.command || '').split(' ').slice(2);
  check(`single file: the cluster view plans (${got.command})`, got.state === 'done' && args[1] === 'llama3-8b' && masked(got.text) === masked(cliOut(['plan', ...args])), got.error ?? got.command);
  await page.close();
}

async function main() {
  const { server, base } = await serve(site);
  const browser = await launch();
  try {
    await loading(browser, `${base}/`);
    const page = await servedPage(browser, base);
    await planner(page);
    await hovering(page);
    await fitting(page);
    await comparing(page);
    await loader(page);
    await pricing(page);
    await priceScales(page);
    await clusterView(page);
    await page.close();
    await clusterBusy(browser, base);
    await accessibility(browser, `${base}/#mode=plan&p=8&m=32`);
    await screenshots(browser, `${base}/#mode=plan&p=8&m=32`);
    await singleFile(browser, readmeCommands());
  } finally {
    await browser.close();
    server.close();
    rmSync(scratch, { recursive: true, force: true });
  }
  check('no console errors', consoleErrors.length === 0, consoleErrors.join('\n     '));
  sizes();
  for (const line of bench) console.log(`benchmark: ${line}`);
}

main()
  .catch((e) => check('the test ran to its end', false, e.stack))
  .finally(() => {
    console.log(`${passed} passed, ${failed} failed`);
    process.exitCode = failed ? 1 : 0;
  });
