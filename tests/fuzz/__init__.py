"""Differential SQL fuzzing of pqdb against DuckDB (see runner.py)."""
