"""Select items that stand for several columns, as DuckDB reads them.

    *  /  t.*                     every visible column (of t)
      EXCLUDE (c, t.c, ...)       ... without these
      REPLACE (expr AS c, ...)    ... with c's value replaced, in c's place
      RENAME (c AS d, t.c AS d)   ... with c named d
    * LIKE / ILIKE / NOT LIKE / NOT ILIKE / GLOB / SIMILAR TO 'pattern'
                                  ... whose names match (also * ILIKE, as sqlglot keeps it)
    COLUMNS('regex')              the columns whose names contain a match
    COLUMNS(['a', 'b'])           these columns, in FROM order
    COLUMNS(* EXCLUDE ...)        as the star;  COLUMNS(...) AS x names each x

Names compare without regard to case.  DuckDB's rules, checked against it:
an EXCLUDE or REPLACE entry that names no column is an error, an entry may
appear once, and a column may appear in only one of the three lists;
qualified EXCLUDE / RENAME entries touch only that table's columns, and
unqualified ones every column of that name; a REPLACE keeps the first
column of its name, in its position, under the REPLACE's spelling, and
drops the later ones (DuckDB's result on joins with repeated names).
One departure: DuckDB ignores a RENAME entry that names no column; here
it is an error, like EXCLUDE's, since ignoring what the user wrote hides
typos.  COLUMNS inside an expression (``min(COLUMNS(*))``), its lambda form
and its ``\\1`` alias patterns raise UnsupportedFeatureError.
"""

from __future__ import annotations

import fnmatch
import re

from sqlglot import exp

from planner.errors import UnsupportedFeatureError
from planner.expressions import ColumnRef

_NAME_FILTERS = {exp.Like: "LIKE", exp.ILike: "ILIKE", exp.Glob: "GLOB",
                 exp.SimilarTo: "SIMILAR TO"}


class StarItem:
    """One output column of a star: (name, bound expression, named by the user)."""

    def __init__(self, name: str, expr, alias: bool):
        self.name = name
        self.expr = expr
        self.alias = alias


def is_star_item(node) -> bool:
    """True when the select item ``node`` expands to columns."""
    if isinstance(node, exp.Alias) and isinstance(node.this, exp.Columns):
        return True
    if isinstance(node, exp.Escape):
        node = node.this
    if type(node) in _NAME_FILTERS:
        node = node.this
    return _star(node) is not None or isinstance(node, exp.Columns)


def plain_star(node) -> bool:
    """True for a bare ``*`` (count(*)); a star with EXCLUDE, REPLACE,
    RENAME or ILIKE inside an expression is an error, as in DuckDB."""
    if not isinstance(node, exp.Star):
        return False
    if any(node.args.get(k) for k in node.args):
        raise UnsupportedFeatureError("* with EXCLUDE/REPLACE/RENAME/ILIKE inside an "
                                      "expression (only as a select item)")
    return True


def _star(node):
    if isinstance(node, exp.Star):
        return node
    if isinstance(node, exp.Column) and isinstance(node.this, exp.Star):
        return node
    return None


def expand(ctx, scope, node, bind) -> list[StarItem]:
    """The columns of the select item ``node`` (see is_star_item).
    ``bind(expr_node)`` binds a REPLACE expression like any select item."""
    alias = None
    if isinstance(node, exp.Alias):
        alias, node = node.alias, node.this
        if re.search(r"\\\d", alias):
            raise UnsupportedFeatureError("COLUMNS(...) AS with a \\n group reference "
                                          "is not supported")
    escape = None
    if isinstance(node, exp.Escape):
        node, escape = node.this, node.expression
    name_filter = None
    if type(node) in _NAME_FILTERS:
        name_filter = _name_filter(ctx, node, escape)
        node = node.this
    if isinstance(node, exp.Columns):
        items = _columns(ctx, scope, node, bind)
    else:
        items = _expand_star(ctx, scope, node, bind, name_filter)
    if alias is not None:
        items = [StarItem(alias, it.expr, True) for it in items]
    return items


# ---- stars -----------------------------------------------------------------------

