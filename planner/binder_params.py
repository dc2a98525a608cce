"""Prepared-statement parameters, as DuckDB reads them.

Three spellings:

- ``?`` is positional: it takes the number after the highest one seen so
  far in the text (so ``?, ?`` are 1 and 2, and ``$2, ?`` are 2 and 3);
- ``$n`` is the n-th value (1-based; ``$1`` may appear several times);
- ``$name`` is the value of ``name`` in a dict, matched without regard to
  case (DuckDB's identifiers are case-insensitive).

Positional parameters take a list or tuple whose length is the highest
number used, and every number up to it must be used; named ones take a dict
with exactly the names used.  A query may not mix the two kinds.  Every
mismatch is a BinderError (a ProgrammingError) that says what is missing or
left over.
"""

from __future__ import annotations

from collections.abc import Mapping

from planner.errors import BinderError


def check_parameter_container(params) -> None:
    """ProgrammingError unless ``params`` is None, a list/tuple or a dict."""
    if params is None or isinstance(params, (list, tuple, Mapping)):
        return
    raise BinderError("parameters must be a list, a tuple or a dict, not "
                      f"{type(params).__name__}")


def number_placeholders(placeholders: list, params) -> dict[int, object]:
    """id(Placeholder node) -> its key (an int for positional, a lowercase
    str for named), after checking ``params`` against the query's parameters.
    ``placeholders`` are the query's Placeholder nodes in textual order."""
    check_parameter_container(params)
    keys: dict[int, object] = {}
    highest = 0
    named = positional = False
    for node in placeholders:
        text = node.this
        if text is None or text == "?":
            highest += 1
            keys[id(node)] = highest
            positional = True
        elif str(text).isdigit():
            n = int(text)
            if n < 1:
                raise BinderError(f"parameter ${text}: positional parameters start at $1")
            highest = max(highest, n)
            keys[id(node)] = n
            positional = True
        else:
            keys[id(node)] = str(text).lower()
            named = True
    if named and positional:
        raise BinderError("the query mixes named ($name) and positional (? or $n) parameters")
    if named:
        _check_named(set(keys.values()), params)
    else:
        _check_positional(set(keys.values()), highest, params)
    return keys


def _check_positional(used: set, highest: int, params) -> None:
    if isinstance(params, Mapping):
        if not used and not params:
            return
        what = f"{highest} positional parameters" if used else "no parameters"
        raise BinderError(f"the query has {what} but named parameters were given: "
                          + ", ".join(map(str, params)))
    given = len(params) if params is not None else 0
    if not used:
        if given:
            raise BinderError(f"query has no parameters but {given} were given")
        return
    if params is None:
        raise BinderError(f"query has {highest} parameters but none were given")
    if given != highest:
        raise BinderError(f"query has {highest} parameters but {given} were given")
    missing = [n for n in range(1, highest + 1) if n not in used]
    if missing:
        raise BinderError("parameter " + ", ".join(f"${n}" for n in missing)
                          + f" is not used in the query (it uses up to ${highest})")


def _check_named(used: set, params) -> None:
    if params is None or not isinstance(params, Mapping):
        what = "none" if params is None else f"a {type(params).__name__}"
        raise BinderError(f"the query has named parameters ({_names(used)}) but {what} "
                          "was given; pass a dict")
    given: dict[str, object] = {}
    for key in params:
        if not isinstance(key, str):
            raise BinderError(f"parameter names must be strings, got {key!r}")
        if key.lower() in given:
            raise BinderError(f"parameter names {given[key.lower()]!r} and {key!r} differ "
                              "only in case")
        given[key.lower()] = key
    missing = sorted(used - set(given))
    if missing:
        raise BinderError(f"no value given for parameter {_names(missing)}")
    extra = sorted(set(given) - used)
    if extra:
        raise BinderError(f"parameter {_names(given[k] for k in extra)} given but not used "
                          "in the query")


def _names(names) -> str:
    return ", ".join(f"${n}" for n in sorted(names))


def parameter_value(params, key):
    """The Python value of the parameter ``key`` (from number_placeholders)."""
    if isinstance(key, int):
        return params[key - 1]
    for name, value in params.items():
        if name.lower() == key:
            return value
    raise BinderError(f"no value given for parameter ${key}")
