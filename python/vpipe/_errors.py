"""The exceptions: one class per library status, each also the built-in exception a Python
caller expects (`ValueError` for a bad request or bad data, `OSError` for files,
`MemoryError`, `RuntimeError`), all under `vpipe.Error`.
"""

from __future__ import annotations

from typing import Optional


class Error(Exception):
    """A failed vpipe call: the library's message, its status and, for text, the place.

    Attributes:
        message: the library's message (str(error) adds the line and column when known).
            A request's message is the command line's with each flag spelled as its
            option: "option 'memory_model': ..." for "--memory-model ...".
        status: the status name, e.g. "VP_EINVAL" (invalid argument) or "VP_EPARSE".
        line, column: 1-based position in the text a reader refused (0 when none).
        exit_code: the command line's exit code for this failure (2 a bad request, 3 bad
            input, 1 other failures).
    """

    status_name = "VP_EINVAL"  # the status a class stands for (Error itself: any)

    def __init__(self, message: str, status: Optional[str] = None, line: int = 0,
                 column: int = 0, exit_code: Optional[int] = None):
        self.message = message
        self.status = status or self.status_name
        self.line = line
        self.column = column
        self._exit_code = exit_code
        self._text = (f"line {line}, column {column}: " if line > 0 else "") + message
        super().__init__(self._text)

    def __str__(self) -> str:
        return self._text

    @property
    def exit_code(self) -> int:
        """The command line's exit code for this status (the library's table; 1 when the
        library cannot be loaded)."""
        if self._exit_code is None:
            from . import _lib  # the library holds the table; it imports this module

            try:
                self._exit_code = _lib.exit_code(self.status)
            except Error:
                self._exit_code = 1
        return self._exit_code

    def __reduce__(self):
        return type(self), (self.message, self.status, self.line, self.column, self._exit_code)


class InvalidArgument(Error, ValueError):
    """A request the library refuses: an unknown name, a value of the wrong type or out of
    range (VP_EINVAL)."""


class ParseError(Error, ValueError):
    """Malformed text: a schedule file, costs, a memory model, JSON (VP_EPARSE); line and
    column say where."""

    status_name = "VP_EPARSE"


class ValidationError(Error, ValueError):
    """A schedule that reads but is not a valid schedule (VP_EVALIDATION)."""

    status_name = "VP_EVALIDATION"


class DeadlockError(ValidationError):
    """A schedule whose devices wait on each other forever (VP_EDEADLOCK)."""

    status_name = "VP_EDEADLOCK"


class UnsupportedError(Error, ValueError):
    """A request this schedule or format cannot express, e.g. a bidirectional schedule as a
    PyTorch CSV (VP_EUNSUPPORTED)."""

    status_name = "VP_EUNSUPPORTED"


class LimitError(Error, ValueError):
    """A request over a size limit, e.g. more ops than max_ops (VP_ELIMIT)."""

    status_name = "VP_ELIMIT"


class FileError(Error, OSError):
    """A file that cannot be read or written (VP_EIO); `filename` is its path when the
    package knows it."""

    status_name = "VP_EIO"


class LibraryNotFound(FileError):
    """libvpipe could not be loaded: the message says where the package looked."""


class OutOfMemory(Error, MemoryError):
    """The library ran out of memory (VP_ENOMEM)."""

    status_name = "VP_ENOMEM"


class RuntimeFailure(Error, RuntimeError):
    """A request that ran and failed (VP_ERUNTIME)."""

    status_name = "VP_ERUNTIME"


_BY_STATUS = {cls.status_name: cls for cls in [
    InvalidArgument, ParseError, ValidationError, DeadlockError, UnsupportedError, LimitError,
    FileError, OutOfMemory, RuntimeFailure]}


def error(status: str, message: str, line: int = 0, column: int = 0,
          exit_code: Optional[int] = None) -> Error:
    """The exception for a status name ("VP_EIO", ...): its class, or Error itself for a
    status this package does not know."""
    return _BY_STATUS.get(status, Error)(message, status, line, column, exit_code)
