// The playground's browser test (ctest label "browser"): Debian's headless Chromium, driven
// by playwright-core, loads the page built by web/build.sh from a loopback HTTP server and
// the single file from disk, works its controls as a visitor would, and checks that every
// picture and report it shows is byte for byte what the native build answers for the same
// request: the vpipe command line (render --svg, simulate --json, schedule --format,
// plan --json, validate's message), and for pricing, which the command line does not
// offer yet, the native library's vp_request_price through the Python package. Also: the
// view survives in the address, labels on every control, no overflow at phone width, no
// console errors, and the served files' gzipped size (asserted: under 400 KB). Timings
// (first picture, the warm planner) are printed as a benchmark, never asserted. Writes a
// screenshot beside the page.
// Usage: node web/test.mjs BUILD_WEB VPIPE_CLI LIBVPIPE_SO SOURCE_DIR
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';

const [buildWeb, vpipe, libvpipe, source] = process.argv.slice(2).map((p) => resolve(p));
const site = join(buildWeb, 'site');
const scratch = mkdtempSync(join(tmpdir(), 'vpipe-web-'));
const SIZE_LIMIT = 400 * 1024;
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

function cli(args, input) {
  const r = spawnSync(vpipe, args, { input, encoding: 'utf8', maxBuffer: 1 << 28 });
  return { status: r.status, out: r.stdout, err: r.stderr };
}

