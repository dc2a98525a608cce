"""Vectorized expression evaluation (bound planner.expressions over Blocks).

    evaluate(expr, block) -> Vector
    evaluate_predicate(expr, block) -> bool ndarray (rows where expr is TRUE)
    literal_vector(value, type, n) -> Vector
    cast_vector(vector, type) -> Vector
"""

from engine.expr.evaluate import evaluate, evaluate_predicate, truth
from engine.expr.vectors import literal_vector


def __getattr__(name):
    if name == "cast_vector":           # its kernels load numba: imported on first use
        from engine.expr.cast import cast_vector
        return cast_vector
    raise AttributeError(f"module 'engine.expr' has no attribute {name!r}")

__all__ = ["evaluate", "evaluate_predicate", "literal_vector", "cast_vector", "truth"]
