// What the playground's browser test (web/test.mjs) and its page benchmark
// (bench/bench_page.mjs) share: the built page served from loopback, and Debian's headless
// Chromium driven by playwright-core (`npm ci` in web/).
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';

const TYPES = { html: 'text/html', js: 'text/javascript', css: 'text/css', wasm: 'application/wasm' };

/* Serves the files of dir (a web/build.sh site) on a free loopback port; resolves with
 * the server and its address. */
export function serve(dir) {
  const server = http.createServer((req, res) => {
    const name = new URL(req.url, 'http://localhost').pathname.slice(1) || 'index.html';
    if (!readdirSync(dir).includes(name)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[name.split('.').pop()] }).end(readFileSync(join(dir, name)));
  });
  return new Promise((ok) => server.listen(0, '127.0.0.1', () => ok({ server, base: `http://127.0.0.1:${server.address().port}` })));
}

/* Debian's /usr/bin/chromium, headless, quiet (no network of its own). */
export async function launch() {
  const { chromium } = await import('playwright-core').catch(() => {
    throw new Error('playwright-core is missing: run `npm ci` in web/ (scripts/install-deps does)');
  });
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/* Resolves once section (#view, #price, #cluster) of page shows the answer to its latest
 * request. */
export function settled(page, section = '#view') {
  return page.waitForFunction((s) => {
    const el = document.querySelector(s);
    return el.dataset.state !== 'busy' && el.dataset.seq && el.dataset.done === el.dataset.seq;
  }, section, { timeout: 0 });
}
