"""Random queries: projections, filters, joins of every kind, semi/anti
joins through EXISTS / IN, scalar subqueries, aggregates with GROUP BY and
HAVING, DISTINCT, window functions, set operations, ORDER BY / LIMIT.

generate() returns (sql, ordered): ordered when the outermost ORDER BY sorts
by every output column (a total order up to equal rows).  Cross and
non-equi joins only read the small tables (see tables.py)."""

from __future__ import annotations

import random

from tests.fuzz.gen_expr import Column, ExprGen, kind_of
from tests.fuzz.tables import SMALL, TPCH

SMALL_NAMES = [t for t in SMALL]
TPCH_JOINS = [("orders", "o_orderkey", "lineitem", "l_orderkey"),
              ("customer", "c_custkey", "orders", "o_custkey"),
              ("nation", "n_nationkey", "customer", "c_nationkey"),
              ("region", "r_regionkey", "nation", "n_regionkey"),
              ("nation", "n_nationkey", "supplier", "s_nationkey"),
              ("part", "p_partkey", "partsupp", "ps_partkey"),
              ("supplier", "s_suppkey", "partsupp", "ps_suppkey")]
TPCH_SMALL = ("nation", "region", "supplier")          # few rows: any join shape
TPCH_KEY = {"nation": "n_nationkey", "region": "r_regionkey", "supplier": "s_suppkey",
            "customer": "c_custkey", "part": "p_partkey", "orders": "o_orderkey"}
KINDS = ("int", "dec", "dbl", "str", "date", "bool")


