"""Parquet as bytes -> typed column blocks.  Imports nothing of ours."""
