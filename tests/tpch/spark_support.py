"""Helpers shared by the Spark tests: skip cleanly when Spark cannot run."""

from __future__ import annotations

import shutil

import pytest


def require_spark():
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("no Java runtime for Spark")
