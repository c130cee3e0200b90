/* The playground's Web Worker: loads the WebAssembly module (vpipe's schedule library) and
 * answers the page by calling the library's public string API (vpipe/request.h, vpipe/io.h)
 * directly, as the Python package does through ctypes. All computation runs here, so the
 * page never freezes.
 *
 * Protocol: the page posts {id, channel, op, args}; the worker answers {id, ok: true,
 * result, ms} or {id, ok: false, error: {status, line, column, message}, ms}, or
 * {id, superseded: true} when a newer request of the same channel arrived before this one
 * ran. Ops: hello, view (a schedule built, planned or read, with everything the page shows
 * of it), compare (two families drawn on one time scale), price (every family priced for a
 * real model) and cluster (the whole-configuration planner, `vpipe plan --model`, through
 * the library's front door vp_request_call). The page runs cluster in a worker of its own:
 * its search takes seconds and cannot be interrupted but by ending the worker.
 */
'use strict';

// The served page loads the module beside this file; the single-file build has it inline.
if (typeof createVpipe === 'undefined') importScripts('vpipe.js');

const ready = createVpipe();
let M = null;
const NULL = 0;
const OUT = Symbol('out'); // an output pointer argument: invoke returns what it received
const ERROR_SIZE = 12 + 512; // vp_error: int status, line, column; char message[512]
const CSV_COMPUTE_ONLY = 1; // VP_TORCH_CSV_COMPUTE_ONLY
const CONFIG_PATH = '/config.json'; // a pasted Hugging Face config.json, in the module's memory
const COMPARE_PX = 1600; // compare: the plot width of the longer schedule; the other's is its share
const TITAN_DIR = 'titan'; // cluster: the directory of the torchtitan export, as in the README
const WINNER_PATH = 'winner.json'; // cluster: the winner's schedule (plan -o)
const GIB = 2 ** 30;

/* A failed library call as the page shows it. */
function failure(rc, err) {
  const status = M.UTF8ToString(M._vp_status_name(rc));
  const at = err >> 2;
  const message = M.UTF8ToString(err + 12, 512) || status;
  return { status, line: M.HEAP32[at + 1], column: M.HEAP32[at + 2], message };
}

/* Calls the library function name(args..., &err): strings become temporary C strings,
 * OUT a pointer slot; numbers pass as they are (pointers, integers, NULL). Returns the
 * values left in the OUT slots; throws failure() when the call returns an error. */
function invoke(name, ...args) {
  const temps = [];
  const outs = [];
  const alloc = (size) => {
    const p = M._malloc(size);
    M.HEAPU8.fill(0, p, p + size);
    temps.push(p);
    return p;
  };
  try {
    const cargs = args.map((a) => {
      if (a === OUT) {
        outs.push(alloc(4));
        return outs[outs.length - 1];
      }
      if (typeof a !== 'string') return a;
      const size = M.lengthBytesUTF8(a) + 1;
      const p = alloc(size);
      M.stringToUTF8(a, p, size);
      return p;
    });
    const err = alloc(ERROR_SIZE);
    const rc = M['_' + name](...cargs, err);
    if (rc !== 0) throw failure(rc, err);
    return outs.map((p) => M.HEAPU32[p >> 2]);
  } finally {
    temps.forEach((p) => M._free(p));
  }
}

/* A text the library returned (malloc'ed): copied and freed. */
function take(ptr) {
  const text = M.UTF8ToString(ptr);
  M._free(ptr);
  return text;
}

function textOf(name, ...args) {
  return take(invoke(name, ...args)[0]);
}

function names(count, at) {
  return Array.from({ length: M['_' + count]() }, (_, i) => M.UTF8ToString(M['_' + at](i)));
}

