// The whole-configuration plan of Llama-3-70B on 64 H100s (the README's plan, bench_hybrid's
// first grid) in the browser page that web/build.sh built, in Debian's headless Chromium,
// beside the same search natively:
//   view    the cluster view asked through its address: from the request to the report shown
//           (its first search: the JSON report with the exports) and to the whole answer (two
//           more searches, at once in two workers: the text report, Megatron-LM's flags)
//   search  one search alone in a Web Worker of the page against `vpipe plan` natively (one
//           thread), each by the library's own clock (the text report's seconds)
// usage: node bench/bench_page.mjs BUILD_WEB VPIPE [repeats]   (default 3; medians, each
// repeat in a fresh tab)
// Output: the machine line, then "page <grid> <view: report s> <view: whole s> <search in the
// page s> <search native s> <page / native>", tab-separated.
import { spawnSync } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { launch, serve, settled } from '../web/harness.mjs';

const [buildWeb, vpipe, repeatsArg] = process.argv.slice(2);
if (!buildWeb || !vpipe) {
  console.error('usage: node bench/bench_page.mjs BUILD_WEB VPIPE [repeats]');
  process.exit(2);
}
const repeats = Number(repeatsArg ?? 3);
const GRID = 'llama3-70b/64xh100/8k/512';
const ARGS = ['--model', 'llama3-70b', '--gpu', 'h100-80gb', '--gpus', '64', '--seq', '8192', '--global-batch', '512', '--flash', '--sp', '--zero'];
const OPTIONS = { model: 'llama3-70b', gpu: 'h100-80gb', gpus: 64, seq: 8192, global_batch: 512, flash: true, sp: true, zero: true };
const HASH = '#mode=cluster&model=llama3-70b&gpu=h100-80gb&gpus=64&seq=8192&batch=512&flash=1&sp=1&zero1=1';

/* The search's own seconds in a text report ("...refused; 2.13 s"). */
function searchSeconds(text) {
  const m = / refused; ([\d.]+) s\n/.exec(text);
  if (!m) throw new Error(`no search time in: ${text.slice(0, 300)}`);
  return +m[1];
}

function native() {
  const r = spawnSync(resolve(vpipe), ['plan', ...ARGS], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`vpipe plan: ${r.stderr}`);
  return searchSeconds(r.stdout);
}

/* One search in a worker of the page (the protocol of web/worker.js). */
async function pageSearch(browser, base) {
  const page = await browser.newPage();
  await page.goto(`${base}/`);
  await settled(page); // the page's own first view, out of the way
  const reply = await page.evaluate((options) => new Promise((done) => {
    const worker = new Worker('worker.js');
    worker.onmessage = (e) => done(e.data);
    worker.postMessage({ id: 1, channel: 'bench', op: 'cluster', args: { options: JSON.stringify(options), what: 'text' } });
  }), OPTIONS);
  await page.close();
  if (!reply.ok) throw new Error(`the page's search: ${reply.error.message}`);
  return searchSeconds(reply.result.stdout);
}

/* The cluster view asked through its address: seconds to the report and to the whole answer. */
async function view(browser, base) {
  const page = await browser.newPage();
  await page.goto(`${base}/${HASH}`);
  await settled(page, '#cluster');
  const got = await page.evaluate(() => ({ ...document.querySelector('#cluster').dataset, error: document.querySelector('#cluster-error').textContent }));
  await page.close();
  if (got.state !== 'done') throw new Error(`the cluster view: ${got.error}`);
  return [got.firstMs / 1000, got.allMs / 1000];
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  const { server, base } = await serve(join(resolve(buildWeb), 'site'));
  const browser = await launch();
  try {
    const load = loadavg().map((x) => x.toFixed(2)).join(' ');
    console.log(`machine: ${cpus()[0].model} | ${cpus().length} online processors | Chromium ${browser.version()} | load average ${load}`);
    const runs = [];
    for (let i = 0; i < repeats; i++) {
      const nat = native();
      const wasm = await pageSearch(browser, base);
      runs.push([...(await view(browser, base)), wasm, nat]);
    }
    const [first, all, wasm, nat] = [0, 1, 2, 3].map((k) => median(runs.map((r) => r[k])));
    console.log(['page', GRID, first.toFixed(2), all.toFixed(2), wasm.toFixed(2), nat.toFixed(2), (wasm / nat).toFixed(2)].join('\t'));
  } finally {
    await browser.close();
    server.close();
  }
}

main().catch((e) => {
  console.error(`bench_page: ${e.message}`);
  process.exitCode = 1;
});
