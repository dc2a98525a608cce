"""Parquet as bytes -> typed column blocks.  Imports nothing of ours.

    from scan import open_parquet
    pf = open_parquet("x.parquet")
    cd = pf.read_column(row_group=0, column=pf.column_index("l_orderkey"))
"""

from scan.errors import (AuthenticationError, FileFormatError, PqdbError,
                         PqdbIOError, UnsupportedFeatureError)
from scan.io import BufferManager, ByteSource, LocalFileSource, default_buffer_manager
from scan.metadata import ColumnChunkInfo, ColumnInfo, FileMetadata, RowGroupInfo
from scan.column_data import ColumnData
from scan.reader import ParquetFile, open_parquet


def views_to_pylist(views, heap, nulls=None):
    """Decode (n, 2) string views to a list of bytes / None (tests, debugging)."""
    from scan.views import views_to_pylist as _impl
    return _impl(views, heap, nulls)


__all__ = [
    "open_parquet", "ParquetFile", "ColumnData", "ColumnInfo", "ColumnChunkInfo",
    "RowGroupInfo", "FileMetadata", "ByteSource", "LocalFileSource", "BufferManager",
    "default_buffer_manager", "views_to_pylist", "PqdbError", "PqdbIOError",
    "FileFormatError", "UnsupportedFeatureError", "AuthenticationError",
]
