"""The front door (vpipe/request.h): any command, answered as the command line answers it.

A request is a command and its options, stated as the JSON object vp_request_call reads:
the command's long flags with '_' for '-' (memory_model, global_batch, ...), p, m and v,
output for -o, the positional argument(s) as operand, flags as True. `_call` encodes any
keyword it is given (`_options`) and lets the library take or refuse it, so an option the
library learns needs no change here. The answer is a `Reply`: the bytes the command line
would print, the files it would write (nothing is written unless `Reply.write` is
called), its notes for standard error and its exit code. A refused request raises the
`vpipe.Error` of its status, with the command line's message spelled as options
("option 'cost': ...") and the command line's exit code.

`Answer` is what a result built from a command's `--json` output keeps beside its fields:
the request, so that `.text` can ask for the command line's text of the same request.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, Dict, List, Optional, Tuple

from . import _lib
from ._errors import InvalidArgument
from ._options import encode


@dataclasses.dataclass(frozen=True)
class Reply:
    """What a command answers (vp_reply_json's fields).

    Attributes:
        stdout: what `vpipe COMMAND ...` prints on standard output.
        files: the files it writes, {path: text}, in the order it writes them (paths as
            the request gave them, relative to the current directory when relative);
            nothing is written unless `write` is called.
        notes: what it prints on standard error, each note as printed.
        exit: its exit code: 0, or the code of an outcome that still answers (compare
            with svg when no family fits: the table, a note, 2).
    """

    stdout: str
    files: Dict[str, str]
    notes: List[str]
    exit: int

    def __str__(self) -> str:
        return self.stdout

    def write(self, directory: "Optional[str | os.PathLike[str]]" = None) -> List[str]:
        """Writes the files as the command line would, relative paths under directory
        (default: the current directory), making the folders they need; returns the
        paths written."""
        written = []
        for path, text in self.files.items():
            where = os.path.join(os.fspath(directory), path) if directory is not None else path
            folder = os.path.dirname(where)
            if folder:
                os.makedirs(folder, exist_ok=True)
            with open(where, "w", encoding="utf-8", newline="") as f:
                f.write(text)
            written.append(where)
        return written


def _call(command: str, schedule: Any = None, **options: Any) -> Reply:
    """Runs command through the door (vp_request_call_with) with options (any keyword:
    numbers of any kind, flags, lists; None is left out) and answers its Reply. schedule:
    a vpipe.Schedule the request is about instead of an operand. A request with
    "cost_file" gets libvpipe-runtime's reader of profiles (`_lib.cost_reader`)."""
    text = encode(**options)
    reader = _lib.cost_reader() if options.get("cost_file") is not None else None
    handle = schedule._handle if schedule is not None else None
    answer = _lib.text_of(lambda out, err: _lib.lib().vp_request_call_with(
        command.encode(), handle, text, reader, out, err))
    data = json.loads(answer)
    return Reply(data["stdout"], {f["path"]: f["text"] for f in data["files"]},
                 list(data["notes"]), data["exit"])


def call(command: str, *operand: Any, **options: Any) -> Reply:
    """Runs any command as `vpipe COMMAND` does and answers its Reply (stdout, files not
    written, notes, exit code): the library's string API (vp_request_call) in Python.

    operand: the positional argument(s): a family or a schedule file (or a vpipe.Schedule
    held here), a block file, a folder, or "list" / "show", NAME for `model`. options: the
    command's options as keywords: its long flags with '_' for '-' (memory_model=...,
    global_batch=...), p, m, v, output for -o, flags as True, numbers of any kind, lists.

        >>> print(vpipe.call("simulate", "1f1b", p=4, m=8, recompute="full").stdout)

    Raises the Error of the library's status, with the command line's message (each flag
    spelled as its option) and exit code (Error.exit_code).
    """
    schedule, operands = _split(operand)
    if operands:
        options["operand"] = operands[0] if len(operands) == 1 else list(operands)
    return _call(command, schedule, **options)


def _split(operand: Tuple[Any, ...]) -> Tuple[Any, Tuple[Any, ...]]:
    """A vpipe.Schedule among the operands (the only one then), and the others."""
    held = [o for o in operand if hasattr(o, "_handle")]
    if held and len(operand) > 1:
        raise InvalidArgument("give a schedule or operands, not both")
    return (held[0], ()) if held else (None, operand)


class Request:
    """A request kept to be asked again: command, schedule (kept alive) and options."""

    def __init__(self, command: str, schedule: Any, options: Dict[str, Any]):
        self.command = command
        self.schedule = schedule
        self.options = options

    def run(self, **more: Any) -> Reply:
        """The request with more options (they replace its own) through the door."""
        return _call(self.command, self.schedule, **dict(self.options, **more))


def report(command: str, schedule: Any, options: Dict[str, Any],
           **more: Any) -> Tuple[Any, Request, Reply]:
    """Runs command with options and json (and more) and answers the parsed JSON, the
    request (without json and more) and the reply. The JSON is stdout's first value
    (compare with svg="-" prints the gallery after it). InvalidArgument when options
    says json: a result holds the JSON's fields, and its .text the text."""
    if "json" in options:
        raise InvalidArgument(f"option 'json': vpipe's {command} answers the --json report "
                              "as the result's fields and the text as its .text; leave it out")
    request = Request(command, schedule, options)
    reply = request.run(json=True, **more)
    data, _ = json.JSONDecoder().raw_decode(reply.stdout)
    return data, request, reply


class Answer:
    """What a result built from a command's --json output keeps beside its fields.

    Attributes (none of them a field of the JSON):
        reply: the Reply of the --json request (its stdout the JSON).
        json: that JSON text (the command line's bytes with --json).
        files, notes: the files the request would write ({path: text}, not written: see
            Reply.write) and its notes.
        text: the command line's text for the same request without --json, asked for on
            first use (the command runs again).
    """

    def _keep(self, request: Optional[Request], reply: Optional[Reply]):
        object.__setattr__(self, "_request", request)
        object.__setattr__(self, "_reply", reply)
        return self

    @property
    def reply(self) -> Optional[Reply]:
        return getattr(self, "_reply", None)

    @property
    def json(self) -> Optional[str]:
        return self.reply.stdout if self.reply else None

    @property
    def files(self) -> Dict[str, str]:
        return dict(self.reply.files) if self.reply else {}

    @property
    def notes(self) -> List[str]:
        return list(self.reply.notes) if self.reply else []

    @property
    def text(self) -> Optional[str]:
        if getattr(self, "_text", None) is None and getattr(self, "_request", None):
            object.__setattr__(self, "_text", self._request.run().stdout)
        return getattr(self, "_text", None)

    def _again(self, **more: Any) -> Reply:
        """The same request with more options (InvalidArgument when there is none)."""
        if getattr(self, "_request", None) is None:
            raise InvalidArgument(f"this {type(self).__name__} was not answered by a request")
        return self._request.run(**more)