def _expand_star(ctx, scope, star, bind, name_filter=None) -> list[StarItem]:
    table = star.table if isinstance(star, exp.Column) else None
    modifiers = star.this if isinstance(star, exp.Column) else star
    if table and not scope.has_table(table):
        raise ctx.error(f"table {table} in {table}.* is not in FROM", star)
    where = f"the columns of {table}" if table else "FROM clause"
    # every column the star covers; hidden ones (the right copy of a USING
    # column) can be named by EXCLUDE/RENAME but are not output by a bare *
    covered = [(i, c) for i, c in enumerate(scope.columns)
               if not table or (c.table or "").lower() == table.lower()]
    if not covered:
        raise ctx.error("SELECT * with no columns (no FROM clause?)", star)
    excluded = _exclude(ctx, modifiers, covered, where)
    replaced = _replace(ctx, modifiers, covered, excluded, where)
    renamed = _rename(ctx, modifiers, covered, excluded, replaced)
    filters = [name_filter] if name_filter is not None else []
    ilike = modifiers.args.get("ilike")
    if ilike is not None:         # sqlglot keeps `* ILIKE 'p'` on the star
        filters.append(_name_filter(ctx, exp.ILike(this=modifiers.copy(), expression=ilike),
                                    None))
    out: list[StarItem] = []
    done: set[str] = set()
    for i, c in covered:
        if (c.hidden and not table) or i in excluded:
            continue
        if not all(f(c.name) for f in filters):
            continue
        key = c.name.lower()
        if key in replaced:
            if key not in done:                 # the first column of the name, in place
                done.add(key)
                spelling, value = replaced[key]
                out.append(StarItem(spelling, bind(value), True))
            continue
        if i in renamed:
            out.append(StarItem(renamed[i], ColumnRef(i, c.type, c.name), True))
        else:
            out.append(StarItem(c.name, ColumnRef(i, c.type, c.name), False))
    if not out:
        what = "the name filter" if filters else "EXCLUDE"
        raise ctx.error(f"SELECT list is empty after resolving * expressions ({what} "
                        "left no column)", star)
    return out


def _entry_name(ctx, node, what: str):
    """(table or None, name) of a column named in an EXCLUDE/RENAME list."""
    if not isinstance(node, exp.Column) or isinstance(node.this, exp.Star):
        raise ctx.error(f"{what} list entries must be column names, got "
                        f"{node.sql(dialect='duckdb')}", node)
    if node.args.get("db") or node.args.get("catalog"):
        raise UnsupportedFeatureError(f"schema-qualified column {node.sql(dialect='duckdb')} "
                                      f"in a {what} list")
    return (node.table or None), node.name


def _matches(covered, table, name) -> list[int]:
    n, t = name.lower(), table.lower() if table else None
    return [i for i, c in covered
            if c.name.lower() == n and (t is None or (c.table or "").lower() == t)]


def _full(table, name) -> str:
    return f"{table}.{name}" if table else name


def _exclude(ctx, modifiers, covered, where) -> set[int]:
    excluded: set[int] = set()
    seen: set[tuple] = set()
    for entry in modifiers.args.get("except_") or []:
        table, name = _entry_name(ctx, entry, "EXCLUDE")
        key = ((table or "").lower(), name.lower())
        if key in seen:
            raise ctx.error(f"duplicate entry {_full(table, name)} in EXCLUDE list", entry)
        seen.add(key)
        hits = _matches(covered, table, name)
        if not hits:
            raise ctx.error(f"column {_full(table, name)} in EXCLUDE list not found in "
                            f"{where}", entry)
        excluded.update(hits)
    return excluded


def _names_of(indexes, covered) -> set[str]:
    names = {i: c.name.lower() for i, c in covered}
    return {names[i] for i in indexes}


def _replace(ctx, modifiers, covered, excluded, where) -> dict[str, tuple]:
    replaced: dict[str, tuple] = {}
    excluded_names = _names_of(excluded, covered)
    for entry in modifiers.args.get("replace") or []:
        if not isinstance(entry, exp.Alias) or not entry.alias:
            raise ctx.error("REPLACE list entries must be 'expression AS column'", entry)
        name = entry.alias
        key = name.lower()
        if key in replaced:
            raise ctx.error(f"duplicate entry {name} in REPLACE list", entry)
        if key in excluded_names:
            raise ctx.error(f"column {name} cannot occur in both EXCLUDE and REPLACE list",
                            entry)
        if not any(c.name.lower() == key and not c.hidden for _, c in covered):
            raise ctx.error(f"column {name} in REPLACE list not found in {where}", entry)
        replaced[key] = (name, entry.this)
    return replaced