function hello() {
  const families = Array.from({ length: M._vp_family_count() }, (_, i) => {
    const f = M._vp_family_at(i) >> 2; // vp_family: name, summary, needs
    const field = (k) => M.UTF8ToString(M.HEAPU32[f + k]);
    return { name: field(0), summary: field(1), needs: field(2) };
  });
  return {
    version: M.UTF8ToString(M._vp_version()),
    families,
    models: names('vp_arch_preset_count', 'vp_arch_preset_name'),
    gpus: names('vp_gpu_preset_count', 'vp_gpu_preset_name'),
  };
}

/* What to know when exporting s to PyTorch (vp_torch_csv_notes), one note per line. */
function torchNotes(s) {
  const size = 4096;
  const buf = M._malloc(size);
  try {
    M._vp_torch_csv_notes(s, buf, size);
    return M.UTF8ToString(buf);
  } finally {
    M._free(buf);
  }
}

/* Everything the page shows of schedule s (borrowed) under options: the simulation report,
 * the picture, the Chrome trace (its memory counters are the page's memory over time), and
 * the files to download (the CSV's refusal when PyTorch cannot express it). */
function describe(s, options) {
  const result = {
    sim: textOf('vp_request_simulate', s, options, OUT),
    svg: textOf('vp_request_render', s, 'svg', options, OUT),
    trace: textOf('vp_request_render', s, 'trace', options, OUT),
    json: textOf('vp_json_write', s, OUT),
    csv: null,
    csvError: null,
    notes: torchNotes(s),
  };
  try {
    result.csv = textOf('vp_torch_csv_write', s, CSV_COMPUTE_ONLY, OUT);
  } catch (e) {
    if (e.status === undefined) throw e;
    result.csvError = e;
  }
  return result;
}

/* A schedule built from a family (mode "schedule"), chosen by the planner ("plan", with its
 * report and the planner's own time in ms) or read from text ("load"), described. */
function view({ mode, options, text }) {
  let s = NULL;
  let plan = null;
  let planMs = null;
  try {
    if (mode === 'schedule') {
      [s] = invoke('vp_request_schedule', options, OUT);
    } else if (mode === 'plan') {
      const start = performance.now();
      const [report, chosen] = invoke('vp_request_plan', options, OUT, OUT);
      planMs = performance.now() - start;
      s = chosen;
      plan = take(report);
    } else {
      [s] = invoke('vp_schedule_parse', text, M.lengthBytesUTF8(text), OUT);
    }
    return { plan, planMs, ...describe(s, options) };
  } finally {
    M._vp_schedule_free(s);
  }
}

/* Two families (families[0], families[1]) built for options and drawn on one time scale:
 * the longer makespan gets COMPARE_PX pixels and the other its share (vp_request_render's
 * "width"), so a time unit is as wide in both. Each: its family, simulation report, plot
 * width, picture and trace. A family that cannot be built is the error, named. */
function compare({ options, families }) {
  const base = JSON.parse(options);
  const built = [];
  try {
    for (const family of families) {
      const one = { family, opts: JSON.stringify({ ...base, family }), s: NULL };
      built.push(one);
      try {
        [one.s] = invoke('vp_request_schedule', one.opts, OUT);
        one.sim = textOf('vp_request_simulate', one.s, one.opts, OUT);
      } catch (e) {
        if (e.status !== undefined) e.message = `${family}: ${e.message}`;
        throw e;
      }
    }
    const longest = Math.max(...built.map((x) => JSON.parse(x.sim).makespan));
    return built.map(({ family, s, opts, sim }) => {
      const share = longest > 0 ? JSON.parse(sim).makespan / longest : 1;
      const width = Math.max(20, Math.round(COMPARE_PX * share));
      const svg = textOf('vp_request_render', s, 'svg', JSON.stringify({ ...JSON.parse(opts), width }), OUT);
      return { family, sim, width, svg, trace: textOf('vp_request_render', s, 'trace', opts, OUT) };
    });
  } finally {
    built.forEach((x) => M._vp_schedule_free(x.s));
  }
}

