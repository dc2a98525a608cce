"""Fixtures of the http source tests (test_http_source.py, test_http_open.py)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    """200,000 rows in several row groups (tests.http_server.sample_parquet)."""
    from tests.http_server import sample_parquet
    return sample_parquet(str(tmp_path_factory.mktemp("http") / "sample.parquet"))


@pytest.fixture
def client():
    """An http client with a short timeout and two retries."""
    from scan.io.http import HttpClient
    from scan.io.remote import RemoteSettings
    c = HttpClient(RemoteSettings(timeout=1.0, retries=2))
    yield c
    c.close()
