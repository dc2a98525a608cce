"""Typed random expressions over a scope of columns.

Kinds: int, dec, dbl (numbers), str, date, ts, bool.  expr(kind) returns SQL
text whose value has that kind in both engines.  What the generator avoids on
purpose is listed in skips.py, each with the reason."""

from __future__ import annotations

import random

from tests.fuzz import skips

NUMERIC = ("int", "dec", "dbl")

_INT_LITS = ["0", "1", "2", "3", "-1", "7", "10", "100", "-5", "2147483647",
             "9223372036854775807", "CAST('-9223372036854775808' AS BIGINT)"]
_DEC_LITS = ["0.5", "1.50", "-2.25", "0.01", "3.0", "100.125", "0.0000000001",
             "99999999999999999999999999.9999999999", "-12345.678"]
_DBL_LITS = ["1.5::DOUBLE", "-2.0::DOUBLE", "0.0::DOUBLE", "-0.0::DOUBLE", "'nan'::DOUBLE",
             "'inf'::DOUBLE", "'-inf'::DOUBLE", "3::DOUBLE", "1e10::DOUBLE", "0.1::DOUBLE"]
_STR_LITS = ["''", "'a'", "'abc'", "'ABC'", "'straße'", "'İx'", "'a%b_c'", "'  pad  '",
             "'Ω≈ç'", "'1'", "'xyz'", "'a longer string past twelve bytes'"]
_DATE_LITS = ["DATE '1995-03-15'", "DATE '2000-02-29'", "DATE '1970-01-01'",
              "DATE '1992-06-30'", "DATE '2024-01-15'", "DATE '0001-01-01'", "DATE '9999-12-31'"]
_TS_LITS = ["TIMESTAMP '1995-03-15 10:20:30'", "TIMESTAMP '2000-01-01 00:00:00'",
            "TIMESTAMP '1970-01-01 00:00:00.000001'"]
_LIKE = ["%", "a%", "%a", "%b%", "a_c", "_", "%\\%%", "%ß%", "A%", "", "%e%", "%a%b%"]
_CASTS = {"int": ["INTEGER", "BIGINT", "SMALLINT", "TINYINT", "HUGEINT"],
          "dec": ["DECIMAL(10,2)", "DECIMAL(18,4)", "DECIMAL(38,10)", "DECIMAL(5,0)",
                  "DECIMAL(20,3)"],
          "dbl": ["DOUBLE", "FLOAT"]}
_TYPED_NULL = {"int": "INTEGER", "dec": "DECIMAL(10,2)", "dbl": "DOUBLE", "str": "VARCHAR",
               "date": "DATE", "ts": "TIMESTAMP", "bool": "BOOLEAN"}


def kind_of(duck_type: str) -> str | None:
    t = duck_type.upper()
    if t in ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
             "UINTEGER", "UBIGINT"):
        return "int"
    if t.startswith("DECIMAL"):
        return "dec"
    if t in ("DOUBLE", "FLOAT"):
        return "dbl"
    if t == "VARCHAR":
        return "str"
    if t == "DATE":
        return "date"
    if t == "TIMESTAMP":
        return "ts"
    if t == "BOOLEAN":
        return "bool"
    return None


class Column:
    def __init__(self, ref: str, kind: str, name: str):
        self.ref, self.kind, self.name = ref, kind, name