/* Runs `vpipe command` with options (an object of the command's JSON keys) through the
 * front door: its reply {stdout, files: [{path, text}], notes, exit} (vpipe/request.h). */
function call(command, options) {
  const [reply] = invoke('vp_request_call', command, JSON.stringify(options), OUT);
  const text = M.UTF8ToString(reply);
  M._vp_free(reply);
  return JSON.parse(text);
}

/* The pasted config.json, when there is one, as the model of options (a new object). */
function withConfig(options, config) {
  if (config === undefined) return options;
  M.FS.writeFile(CONFIG_PATH, config);
  return { ...options, model: CONFIG_PATH };
}

/* Each family priced through the front door (`vpipe simulate FAMILY --model ... --json`, the
 * family built with the priced costs): its report or its error. options: simulate's JSON
 * keys without the family; config: a pasted config.json, used instead of options' model.
 * When no family could be priced and every one failed alike (a bad config.json, an
 * accelerator that cannot hold the model's setup), that one error is the answer, thrown
 * once instead of once per family. */
function price({ options, families, config }) {
  const base = withConfig(JSON.parse(options), config);
  const priced = families.map((family) => {
    try {
      return { family, report: call('simulate', { ...base, operand: family, json: true }).stdout };
    } catch (error) {
      if (error.status === undefined) throw error;
      return { family, error };
    }
  });
  const first = priced[0].error;
  if (first && priced.every((r) => r.error && r.error.message === first.message)) throw first;
  return priced;
}

/* One answer of the whole-configuration planner for options (plan's JSON keys: model, gpu,
 * gpus, global_batch, seq, ...; config: a pasted config.json instead of the model), each
 * a search of its own: "json", the report as JSON with the torchtitan export (TITAN_DIR's
 * job.toml and schedule.csv) and the winner's schedule (WINNER_PATH) as files, and the
 * accelerator's capacity in bytes (from `vpipe model list --json`) for the bars; "text",
 * the report as the command line prints it; "megatron", Megatron-LM's flags. Each with the
 * search's time in the worker (ms). */
function cluster({ options, config, what }) {
  const base = withConfig(JSON.parse(options), config);
  const extra = {
    json: { json: true, emit: 'torchtitan', operand: TITAN_DIR, output: WINNER_PATH },
    text: {},
    megatron: { emit: 'megatron' },
  }[what];
  const start = performance.now();
  const reply = call('plan', { ...base, ...extra });
  const result = { ms: performance.now() - start, stdout: reply.stdout, files: reply.files };
  if (what === 'json') {
    const gpu = call('model', { operand: 'list', json: true }).stdout;
    result.capacityBytes = JSON.parse(gpu).gpus.find((g) => g.name === base.gpu).memory_gib * GIB;
  }
  return result;
}

const ops = { hello, view, compare, price, cluster };
const waiting = new Map(); // channel -> its newest request not yet run
let draining = false;

/* Runs the waiting requests one at a time, yielding between them so that newer requests
 * can arrive and supersede older ones of their channel. A failure that is not the
 * library's (the module did not load, a bug) is answered with status "internal". */
async function drain() {
  const [channel, msg] = waiting.entries().next().value;
  waiting.delete(channel);
  const start = performance.now();
  let reply;
  try {
    M = M || (await ready);
    reply = { ok: true, result: ops[msg.op](msg.args || {}) };
  } catch (e) {
    const error = e && e.status !== undefined ? e : { status: 'internal', line: 0, column: 0, message: String(e) };
    reply = { ok: false, error };
  }
  postMessage({ id: msg.id, ms: performance.now() - start, ...reply });
  if (waiting.size) setTimeout(drain, 0);
  else draining = false;
}

onmessage = (e) => {
  const older = waiting.get(e.data.channel);
  if (older) postMessage({ id: older.id, superseded: true });
  waiting.set(e.data.channel, e.data);
  if (!draining) {
    draining = true;
    setTimeout(drain, 0);
  }
};
