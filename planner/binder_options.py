"""read_parquet's option values that are data, not expressions:
``encryption_config = {footer_key: 'name', column_keys: {col: 'name'},
aad_prefix: 'text', check_footer_integrity: false}``.

binder_coverage.check_tree leaves these values to this module (they are
struct literals, refused as expressions); any other shape is an error here.
The config holds key *names* (scan/keys.py): keys never pass the binder.
"""

from __future__ import annotations

from sqlglot import exp

ENCRYPTION_FIELDS = ("footer_key", "column_keys", "aad_prefix", "check_footer_integrity")


def _field_name(node) -> str | None:
    if isinstance(node, (exp.Identifier, exp.Column, exp.Var)):
        return node.name
    if isinstance(node, exp.Literal) and node.is_string:
        return node.this
    return None


def _string(ctx, func, what, node) -> str:
    if isinstance(node, exp.Literal) and node.is_string:
        return node.this
    raise ctx.error(f"{func}() encryption_config {what} takes a string", node)


def _bool(ctx, func, what, node) -> bool:
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Literal) and node.this.lower() in ("true", "false", "1", "0"):
        return node.this.lower() in ("true", "1")
    raise ctx.error(f"{func}() encryption_config {what} takes a boolean", node)


def _entries(ctx, func, what, node) -> list:
    """(name, value node) of a struct literal {name: value, ...}."""
    if not isinstance(node, exp.Struct):
        raise ctx.error(f"{func}() {what} takes a struct {{name: value, ...}}", node)
    out = []
    for item in node.expressions:
        if not isinstance(item, (exp.PropertyEQ, exp.EQ, exp.Slice)):
            raise ctx.error(f"{func}() {what} takes name: value pairs", item)
        name = _field_name(item.this)
        if name is None:
            raise ctx.error(f"{func}() {what}: a field name is an identifier or a string",
                            item)
        out.append((name, item.expression))
    return out


def encryption_config(ctx, func: str, node):
    """The scan.keys.EncryptionConfig of an ``encryption_config`` value."""
    from scan.keys import EncryptionConfig
    footer = aad = None
    columns: list = []
    check = True
    for name, value in _entries(ctx, func, "encryption_config", node):
        field = name.lower()
        if field == "footer_key":
            footer = _string(ctx, func, field, value)
        elif field == "column_keys":
            for col, key in _entries(ctx, func, "encryption_config column_keys", value):
                columns.append((col, _string(ctx, func, f"column_keys.{col}", key)))
        elif field == "aad_prefix":
            aad = _string(ctx, func, field, value).encode("utf-8")
        elif field == "check_footer_integrity":
            check = _bool(ctx, func, field, value)
        else:
            raise ctx.error(f"{func}() encryption_config has no field {name!r} (fields: "
                            + ", ".join(ENCRYPTION_FIELDS) + ")", value)
    return EncryptionConfig(footer, tuple(columns), aad, check)