class QueryGen:
    def __init__(self, rng: random.Random, schema: dict):
        self._kinds: list[str] = []
        self._last_kinds: list[str] = []
        self.rng = rng
        self.schema = schema
        self.tpch = all(t in schema for t in TPCH)
        self._alias = 0

    # ---- scopes ------------------------------------------------------------
    def alias(self) -> str:
        self._alias += 1
        return f"x{self._alias}"

    def columns(self, table: str, alias: str) -> list[Column]:
        out = []
        for name, typ in self.schema[table]:
            k = kind_of(typ)
            if k is not None:
                out.append(Column(f"{alias}.{name}", k, name))
        return out

    def small(self) -> str:
        return self.rng.choice(SMALL_NAMES[:3] if self.rng.random() < 0.9 else SMALL_NAMES)

    def exprgen(self, cols, depth=3) -> ExprGen:
        g = ExprGen(self.rng, cols, depth)
        outer = cols
        g.subquery = lambda kind: self.scalar_subquery(kind, outer)
        return g

    # ---- entry -------------------------------------------------------------
    def generate(self) -> tuple[str, bool]:
        self._alias = 0
        r = self.rng
        shape = r.choices(["select", "agg", "join", "semi", "setop", "window", "tpch", "derived",
                           "cte", "nofrom"],
                          [16, 16, 18, 12, 9, 9, 12 if self.tpch else 0, 7, 5, 2])[0]
        return getattr(self, "_" + shape)()

    def _finish(self, select: list[str], body: str, distinct=False, order=None,
                kinds=None) -> tuple[str, bool]:
        """SELECT list + FROM... body, with a total ORDER BY (and LIMIT) or
        none.  kinds: the select list's kinds (for a query that reads this
        one as a derived table), else those of the last _select_list."""
        r = self.rng
        self._last_kinds = list(kinds) if kinds is not None else list(self._kinds)
        items = ", ".join(f"{e} AS c{i}" for i, e in enumerate(select))
        sql = f"SELECT {'DISTINCT ' if distinct else ''}{items} {body}"
        if order is None:
            order = r.random() < 0.4
        if order:
            keys = []
            for i in range(len(select)):
                keys.append(f"{i + 1}{r.choice(['', ' DESC', ' ASC', ' NULLS FIRST', ' DESC NULLS LAST'])}")
            sql += " ORDER BY " + ", ".join(keys)
            if r.random() < 0.5:
                sql += f" LIMIT {r.choice([1, 3, 5, 10, 20])}"
                if r.random() < 0.2:
                    sql += f" OFFSET {r.choice([1, 2, 5])}"
        return sql, order

    def _select_list(self, g: ExprGen, n=None) -> list[str]:
        n = n or self.rng.randint(1, 4)
        self._kinds = [self.rng.choice(KINDS) for _ in range(n)]
        return [g.expr(k) for k in self._kinds]

    def _where(self, g: ExprGen, p=0.6) -> str:
        return f" WHERE {g.expr('bool')}" if self.rng.random() < p else ""

    # ---- shapes ------------------------------------------------------------
    def _select(self):
        t, a = self.small(), self.alias()
        g = self.exprgen(self.columns(t, a))
        return self._finish(self._select_list(g), f"FROM {t} AS {a}{self._where(g)}",
                            distinct=self.rng.random() < 0.15)

    def _agg(self, table=None, body=None, cols=None):
        r = self.rng
        if body is None:
            table, a = self.small(), self.alias()
            cols = self.columns(table, a)
            body = f"FROM {table} AS {a}"
        g = self.exprgen(cols, depth=2)
        where = self._where(g, 0.4)
        keyed = {}
        for _ in range(r.choice([0, 1, 1, 2, 2, 3])):
            kind = r.choice(["int", "str", "date", "bool", "dec", "dbl"])
            k = g.expr(kind, depth=1) if r.random() < 0.3 else (g.column(kind) or g.literal(kind))
            keyed.setdefault(k, kind)
        keys = list(keyed)
        agg = ExprGen(r, cols, 2)
        agg.aggregates = True
        agg.bare = []
        agg_kinds = [r.choice(["int", "dec", "dbl", "str", "date"]) for _ in range(r.randint(1, 3))]
        aggs = [agg.expr(k) for k in agg_kinds]
        agg_kinds = [k if "(" in a else "int" for a, k in zip(aggs, agg_kinds)]
        aggs = [a if "(" in a else f"count({a})" for a in aggs]
        sql_body = body + where
        if keys:
            sql_body += " GROUP BY " + ", ".join(keys)
            if r.random() < 0.3:
                sql_body += f" HAVING {agg.expr('bool')}"
        return self._finish(keys + aggs, sql_body, kinds=list(keyed.values()) + agg_kinds)

    def _join_small(self):
        r = self.rng
        t1, a1, t2, a2 = self.small(), self.alias(), self.small(), self.alias()
        c1, c2 = self.columns(t1, a1), self.columns(t2, a2)
        both = c1 + c2
        g = self.exprgen(both, depth=2)
        kind = r.choice(["inner", "left", "right", "full", "cross", "nonequi", "inner", "left"])
        if kind == "cross":
            body = f"FROM {t1} AS {a1} CROSS JOIN {t2} AS {a2}"
        else:
            jt = {"inner": "JOIN", "left": "LEFT JOIN", "right": "RIGHT JOIN", "full": "FULL JOIN",
                  "nonequi": r.choice(["JOIN", "LEFT JOIN"])}[kind]
            if kind == "nonequi":
                col = r.choice(["i", "d", "dm", "s", "f", "b"])
                cond = f"{a1}.{col} {r.choice(['<', '<=', '>', '<>'])} {a2}.{col}"
            else:
                col = r.choice(["k", "k", "k", "i", "s", "d", "f", "dm", "bo"])
                cond = f"{a1}.{col} = {a2}.{col}"
            if r.random() < 0.3:
                cond += f" AND {g.expr('bool')}"
            body = f"FROM {t1} AS {a1} {jt} {t2} AS {a2} ON {cond}"
        if r.random() < 0.2:
            t3, a3 = self.small(), self.alias()
            c3 = self.columns(t3, a3)
            body += f" {r.choice(['JOIN', 'LEFT JOIN'])} {t3} AS {a3} ON {a3}.k = {a2}.k"
            both = both + c3
            g = self.exprgen(both, depth=2)
        return body, both, g

    def _join(self):
        body, cols, g = self._join_small()
        if self.rng.random() < 0.3:
            return self._agg(body=body, cols=cols)
        return self._finish(self._select_list(g), body + self._where(g, 0.5),
                            distinct=self.rng.random() < 0.1)

    def _semi(self):
        r = self.rng
        t, a = self.small(), self.alias()
        outer = self.columns(t, a)
        g = self.exprgen(outer, depth=2)
        t2, b = self.small(), self.alias()
        inner = self.columns(t2, b)
        gi = ExprGen(r, inner + outer, 2)
        x = r.random()
        if x < 0.5:
            cond = f"{b}.k = {a}.k" if r.random() < 0.8 else f"{b}.i < {a}.i"
            if r.random() < 0.4:
                cond += f" AND {gi.expr('bool')}"
            pred = f"{r.choice(['', 'NOT '])}EXISTS (SELECT 1 FROM {t2} AS {b} WHERE {cond})"
        else:
            col = r.choice(["k", "i", "s", "d", "dm", "f", "b"])
            kind = next(c.kind for c in outer if c.name == col)
            gin = ExprGen(r, inner, 1)
            where = f" WHERE {gin.expr('bool')}" if r.random() < 0.4 else ""
            if r.random() < 0.2:                # correlated IN
                where = (where + " AND " if where else " WHERE ") + f"{b}.bo = {a}.bo"
            item = gin.expr(kind)
            pred = (f"{a}.{col} {r.choice(['', 'NOT '])}IN (SELECT {item} "
                    f"FROM {t2} AS {b}{where})")
        extra = f" AND {g.expr('bool')}" if r.random() < 0.3 else ""
        return self._finish(self._select_list(g), f"FROM {t} AS {a} WHERE {pred}{extra}")

    def _derived(self):
        """SELECT over a subquery in FROM (projection, aggregate or join)."""
        r = self.rng
        inner_sql, _ = r.choice([self._select, self._agg, self._join])()
        inner_sql = inner_sql.split(" ORDER BY ")[0] if " LIMIT " not in inner_sql else inner_sql
        cols = self._output_columns(inner_sql)
        a = self.alias()
        # a derived DATE may hold an edge date: named like t1.dt, arithmetic avoids it
        scope = [Column(f"{a}.{n}", k, "dt" if k == "date" else n) for n, k in cols]
        g = ExprGen(r, scope, 2)
        if r.random() < 0.4:
            return self._agg(body=f"FROM ({inner_sql}) AS {a}", cols=scope)
        return self._finish(self._select_list(g), f"FROM ({inner_sql}) AS {a}{self._where(g, 0.5)}")

    def _cte(self):
        """WITH c AS (an aggregate), joined back to a small table."""
        r = self.rng
        t, a = self.small(), self.alias()
        cols = self.columns(t, a)
        g = ExprGen(r, cols, 2)
        agg = ExprGen(r, cols, 1)
        agg.aggregates, agg.bare = True, []
        kind = r.choice(["int", "dec", "dbl", "str"])
        inner = (f"SELECT {a}.k AS k, {agg.aggregate(kind) or 'count(*)'} AS v FROM {t} AS {a}"
                 f"{self._where(g, 0.4)} GROUP BY {a}.k")
        t2, b = self.small(), self.alias()
        scope = self.columns(t2, b) + [Column("c.v", kind if kind != "int" else "int", "v"),
                                       Column("c.k", "int", "k")]
        g2 = ExprGen(r, scope, 2)
        jt = r.choice(["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"])
        body = f"FROM {t2} AS {b} {jt} c ON c.k = {b}.k{self._where(g2, 0.4)}"
        sql, ordered = self._finish(self._select_list(g2), body)
        return f"WITH c AS ({inner}) {sql}", ordered

    def _nofrom(self):
        g = ExprGen(self.rng, [], 3)
        return self._finish(self._select_list(g), "", order=False)

    def _output_columns(self, sql: str) -> list[tuple[str, str]]:
        """(name, kind) of a generated query's c0.. columns, asked of DuckDB's
        binder is too slow; the kinds are tracked in self._last_kinds."""
        return list(zip([f"c{i}" for i in range(len(self._last_kinds))], self._last_kinds))

    def scalar_subquery(self, kind: str, outer: list[Column]) -> str | None:
        r = self.rng
        t, b = self.small(), self.alias()
        inner = self.columns(t, b)
        g = ExprGen(r, inner, 1)
        agg = g.aggregate(kind)
        if agg is None:
            return None
        keys = [c for c in outer if c.name == "k"]
        if keys and r.random() < 0.7:
            return f"(SELECT {agg} FROM {t} AS {b} WHERE {b}.k = {keys[0].ref})"
        return f"(SELECT {agg} FROM {t} AS {b})"

    def _setop(self):
        r = self.rng
        n = r.randint(1, 3)
        kinds = [r.choice(KINDS) for _ in range(n)]
        parts = []
        for _ in range(2):
            t, a = self.small(), self.alias()
            g = self.exprgen(self.columns(t, a), depth=2)
            sel = []
            for k in kinds:
                kk = r.choice(["int", "dec", "dbl"]) if k in ("int", "dec", "dbl") and r.random() < 0.3 else k
                sel.append(g.expr(kk))
            items = ", ".join(f"{e} AS c{i}" for i, e in enumerate(sel))
            parts.append(f"SELECT {items} FROM {t} AS {a}{self._where(g, 0.5)}")
        op = r.choice(["UNION", "UNION ALL", "INTERSECT", "EXCEPT", "UNION ALL", "INTERSECT ALL",
                       "EXCEPT ALL"])
        sql = f"{parts[0]} {op} {parts[1]}"
        if r.random() < 0.3:
            sql += " ORDER BY " + ", ".join(str(i + 1) for i in range(n))
            return sql, True
        return sql, False

    def _window(self):
        r = self.rng
        if self.tpch and r.random() < 0.2:
            t = r.choice(["nation", "supplier", "customer"])
            a = self.alias()
            key = f"{a}.{TPCH_KEY[t]}"
            part = f"{a}.{dict(nation='n_regionkey', supplier='s_nationkey', customer='c_nationkey')[t]}"
        else:
            t, a = self.small(), self.alias()
            key, part = f"{a}.id", f"{a}.k"
        cols = self.columns(t, a)
        g = self.exprgen(cols, depth=1)
        sel = [key] + self._select_list(g, r.randint(1, 2))
        self._kinds = ["int"] + self._kinds
        for _ in range(r.randint(1, 2)):
            pby = f"PARTITION BY {part} " if r.random() < 0.6 else ""
            fn = r.choice(["row_number", "rank", "dense_rank", "lag", "lead", "first_value",
                           "last_value", "sum", "count", "min", "max", "avg", "count_star"])
            if fn in ("rank", "dense_rank"):
                ob = g.column(r.choice(["int", "str", "date", "dec"])) or key
                sel.append(f"{fn}() OVER ({pby}ORDER BY {ob})")
                continue
            if fn == "row_number":
                sel.append(f"row_number() OVER ({pby}ORDER BY {key})")
                continue
            kind = r.choice(["int", "dec", "dbl"] if fn in ("sum", "avg") else KINDS[:5])
            if fn in ("sum", "avg") and kind == "dbl":      # skips.FLOAT_SUMS
                arg = ExprGen(r, cols, 1, moderate=True).expr("dbl")
            else:
                arg = g.expr(kind)
            if fn in ("lag", "lead"):
                extra = f", {r.choice([1, 2])}" if r.random() < 0.5 else ""
                sel.append(f"{fn}({arg}{extra}) OVER ({pby}ORDER BY {key})")
                continue
            call = "count(*)" if fn == "count_star" else f"{fn}({arg})"
            frame = ""
            if r.random() < 0.4:
                frame = " " + r.choice(["ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING",
                                        "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW",
                                        "ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING",
                                        "ROWS BETWEEN 2 PRECEDING AND CURRENT ROW",
                                        "ROWS BETWEEN 3 PRECEDING AND 1 PRECEDING",
                                        "RANGE BETWEEN 2 PRECEDING AND 1 FOLLOWING",
                                        "RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"])
            ordered = frame or fn in ("first_value", "last_value") or r.random() < 0.6
            ob = f"ORDER BY {key}{frame}" if ordered else ""   # first/last need an order
            sel.append(f"{call} OVER ({pby}{ob})")
        return self._finish(sel, f"FROM {t} AS {a}{self._where(g, 0.3)}")

    def _tpch(self):
        r = self.rng
        if r.random() < 0.5:
            left, lk, right, rk = r.choice(TPCH_JOINS)
            a, b = self.alias(), self.alias()
            jt = r.choice(["JOIN", "JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"])
            body = f"FROM {left} AS {a} {jt} {right} AS {b} ON {a}.{lk} = {b}.{rk}"
            cols = self.columns(left, a) + self.columns(right, b)
        else:
            t, a = r.choice(TPCH), self.alias()
            body, cols = f"FROM {t} AS {a}", self.columns(t, a)
        if r.random() < 0.6:
            return self._agg(body=body, cols=cols)
        g = self.exprgen(cols, depth=2)
        g.subquery = None
        sel = self._select_list(g)
        sql, _ = self._finish(sel, body + self._where(g, 0.8), order=True)
        if " LIMIT " not in sql:
            sql += " LIMIT 50"
        return sql, True
