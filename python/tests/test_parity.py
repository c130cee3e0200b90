"""The parity grid's Python column: every case of tests/parity/grid.json (a command and its
options as the string API's JSON) run by the built command line ($VPIPE_CLI, its flags
made from the options as tests/test_cli_parity.c makes them, in a scratch directory) and
by the package, twice:

- `vpipe.call(command, **options)`: the Reply must be the command line's stdout, files
  written, stderr (the notes) and exit code, byte for byte;
- the package's own call for the command (vpipe.simulate, compare, plan, render,
  schedule, validate, block, model, list_families): the --json output (.json) or the
  text (.text), the files and the exit code must be the command line's.

A refusal must be the command line's exit code and message, the JSON spelling of an
option ("option 'memory_model'") read as its flag ("--memory-model"). The search's
wall-clock time ("; 1.23 s", "elapsed_s") is masked, as the C test masks it. Also: issue
30's recomputation case peaks at 1.0687 through every door.

Run by ctest (label python) with VPIPE_CLI, VPIPE_LIBRARY and VP_SOURCE_DIR set.
"""

import ctypes
import json
import os
import re
import subprocess
import tempfile

import pytest

import vpipe

CLI = os.environ.get("VPIPE_CLI", "")
SOURCE = os.environ.get("VP_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.path.join(os.path.abspath(SOURCE), "tests", "parity")
needs_cli = pytest.mark.skipif(not CLI, reason="VPIPE_CLI (the vpipe binary) is not set")


def grid():
    with open(os.path.join(DATA, "grid.json")) as f:
        return json.loads(f.read().replace("@DATA@", DATA))


GRID = grid()


# ---- options as flags (vpipe/request.h: a key is the long flag with '_' for '-'; "p",
# "m", "v" are -p, -m, -v; "output" is -o; the operand(s) come last) -----------------------


def flag(key):
    return "-o" if key == "output" else "-" + key if len(key) == 1 else "--" + key.replace("_", "-")


# The options that read JSON's true and false as 1 and 0 (the library's old flags): false
# is given as 0, not left out (FlashAttention is on unless given).
NUMBERED = {"zero", "flash"}


def argv_of(command, options):
    """The command line of a case, in the options' order as the C test builds it."""
    words, operands = [command], []
    for key, value in options.items():
        if key == "operand":
            operands += value if isinstance(value, list) else [value]
        elif value is True:
            words.append(flag(key))
        elif value is False and key in NUMBERED:
            words += [flag(key), "0"]
        elif value is not False:
            text = "%.17g" % value if isinstance(value, float) else str(value)
            words += [flag(key), text]
    return words + operands


def as_flags(message):
    """A library message with each "option 'key'" spelled as the key's flag."""
    return re.sub(r"option '([a-z0-9_]+)'", lambda m: flag(m.group(1)), message)


def masked(text):
    """text with the search's and the calibration's wall-clock time masked (as
    tests/test_cli_parity.c does)."""
    return re.sub(r'( refused; | iterations, |"elapsed_s": )[^ ,\n]*', r"\1X", text)


# ---- the outcomes ---------------------------------------------------------------------------


def files_under(root):
    """{relative path: text} of every file under root."""
    found = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8", newline="") as f:
                found[os.path.relpath(path, root)] = f.read()
    return found


def outcome_of(reply):
    """(exit, stdout, stderr, files) of a Reply, or of an Error as the command line says it."""
    if isinstance(reply, vpipe.Error):
        return reply.exit_code, "", f"vpipe: error: {as_flags(reply.message)}\n", {}
    files = {os.path.normpath(path): text for path, text in reply.files.items()}
    return reply.exit, reply.stdout, "".join(reply.notes), files


def answered(run):
    """run()'s Reply, or the Error it raised."""
    try:
        return run()
    except vpipe.Error as e:
        return e


def schedule_text(s, fmt):
    return {"json": s.to_json, "text": s.to_text, "torch-csv": s.to_torch_csv,
            "torch-csv-comms": lambda: s.to_torch_csv(comms=True)}[fmt]()


def as_reply(answer, want_json):
    """An answer of the package as the command line prints it: its JSON with json, else
    its text; the files the request would write; its exit code."""
    stdout = answer.json if want_json else answer.text
    return vpipe.Reply(stdout, answer.files, answer.notes, answer.reply.exit)


def pythonic(command, options):
    """The package's own call for a case, as a Reply (see the module's documentation)."""
    opts = dict(options)
    want_json = opts.pop("json", False)
    operand = opts.pop("operand", None)
    to_stdout = opts.get("output") == "-"
    if to_stdout:
        del opts["output"]
    if command == "list":
        return as_reply(vpipe.list_families(**opts), want_json)
    if command == "calibrate":  # no call of its own yet: vpipe.call is the package's
        return vpipe.call(command, **options)
    if command == "simulate":
        return as_reply(vpipe.simulate(operand, **opts), want_json)
    if command == "compare":
        return as_reply(vpipe.compare(**opts), want_json)
    if command in ("render", "validate"):
        return getattr(vpipe, command)(operand, **opts)
    if command == "model":
        words = operand if isinstance(operand, list) else [operand] if operand else []
        return as_reply(vpipe.model(*words, **opts), want_json)
    if command == "schedule":
        fmt, output = opts.pop("format", "json"), opts.pop("output", None)
        text = schedule_text(vpipe.schedule(operand, **opts), fmt)
        return vpipe.Reply("" if output else text, {output: text} if output else {}, [], 0)
    if command == "block" and opts.pop("example", False):
        return vpipe.Reply(vpipe.block_example(**dict(opts, json=want_json or None,
                                                      operand=operand)), {}, [], 0)
    if command == "block":  # -o - prints the schedule, then the JSON report with --json
        result = vpipe.block(operand, **opts)
        if to_stdout:
            return vpipe.Reply(result.schedule.to_json() + (result.json if want_json else ""),
                               {}, [], 0)
        return as_reply(result, want_json)
    assert command == "plan", command
    megatron = opts.get("emit") == "megatron"
    if want_json + to_stdout + megatron > 1:  # refused: two answers for one stdout
        return vpipe.plan(operand=operand, **dict(opts, json=want_json or None))
    if megatron:
        del opts["emit"]
        plan = vpipe.plan(**opts)  # the flags on stdout, the winner to -o FILE
        return vpipe.Reply(plan.megatron(), plan.files, [], 0)
    result = vpipe.plan(operand=operand, **opts)  # -o - prints the schedule instead
    return vpipe.Reply(result.schedule.to_json(), {}, [], 0) if to_stdout else as_reply(
        result, want_json)


# Cases whose command line writes what the package's own call keeps elsewhere, so only
# the parts named here are compared for it (everything is compared through vpipe.call).
def compared(command, options):
    """Which of (exit, stdout, stderr, files) the package's own call must match."""
    if command == "schedule" and options.get("format", "json").startswith("torch-csv"):
        return (0, 1, 3)  # the torchtitan advice goes to stderr: Schedule.torch_notes
    if options.get("output") == "-" or options.get("emit") == "megatron":
        return (0, 1, 3)  # the schedule or the flags, not the report's notes
    if command == "schedule" or (command == "block" and options.get("example")):
        return (0, 1, 3)
    return (0, 1, 2, 3)


def differences(label, cli, python, parts=(0, 1, 2, 3)):
    names = ("exit", "stdout", "stderr", "files")
    cli = [masked(v) if isinstance(v, str) else v for v in cli]
    python = [masked(v) if isinstance(v, str) else v for v in python]
    return [f"{label}: {names[k]} differs:\n--- command line\n{str(cli[k])[:600]}\n"
            f"--- python\n{str(python[k])[:600]}" for k in parts if cli[k] != python[k]]


@needs_cli
def test_the_grid_through_every_python_door():
    failed, commands = [], set()
    for case in GRID:
        command, options = case["command"], case["options"]
        commands.add(command)
        label = json.dumps(case)
        with tempfile.TemporaryDirectory() as scratch, tempfile.TemporaryDirectory() as mine:
            proc = subprocess.Popen([CLI, *argv_of(command, options)], cwd=scratch,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            # the package's answers meanwhile, in a directory of their own: nothing may
            # be written there
            here = os.getcwd()
            os.chdir(mine)
            try:
                door = outcome_of(answered(lambda: vpipe.call(command, **options)))
                own = outcome_of(answered(lambda: pythonic(command, options)))
            finally:
                os.chdir(here)
            out, err = proc.communicate()
            cli = (proc.returncode, out.decode(), err.decode(), files_under(scratch))
            assert not os.listdir(mine), f"{label}: the package wrote {os.listdir(mine)}"
        failed += differences(label + " (vpipe.call)", cli, door)
        failed += differences(label + " (its own call)", cli, own, compared(command, options))
    assert not failed, f"{len(failed)} differences:\n" + "\n".join(failed[:20])
    assert len(GRID) >= 200 and commands == {"list", "simulate", "compare", "render", "schedule",
                                             "validate", "plan", "block", "model", "calibrate"}


@needs_cli
def test_the_flags_are_the_command_lines():
    """The rule above makes flags the command line has: every key of the grid, as a flag,
    is one a command's --help lists."""
    helps = "".join(subprocess.run([CLI, c, "--help"], capture_output=True, text=True).stdout
                    for c in sorted({case["command"] for case in GRID}))
    listed = set(re.findall(r"(?<![\w-])(-[a-z]|--[a-z][a-z0-9-]*)\b", helps))
    keys = {key for case in GRID for key in case["options"] if key != "operand"}
    assert {flag(key) for key in keys} <= listed, {flag(key) for key in keys} - listed
    assert len(keys) > 40


# ---- issue 30's recomputation case --------------------------------------------------------


@needs_cli
def test_recompute_peaks_at_1_0687_through_every_door():
    args = ["simulate", "1f1b", "-p", "4", "-m", "8", "--recompute", "full"]
    text = subprocess.run([CLI, *args], capture_output=True, text=True, check=True).stdout
    assert "peak memory 1.0687 units" in text
    report = vpipe.simulate("1f1b", p=4, m=8, recompute="full")
    assert report.text == text and round(report.peak_memory_max, 4) == 1.0687
    assert report.json == subprocess.run([CLI, *args, "--json"], capture_output=True,
                                         text=True).stdout
    held = vpipe.schedule("1f1b", 4, 8)
    assert held.simulate(recompute="full") == report
    assert vpipe.simulate(held, recompute="full").to_dict() == report.to_dict()
    built = vpipe.schedule("1f1b", 4, 8, recompute="full")  # R passes in the schedule
    assert round(built.simulate().peak_memory_max, 4) == 1.0687
    # the first string API (vp_request_simulate), which the package no longer calls
    lib = vpipe._lib.lib()
    fn = lib.vp_request_simulate
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p),
                   ctypes.POINTER(vpipe._lib._CError)]
    out, err = ctypes.c_void_p(), vpipe._lib._CError()
    assert fn(held._handle, b'{"recompute": "full"}', ctypes.byref(out), ctypes.byref(err)) == 0
    legacy = json.loads(vpipe._lib.take_text(out))
    assert round(legacy["peak_memory_max"], 4) == 1.0687
    assert legacy["peak_memory_max"] == report.peak_memory_max
