// Makes the single-file playground: the served page (SITE/index.html) with its style sheet
// and scripts (draw.js, app.js) inline, and the worker's source (the module built with -sSINGLE_FILE, its
// WebAssembly embedded, then worker.js) in a non-executed script element that app.js
// starts as a blob worker. Opens from disk with no server.
// Usage: node single.mjs SITE MODULE_SINGLE_FILE OUT_HTML
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [site, moduleFile, output] = process.argv.slice(2);
const read = (path) => readFileSync(path, 'utf8');

/* Text placed inside a script or style element must not end it early. */
function inline(text, what) {
  if (/<\/(script|style)|<!--/i.test(text)) throw new Error(`${what} holds text that would end its element`);
  return text;
}

/* Replaces the one occurrence of tag in html (a function replacement: no $ patterns). */
function replaceOnce(html, tag, replacement) {
  const parts = html.split(tag);
  if (parts.length !== 2) throw new Error(`index.html must hold ${tag} once`);
  return parts.join(replacement);
}

const workerSource = `${read(moduleFile)}\n${read(join(site, 'worker.js'))}`;
let html = read(join(site, 'index.html'));
html = replaceOnce(html, '<link rel="stylesheet" href="style.css">', `<style>\n${inline(read(join(site, 'style.css')), 'style.css')}</style>`);
const script = (name) => `<script>\n${inline(read(join(site, name)), name)}</script>`;
html = replaceOnce(
  html,
  '<script src="draw.js"></script>',
  `<script type="text/plain" id="vp-worker">${inline(workerSource, 'the worker')}</script>\n${script('draw.js')}`,
);
html = replaceOnce(html, '<script src="app.js"></script>', script('app.js'));
writeFileSync(output, html);