class ExprGen:
    """Expressions over ``columns`` (Column list).  ``aggregates``: whether
    an aggregate may appear (grouped SELECT/HAVING); ``bare``: in a grouped
    query, the only bare columns allowed."""

    def __init__(self, rng: random.Random, columns: list[Column], max_depth: int = 3,
                 moderate: bool = False):
        self.rng = rng
        # moderate: no huge magnitudes (the argument of a float sum, skips.FLOAT_SUMS)
        self.moderate = moderate
        if moderate:
            columns = [c for c in columns if c.name not in skips.FLOAT_SUMS]
        self.columns = columns
        self.max_depth = max_depth
        self.aggregates = False
        self.bare: list[Column] | None = None   # grouped: bare columns allowed
        self.subquery = None                     # callable(kind) -> scalar subquery SQL

    # ---- helpers -----------------------------------------------------------
    def _cols(self, kind: str) -> list[Column]:
        pool = self.columns if self.bare is None else self.bare
        return [c for c in pool if c.kind == kind]

    def column(self, kind: str) -> str | None:
        cols = self._cols(kind)
        return self.rng.choice(cols).ref if cols else None

    def literal(self, kind: str) -> str:
        r = self.rng
        if r.random() < 0.05:
            return f"NULL::{_TYPED_NULL[kind]}"
        wide = r.random() >= 0.85 and not self.moderate
        if kind == "int":
            return r.choice(_INT_LITS if wide else _INT_LITS[:9])
        if kind == "dec":
            return r.choice(_DEC_LITS if wide else _DEC_LITS[:6])
        if kind == "dbl":
            return r.choice(_DBL_LITS if not self.moderate else _DBL_LITS[:8])
        if kind == "str":
            return r.choice(_STR_LITS)
        if kind == "date":
            return r.choice(_DATE_LITS[:5])
        if kind == "ts":
            return r.choice(_TS_LITS)
        return r.choice(["true", "false"])

    # ---- entry -------------------------------------------------------------
    def expr(self, kind: str, depth: int = 0) -> str:
        r = self.rng
        leaf = depth >= self.max_depth or r.random() < 0.3 + 0.15 * depth
        if leaf:
            col = self.column(kind)
            if col is not None and r.random() < 0.8:
                return col
            if self.aggregates and r.random() < 0.5:
                agg = self.aggregate(kind)
                if agg is not None:
                    return agg
            return self.literal(kind)
        if self.aggregates and r.random() < 0.35:
            agg = self.aggregate(kind)
            if agg is not None:
                return agg
        if self.subquery is not None and r.random() < 0.05:
            sub = self.subquery(kind)
            if sub is not None:
                return sub
        return getattr(self, "_" + kind)(depth + 1)

    def _common(self, kind: str, depth: int) -> str | None:
        """CASE, COALESCE, NULLIF: any kind."""
        r = self.rng
        x = r.random()
        if x < 0.4:
            n = r.randint(1, 2)
            whens = " ".join(f"WHEN {self.expr('bool', depth)} THEN {self.expr(kind, depth)}"
                             for _ in range(n))
            other = f" ELSE {self.expr(kind, depth)}" if r.random() < 0.7 else ""
            return f"CASE {whens}{other} END"
        if x < 0.75:
            args = ", ".join(self.expr(kind, depth) for _ in range(r.randint(2, 3)))
            return f"coalesce({args})"
        if kind != "bool":
            return f"nullif({self.expr(kind, depth)}, {self.expr(kind, depth)})"
        return None

    def _numeric_operand(self, depth: int, allowed=NUMERIC) -> tuple[str, str]:
        k = self.rng.choice(allowed)
        return self.expr(k, depth), k

    # ---- kinds -------------------------------------------------------------
    def _int(self, d: int) -> str:
        r = self.rng
        x = r.random()
        if x < 0.3:
            op = r.choice(["+", "-", "*"])
            return f"({self.expr('int', d)} {op} {self.expr('int', d)})"
        if x < 0.42:
            op = r.choice(["//", "%"])
            return f"({self.expr('int', d)} {op} {self._divisor('int', d)})"
        if x < 0.5:
            return f"(-{self.expr('int', d)})" if r.random() < 0.5 else f"abs({self.expr('int', d)})"
        if x < 0.58:
            return f"length({self.expr('str', d)})"
        if x < 0.66:
            k = r.choice(["date", "ts"])
            parts = ["year", "month", "day", "dow", "doy", "quarter", "week", "isodow"]
            if k == "ts":
                parts += ["hour", "minute", "second", "millisecond", "microsecond"]
            e = self.expr(k, d)
            if e.startswith("NULL::"):          # skips.EXTRACT_OF_NULL
                e = self.literal(k).replace("NULL::DATE", "DATE '2000-01-01'")
                e = e.replace("NULL::TIMESTAMP", "TIMESTAMP '2000-01-01 00:00:00'")
            return f"extract({r.choice(parts)} FROM {e})"
        if x < 0.72:
            e, k = self._numeric_operand(d, ("int", "dec", "dbl"))
            return f"CAST({e} AS {r.choice(_CASTS['int'])})"
        if x < 0.76:
            a, b = self._date_pair(d)
            return r.choice([f"({a} - {b})", f"date_diff('{r.choice(['day', 'month', 'year'])}', {a}, {b})"])
        return self._common("int", d) or self.literal("int")

    def _divisor(self, kind: str, d: int) -> str:
        """A divisor that is rarely zero (// and % by zero raise in DuckDB)."""
        r = self.rng
        if r.random() < 0.6:
            return r.choice(["2", "3", "-7", "10", "-1"]) if kind == "int" else r.choice(["2.5", "-0.75", "3"])
        return f"nullif({self.expr(kind, d)}, 0)" if r.random() < 0.8 else self.expr(kind, d)

    def _dec(self, d: int) -> str:
        r = self.rng
        x = r.random()
        if x < 0.35:
            op = r.choice(["+", "-", "*"])
            a = self.expr("dec", d)
            b = self.expr(r.choice(["dec", "int"]), d)
            return f"({a} {op} {b})" if r.random() < 0.5 else f"({b} {op} {a})"
        if x < 0.42:
            return f"({self.expr('dec', d)} % {self._divisor('dec', d)})"
        if x < 0.55:
            fn = r.choice(["abs", "round", "floor", "ceil", "neg"])
            e = self.expr("dec", d)
            if fn == "round":
                return f"round({e}, {r.choice(['0', '1', '2', '-1'])})"
            return f"(-{e})" if fn == "neg" else f"{fn}({e})"
        if x < 0.68:
            e = self.expr(r.choice(["int", "dec"]), d)
            return f"CAST({e} AS {r.choice(_CASTS['dec'])})"
        return self._common("dec", d) or self.literal("dec")

    def _dbl(self, d: int) -> str:
        r = self.rng
        if self.moderate:                       # exact terms: skips.FLOAT_SUMS
            return r.choice([f"CAST({self.expr('int', d)} AS DOUBLE)",
                             self.column("dbl") or "1.5::DOUBLE", "-0.25::DOUBLE"])
        x = r.random()
        if x < 0.25:
            a, _ = self._numeric_operand(d)
            if r.random() < 0.15:               # IEEE: x / 0 is inf, -inf or NaN
                return f"({a} / {r.choice(['0', '0.0', '0.0::DOUBLE', '-0.0::DOUBLE'])})"
            b, _ = self._numeric_operand(d)
            return f"({a} / nullif({b}, 0))"    # skips.SIGN_OF_ZERO
        if x < 0.45:
            op = r.choice(["+", "-", "*", "%"])
            return f"({self.expr('dbl', d)} {op} {self._numeric_operand(d)[0]})"
        if x < 0.55:
            fn = r.choice(["abs", "round", "floor", "ceil"])
            e = self.expr("dbl", d)
            return f"round({e}, {r.choice(['0', '1', '2'])})" if fn == "round" else f"{fn}({e})"
        if x < 0.65:
            return f"CAST({self._numeric_operand(d)[0]} AS {r.choice(_CASTS['dbl'])})"
        if x < 0.7:
            return f"({self.expr('dbl', d)} // {self._divisor('dbl', d)})"
        return self._common("dbl", d) or self.literal("dbl")

    def _str(self, d: int) -> str:
        r = self.rng
        x = r.random()
        if x < 0.2:
            return f"{r.choice(['upper', 'lower', 'trim', 'ltrim', 'rtrim'])}({self.expr('str', d)})"
        if x < 0.35:
            start = r.choice(["1", "2", "0", "-2", "5"])
            if r.random() < 0.5:
                return f"substring({self.expr('str', d)}, {start})"
            return f"substring({self.expr('str', d)}, {start}, {r.choice(['0', '1', '3', '10'])})"
        if x < 0.5:
            return f"({self.expr('str', d)} || {self.expr(r.choice(['str', 'str', 'int']), d)})"
        if x < 0.55:
            return f"concat({self.expr('str', d)}, {self.expr('str', d)})"
        if x < 0.68:
            k = r.choice(["int", "dec", "date", "bool", "dbl", "ts"])
            e = self.expr(k, d)
            if k == "dbl":                  # skips.FLOAT_TO_VARCHAR, skips.SIGN_OF_ZERO
                return (f"CASE WHEN CAST({e} AS DOUBLE) = 'nan'::DOUBLE THEN 'nan' "
                        f"ELSE CAST(CAST({e} AS DOUBLE) + 0.0 AS VARCHAR) END")
            return f"CAST({e} AS VARCHAR)"
        return self._common("str", d) or self.literal("str")

    def _date_pair(self, d: int) -> tuple[str, str]:
        return self._safe_date(d), self._safe_date(d)

    def _safe_date(self, d: int) -> str:
        """A DATE that date arithmetic may move."""
        cols = [c.ref for c in self._cols("date")]
        if cols and self.rng.random() < 0.8:
            return self.rng.choice(cols)
        return self.rng.choice(_DATE_LITS[:5])

    def _date(self, d: int) -> str:
        r = self.rng
        x = r.random()
        if x < 0.3:
            return f"({self._safe_date(d)} {r.choice(['+', '-'])} {r.choice(['1', '30', '365'])})"
        if x < 0.45:
            return f"CAST({self.expr('ts', d)} AS DATE)"
        if x < 0.55:
            return f"CAST({r.choice(_STR_LITS[:0] + ['1995-03-15', '2000-02-29'])!r} AS DATE)"
        return self._common("date", d) or self.literal("date")

    def _safe_ts(self, d: int) -> str:
        cols = [c.ref for c in self._cols("ts")]
        return self.rng.choice(cols) if cols and self.rng.random() < 0.8 else self.rng.choice(_TS_LITS)

    def _ts(self, d: int) -> str:
        r = self.rng
        x = r.random()
        unit = r.choice(["DAY", "MONTH", "YEAR", "HOUR", "MINUTE", "SECOND"])
        if x < 0.35:
            base = self._safe_date(d) if r.random() < 0.6 else self._safe_ts(d)
            return f"({base} {r.choice(['+', '-'])} INTERVAL {r.randint(1, 40)} {unit})"
        if x < 0.55:
            part = r.choice(["year", "quarter", "month", "week", "day", "hour", "minute", "second"])
            return f"date_trunc('{part}', {r.choice([self._safe_date(d), self.expr('ts', d)])})"
        if x < 0.65:
            return f"CAST({self._safe_date(d)} AS TIMESTAMP)"
        return self._common("ts", d) or self.literal("ts")

    def comparison(self, d: int) -> str:
        r = self.rng
        kind = r.choice(["int", "dec", "dbl", "str", "date", "int", "dec"])
        op = r.choice(["=", "<>", "<", "<=", ">", ">="])
        a = self.expr(kind, d)
        if kind in NUMERIC and r.random() < 0.4:
            kind = r.choice(NUMERIC)
        return f"({a} {op} {self.expr(kind, d)})"

    def _bool(self, d: int) -> str:
        r = self.rng
        x = r.random()
        if x < 0.3:
            return self.comparison(d)
        if x < 0.42:
            op = r.choice(["AND", "OR"])
            return f"({self.expr('bool', d)} {op} {self.expr('bool', d)})"
        if x < 0.47:
            return f"(NOT {self.expr('bool', d)})"
        if x < 0.55:
            k = r.choice(["int", "dec", "dbl", "str", "date", "bool"])
            return f"({self.expr(k, d)} IS {r.choice(['', 'NOT '])}NULL)"
        if x < 0.63:
            k = r.choice(["int", "dec", "dbl", "str", "date"])
            neg = r.choice(["", "NOT "])
            return f"({self.expr(k, d)} {neg}BETWEEN {self.expr(k, d)} AND {self.expr(k, d)})"
        if x < 0.73:
            k = r.choice(["int", "dec", "dbl", "str", "date"])
            items = ", ".join(self.expr(k, d + 1) if r.random() < 0.3 else self.literal(k)
                              for _ in range(r.randint(1, 4)))
            return f"({self.expr(k, d)} {r.choice(['', 'NOT '])}IN ({items}))"
        if x < 0.83:
            op = r.choice(["LIKE", "NOT LIKE", "ILIKE", "NOT ILIKE"])
            pat = r.choice(_LIKE)
            esc = " ESCAPE '\\'" if "\\" in pat else ""
            return f"({self.expr('str', d)} {op} '{pat}'{esc})"
        if x < 0.86:
            return f"{r.choice(['starts_with', 'contains'])}({self.expr('str', d)}, {r.choice(_STR_LITS[:7])})"
        return self._common("bool", d) or self.literal("bool")

    # ---- aggregates --------------------------------------------------------
    def aggregate(self, kind: str) -> str | None:
        """An aggregate call whose result has ``kind``."""
        r = self.rng
        inner = ExprGen(r, self.columns, max_depth=1)
        if kind == "int":
            x = r.random()
            if x < 0.5:
                return "count(*)"
            k = r.choice(["int", "str", "dbl", "date", "dec"])
            dist = "DISTINCT " if r.random() < 0.3 else ""
            if x < 0.8:
                return f"count({dist}{inner.expr(k)})"
            return f"{r.choice(['min', 'max'])}({inner.expr('int')})"
        if kind in ("dec", "dbl"):
            fn = r.choice(["sum", "min", "max", "avg"] if kind == "dbl" else ["sum", "min", "max"])
            src = kind if fn != "avg" else r.choice(NUMERIC)
            if kind == "dec" and fn == "sum" and r.random() < 0.5:
                src = "dec"
            dist = "DISTINCT " if r.random() < 0.15 else ""
            if fn in ("sum", "avg") and (kind == "dbl" or src == "dbl"):
                inner = ExprGen(r, self.columns, max_depth=1, moderate=True)
                src = "dbl" if fn == "sum" else r.choice(["dbl", "int"])
            return f"{fn}({dist}{inner.expr(src)})"
        if kind in ("str", "date", "ts"):
            return f"{r.choice(['min', 'max'])}({inner.expr(kind)})"
        return None
