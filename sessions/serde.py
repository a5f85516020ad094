"""Compressed checkpoints for the SQLite sessions database.

LangGraph's SQLite saver stores every checkpoint whole: all of the thread's state,
the full message list included, once per checkpointed superstep. Those blobs are
msgpack of mostly text, so zlib shrinks them several times over (about 3x on the
conversations of ``benchmarks/checkpoints.py``) for well under a millisecond per
checkpoint at level 1.

:class:`CompressedSerializer` wraps LangGraph's own serializer: a value is serialized
as before and, when the bytes are large enough to gain, compressed and stored with the
type ``<type>+zlib`` (as LangGraph's ``EncryptedSerializer`` stores ``msgpack+aes``).
Reading accepts both, so a database written before keeps working; an older smart-agent
cannot read the compressed rows. No pickle is involved: the inner serializer is
LangGraph's ``JsonPlusSerializer`` with its defaults.
"""

from __future__ import annotations

import zlib
from typing import Any

from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

SUFFIX = "+zlib"
MIN_BYTES = 512  # smaller values are stored as they are
LEVEL = 1  # zlib's fastest level: most of the gain, a fraction of the time of level 6


class CompressedSerializer(SerializerProtocol):
    """``inner``'s serialization, zlib-compressed from ``min_bytes`` on (type ``<type>+zlib``)."""

    def __init__(self, inner: SerializerProtocol | None = None, *, min_bytes: int = MIN_BYTES, level: int = LEVEL):
        self.inner = inner or JsonPlusSerializer()
        self.min_bytes = min_bytes
        self.level = level

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        kind, data = self.inner.dumps_typed(obj)
        if len(data) < self.min_bytes or kind.endswith(SUFFIX):
            return kind, data
        packed = zlib.compress(data, self.level)
        return (kind + SUFFIX, packed) if len(packed) < len(data) else (kind, data)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        kind, blob = data
        if kind.endswith(SUFFIX):
            return self.inner.loads_typed((kind[: -len(SUFFIX)], zlib.decompress(blob)))
        return self.inner.loads_typed((kind, blob))