def _rename(ctx, modifiers, covered, excluded, replaced) -> dict[int, str]:
    renamed: dict[int, str] = {}
    seen: set[tuple] = set()
    excluded_names = _names_of(excluded, covered)
    for entry in modifiers.args.get("rename") or []:
        if not isinstance(entry, exp.Alias) or not entry.alias:
            raise ctx.error("RENAME list entries must be 'column AS name'", entry)
        table, name = _entry_name(ctx, entry.this, "RENAME")
        key = ((table or "").lower(), name.lower())
        if key in seen:
            raise ctx.error(f"duplicate entry {_full(table, name)} in RENAME list", entry)
        seen.add(key)
        for other, names in (("EXCLUDE", excluded_names), ("REPLACE", set(replaced))):
            if name.lower() in names:
                raise ctx.error(f"column {name} cannot occur in both {other} and RENAME "
                                "list", entry)
        hits = _matches(covered, table, name)
        if not hits:
            raise ctx.error(f"column {_full(table, name)} in RENAME list not found", entry)
        for i in hits:
            renamed[i] = entry.alias
    return renamed


# ---- name filters ------------------------------------------------------------------

def _name_filter(ctx, node, escape_node):
    """A predicate on column names for ``* LIKE 'p'`` and its relatives."""
    what = _NAME_FILTERS[type(node)]
    pattern = node.expression
    if not (isinstance(pattern, exp.Literal) and pattern.is_string):
        raise ctx.error(f"* {what} needs a constant string pattern", node)
    escape = None
    if escape_node is not None:
        if what not in ("LIKE", "ILIKE") or not (
                isinstance(escape_node, exp.Literal) and escape_node.is_string
                and len(escape_node.this) <= 1):
            raise ctx.error("ESCAPE must be a constant of at most one character", node)
        escape = escape_node.this or None
    text = pattern.this
    if what in ("LIKE", "ILIKE"):
        regex = re.compile(_like_regex(text, escape), re.DOTALL |
                           (re.IGNORECASE if what == "ILIKE" else 0))
    elif what == "GLOB":
        regex = re.compile(fnmatch.translate(text))
    else:
        try:
            regex = re.compile(text)
        except re.error as e:
            raise ctx.error(f"invalid regular expression {text!r}: {e}", node) from None
    negate = bool(node.args.get("negate"))
    return lambda name: (regex.fullmatch(name) is not None) != negate


def _like_regex(pattern: str, escape: str | None) -> str:
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if escape is not None and ch == escape and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        i += 1
    return "".join(out)


# ---- COLUMNS(...) --------------------------------------------------------------------

def _columns(ctx, scope, node: exp.Columns, bind) -> list[StarItem]:
    if node.args.get("unpack"):
        raise UnsupportedFeatureError("*COLUMNS(...) (unpacked COLUMNS) is not supported")
    arg = node.this
    if _star(arg) is not None:
        return _expand_star(ctx, scope, arg, bind)
    visible = [(i, c) for i, c in enumerate(scope.columns) if not c.hidden]
    if isinstance(arg, exp.Literal) and arg.is_string:
        try:
            regex = re.compile(arg.this)
        except re.error as e:
            raise ctx.error(f"invalid regular expression {arg.this!r}: {e}", node) from None
        chosen = [(i, c) for i, c in visible if regex.search(c.name)]
        if not chosen:
            raise ctx.error(f"no columns found that match regex {arg.this!r}", node)
    elif isinstance(arg, exp.Array) and arg.expressions and all(
            isinstance(a, exp.Literal) and a.is_string for a in arg.expressions):
        wanted = {a.this.lower(): a for a in arg.expressions}
        for key, literal in wanted.items():
            if not any(c.name.lower() == key for _, c in visible):
                raise ctx.error(f"column {literal.this} was selected by COLUMNS but was not "
                                "found in the FROM clause", literal)
        chosen = [(i, c) for i, c in visible if c.name.lower() in wanted]
    elif isinstance(arg, exp.Lambda):
        raise UnsupportedFeatureError("COLUMNS with a lambda is not supported")
    else:
        raise ctx.error("COLUMNS expects a regular expression (a string), a list of column "
                        "names or *", node)
    return [StarItem(c.name, ColumnRef(i, c.type, c.name), False) for i, c in chosen]
