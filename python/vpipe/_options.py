"""A request's options as the JSON object the library reads (vpipe/request.h).

Values are converted by what they are, not by the option's name, so any option of any
call goes through the same door: booleans (numpy's too), integers (anything with
`__index__`: numpy integers), finite real numbers (anything `numbers.Real` or with
`__float__`: numpy floats, Fraction, Decimal), strings, paths, and sequences of those
(lists, tuples, numpy arrays). The library then checks each option's type and range and
names the option when it refuses one. Costs given as a mapping are checked here (known
keys, finite numbers) before they become the command line's text.
"""

from __future__ import annotations

import json
import math
import numbers
import operator
import os
from typing import Any, Mapping, Union

from ._errors import InvalidArgument

Costs = Union[Mapping[str, Any], str, None]

COST_KEYS = ("F", "B", "W", "c", "FB", "R", "S", "T", "E", "O", "L")


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool) or (type(value).__module__ == "numpy"
                                       and type(value).__name__ in ("bool_", "bool"))


def _real(what: str, value: Any) -> float:
    """value as a finite float; InvalidArgument "<what> must be a ... number" otherwise
    (booleans and strings are not numbers)."""
    number = None
    if not _is_bool(value) and not isinstance(value, (str, bytes)):
        try:
            number = float(value)
        except (TypeError, ValueError, OverflowError):
            pass
    if number is None:
        raise InvalidArgument(f"{what} must be a number, not {value!r}")
    if not math.isfinite(number):
        raise InvalidArgument(f"{what} must be a finite number, not {value!r}")
    return number


def _value(name: str, value: Any) -> Any:
    """One option's value as JSON data (see the module's documentation)."""
    if _is_bool(value):
        return bool(value)
    if isinstance(value, (str, os.PathLike)):
        return os.fspath(value)
    if isinstance(value, (list, tuple)) or getattr(value, "ndim", 0) >= 1:
        return [_value(name, item) for item in value]
    if isinstance(value, numbers.Integral) or hasattr(value, "__index__"):
        try:
            return operator.index(value)
        except TypeError:
            pass
    if isinstance(value, numbers.Real) or hasattr(value, "__float__"):
        return _real(f"option '{name}'", value)
    raise InvalidArgument(f"option '{name}' cannot be {type(value).__name__} {value!r}")


def costs_text(costs: Costs, name: str = "cost") -> Union[str, None]:
    """Costs as the command line's text "F=2.0,B=3.0": a str is passed on as written (the
    library parses it); a mapping's keys must be F, B, W, c, FB or R and its values finite
    numbers (InvalidArgument naming option `name` otherwise), so nothing but those reaches
    the text."""
    if costs is None or isinstance(costs, str):
        return costs
    if not isinstance(costs, Mapping):
        raise InvalidArgument(f"option '{name}' must be a dict or a str, not {costs!r}")
    parts = []
    for key, value in costs.items():
        if key not in COST_KEYS:
            raise InvalidArgument(f"option '{name}': unknown cost key {key!r} (known: "
                                  + ", ".join(COST_KEYS) + ")")
        number = _real(f"option '{name}': {key}", value)
        parts.append(f"{key}={number!r}")
    return ",".join(parts)


# The package's older names of two options (its first calls took them), and the door's.
ALIASES = {"costs": "cost", "zero1": "zero"}


def encode(**options: Any) -> bytes:
    """The options as the JSON object of vp_request_call (bytes); None values are left out.
    The older names "costs" and "zero1" become "cost" and "zero"; costs given as a mapping
    go through costs_text (its messages name the keyword given); a numeric "memory" (the
    budget planner's) and a numeric "offload" (a share, or one per stage) become their
    text. Every other keyword is passed on as it is, for the
    library to take or refuse."""
    for old, new in ALIASES.items():
        if options.get(old) is not None:
            if options.get(new) is not None:
                raise InvalidArgument(f"option '{new}' given twice (as {new} and as {old})")
            options[new] = costs_text(options[old], old) if new == "cost" else options[old]
        options.pop(old, None)
    if "cost" in options:
        options["cost"] = costs_text(options["cost"], "cost")
    memory = options.get("memory")
    if memory is not None and not isinstance(memory, str):
        options["memory"] = repr(_real("option 'memory'", memory))
    offload = options.get("offload")
    if offload is not None and not isinstance(offload, str):
        shares = offload if isinstance(offload, (list, tuple)) or getattr(
            offload, "ndim", 0) >= 1 else [offload]
        options["offload"] = ",".join(repr(_real("option 'offload'", x)) for x in shares)
    return json.dumps({k: _value(k, v) for k, v in options.items() if v is not None}).encode()
