"""Byte sources and the buffer manager."""

from scan.io.buffer_manager import (BufferManager, default_buffer_manager,
                                    set_default_buffer_manager)
from scan.io.source import ByteSource, LocalFileSource, as_source

__all__ = ["ByteSource", "LocalFileSource", "as_source", "BufferManager",
           "default_buffer_manager", "set_default_buffer_manager"]