function cliOut(args, input) {
  const r = cli(args, input);
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

/* The native vp_request_price reports (text) for options with each family. */
function nativePrices(options, families) {
  const program = `
import ctypes, json, sys
from vpipe import _lib
options, families = json.loads(sys.argv[1]), json.loads(sys.argv[2])
reports = []
for family in families:
    report = ctypes.c_void_p()
    text = json.dumps(dict(options, family=family)).encode()
    try:
        _lib.check(lambda err: _lib.lib().vp_request_price(None, text, ctypes.byref(report), None, err))
        reports.append(_lib.take_text(report))
    except _lib.Error as e:
        reports.append({"error": e.message})
print(json.dumps(reports))`;
  const env = { ...process.env, VPIPE_LIBRARY: libvpipe, PYTHONPATH: join(source, 'python') };
  const r = spawnSync('python3', ['-c', program, JSON.stringify(options), JSON.stringify(families)], { env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`python: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

/* ---- the page ---------------------------------------------------------------------- */

const TYPES = { html: 'text/html', js: 'text/javascript', css: 'text/css', wasm: 'application/wasm' };

function serve(dir) {
  const server = http.createServer((req, res) => {
    const name = new URL(req.url, 'http://localhost').pathname.slice(1) || 'index.html';
    if (!readdirSync(dir).includes(name)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[name.split('.').pop()] }).end(readFileSync(join(dir, name)));
  });
  return new Promise((ok) => server.listen(0, '127.0.0.1', () => ok(server)));
}

const consoleErrors = [];

async function open(browser, url, viewport = { width: 1280, height: 900 }) {
  const page = await browser.newPage({ viewport });
  page.on('console', (m) => m.type() === 'error' && consoleErrors.push(`${url}: ${m.text()}`));
  page.on('pageerror', (e) => consoleErrors.push(`${url}: ${e.message}`));
  // A picture replaced while it loads has its read aborted by the browser, by design; any
  // other failed request (a revoked or missing address, a file not served) is an error.
  page.on('requestfailed', (r) => {
    const why = r.failure()?.errorText ?? '';
    if (!(r.url().startsWith('blob:') && why === 'net::ERR_ABORTED'))
      consoleErrors.push(`${url}: request failed ${r.url()} (${why})`);
  });
  await page.goto(url);
  return page;
}

/* Waits until section (#view or #price) shows the answer to its latest request. */
async function settled(page, section = '#view') {
  await page.waitForFunction((s) => {
    const el = document.querySelector(s);
    return el.dataset.state !== 'busy' && el.dataset.seq && el.dataset.done === el.dataset.seq;
  }, section);
}

/* What the schedule view shows: its texts and the files behind its picture and links. */
async function shown(page) {
  await settled(page);
  return page.evaluate(async () => {
    const text = (s) => document.querySelector(s).textContent;
    const fetchText = async (url) => (url && url.startsWith('blob:') ? (await fetch(url)).text() : null);
    const error = document.querySelector('#view-error');
    return {
      state: document.querySelector('#view').dataset.state,
      error: error.hidden ? null : error.textContent,
      sim: text('#sim-json'),
      plan: text('#plan-json'),
      svg: await fetchText(document.querySelector('#picture').src),
      json: await fetchText(document.querySelector('#dl-json').getAttribute('href')),
      csv: await fetchText(document.querySelector('#dl-csv').getAttribute('href')),
      csvNote: text('#csv-notes'),
      planMs: document.querySelector('#view').dataset.planMs,
      frontierDots: document.querySelectorAll('#frontier circle').length,
    };
  });
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
  same(`${label}: SVG = vpipe render --svg`, got.svg, cliOut(['render', f.family, ...flags(f), '--svg', '-']));
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
  const families = cliOut(['list']).split('\n').filter((l) => /^\S/.test(l)).map((l) => l.split(/\s+/)[0]);
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

async function pricing(page) {
  await page.check('[name="mode"][value="price"]');
  await page.selectOption('[name="model"]', 'llama2-7b');
  await page.selectOption('[name="gpu"]', 'a100-80gb');
  await setFields(page, { gpus: 8, tp: 2, dp: 1, seq: 2048, batch: 16, mbs: 1 });
  await page.selectOption('[name="recompute"]', 'selective');
  await settled(page, '#price');
  const families = cliOut(['list']).split('\n').filter((l) => /^\S/.test(l)).map((l) => l.split(/\s+/)[0]);
  const options = { p: 4, m: 16, gpu: 'a100-80gb', seq: 2048, mbs: 1, tp: 2, dp: 1, recompute: 'selective', flash: true, zero1: false, sp: false, model: 'llama2-7b' };
  await comparePrices(page, 'price llama2-7b on 8 x a100-80gb (tp 2)', options, families);
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
}

async function comparePrices(page, label, options, families) {
  const want = nativePrices(options, families);
  const got = await page.evaluate(() => [...document.querySelectorAll('#price-table tbody tr')].map((tr) => {
    const pre = tr.querySelector('pre');
    return pre ? pre.textContent : { error: tr.querySelector('td.error').textContent };
  }));
  const priced = want.filter((w) => typeof w === 'string').length;
  check(`${label}: some families priced`, priced > 0, JSON.stringify(want).slice(0, 300));
  families.forEach((family, i) => {
    if (typeof want[i] === 'string') same(`${label}: ${family} report = native vp_request_price`, got[i], want[i]);
    else check(`${label}: ${family} refused with the native message`, got[i] && got[i].error === want[i].error.replace(options.model, '/config.json'), `${JSON.stringify(got[i])} vs ${want[i].error}`);
  });
}

async function accessibility(browser, url) {
  const page = await open(browser, url, { width: 375, height: 800 });
  await settled(page);
  const unlabelled = await page.evaluate(() => [...document.querySelectorAll('input, select, textarea')].filter((e) => !e.labels.length && !e.getAttribute('aria-label')).map((e) => e.name));
  check('every control has a label', unlabelled.length === 0, unlabelled.join(', '));
  for (const mode of ['schedule', 'plan', 'load', 'price']) {
    await page.check(`[name="mode"][value="${mode}"]`);
    await settled(page, mode === 'price' ? '#price' : '#view');
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    check(`phone width (375 px), ${mode}: nothing wider than the screen`, width <= 375, `${width} px`);
  }
  await page.close();
}

/* The README's picture: the planner's view of p=8, m=32 under half of 1F1B's memory. */
async function screenshot(browser, url) {
  const page = await open(browser, url, { width: 1280, height: 1100 });
  await settled(page);
  await page.screenshot({ path: join(buildWeb, 'playground.png') });
  console.log(`screenshot: ${join(buildWeb, 'playground.png')}`);
  await page.close();
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
  await page.close();
}

async function main() {
  const { chromium } = await import('playwright-core').catch(() => {
    throw new Error('playwright-core is missing: run `npm ci` in web/ (scripts/install-deps does)');
  });
  const server = await serve(site);
  const base = `http://127.0.0.1:${server.address().port}`;
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = await servedPage(browser, base);
    await planner(page);
    await loader(page);
    await pricing(page);
    await page.close();
    await accessibility(browser, `${base}/#mode=plan&p=8&m=32`);
    await screenshot(browser, `${base}/#mode=plan&p=8&m=32`);
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
