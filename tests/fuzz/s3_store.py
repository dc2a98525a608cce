"""The fuzzer's files in a bucket of moto's S3 server on 127.0.0.1, for
pqdb to read as s3:// URLs through fsspec's s3fs (``python -m tests.fuzz
--s3``).  The same add/url interface as tests.http_server.HttpServer, so
tables.setup serves either."""

from __future__ import annotations

import logging
import os
from urllib.parse import unquote

BUCKET = "fuzz"


class S3Store:
    def __init__(self):
        self._server = None
        self._client = None
        self._saved: dict = {}

    def start(self) -> "S3Store":
        import boto3
        from moto.server import ThreadedMotoServer
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self._server.start()
        host, port = self._server.get_host_and_port()
        env = {"AWS_ACCESS_KEY_ID": "fuzz", "AWS_SECRET_ACCESS_KEY": "fuzz",
               "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": f"http://{host}:{port}"}
        self._saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        self._client = boto3.client("s3")
        self._client.create_bucket(Bucket=BUCKET)
        return self

    def add(self, name: str, path: str) -> str:
        self._client.upload_file(path, BUCKET, name)
        return self.url(name)

    def url(self, name: str) -> str:
        # tables._serve percent-encodes names for http; an s3 key is the name itself
        return f"s3://{BUCKET}/{unquote(name)}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
        for k, v in self._saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
