"""The wire between the process that owns a collection's index and the processes it serves.

A message is a 4-byte big-endian length and that many bytes of UTF-8 JSON holding one object. Arrays travel as
base64 of their float32 bytes with their shape; filters and hits as plain JSON, a lexical search's hits as an
object of field → hits (each field's own ranking, never merged on the way), a query's term statistics as an object of
field → {chunks, terms: [[term, counted, chunks], ...]}. Nothing is ever unpickled: the
socket is private to its user (mode 0600, peer credentials checked), and even so a message can only ever
become data. A frame longer than `MAX_FRAME` or anything but a JSON object is a protocol error.
"""

from __future__ import annotations

import base64
import json
import socket
import struct
from collections.abc import Callable
from typing import Any

import numpy as np

from tracerag.engine import EngineHit, FieldHits, FieldStats, TermStats
from tracerag.model import Filter

MAX_FRAME = 64 * 1024 * 1024  # a reply of 100k hits is ~10 MB; anything near this is not ours
_HEADER = struct.Struct(">I")


class WireClosed(ConnectionError):
    """The other end closed the connection (it exited, was killed, or handed the index over)."""


class WireError(ValueError):
    """A message that is not what the protocol allows."""


def send(sock: socket.socket, message: dict[str, Any]) -> None:
    data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if len(data) > MAX_FRAME:
        raise WireError(f"message of {len(data)} bytes is over the {MAX_FRAME}-byte limit")
    sock.sendall(_HEADER.pack(len(data)) + data)


def recv(sock: socket.socket, idle: Callable[[], None] | None = None) -> dict[str, Any]:
    """Read one message. With a socket timeout set, `idle` is called at each timeout while waiting (it may
    raise to give up): the caller's chance to show that it waits, or to stop. Without `idle` a timeout raises."""
    (length,) = _HEADER.unpack(_read(sock, _HEADER.size, idle))
    if length > MAX_FRAME:
        raise WireError(f"frame of {length} bytes is over the {MAX_FRAME}-byte limit")
    try:
        message = json.loads(_read(sock, length, idle).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WireError(f"not a JSON message: {exc}") from None
    if not isinstance(message, dict):
        raise WireError("a message must be a JSON object")
    return message


def _read(sock: socket.socket, n: int, idle: Callable[[], None] | None) -> bytes:
    parts: list[bytes] = []
    got = 0
    while got < n:
        try:
            part = sock.recv(min(n - got, 1 << 20))
        except TimeoutError:
            if idle is None:
                raise
            idle()
            continue
        if not part:
            raise WireClosed("connection closed")
        parts.append(part)
        got += len(part)
    return b"".join(parts)


# -- values -------------------------------------------------------------------------------------------------


def encode_array(array: np.ndarray) -> dict[str, Any]:
    a = np.ascontiguousarray(array, dtype=np.float32)
    return {"f32": base64.b64encode(a.tobytes()).decode("ascii"), "shape": list(a.shape)}


def decode_array(value: Any) -> np.ndarray:
    if not isinstance(value, dict) or not isinstance(value.get("f32"), str) or not isinstance(value.get("shape"), list):
        raise WireError("an array is {'f32': base64, 'shape': [...]}")
    shape = value["shape"]
    if not all(isinstance(n, int) and n >= 0 for n in shape) or len(shape) > 2:
        raise WireError(f"bad array shape {shape!r}")
    try:
        raw = base64.b64decode(value["f32"], validate=True)
    except ValueError:
        raise WireError("array data is not base64") from None
    if len(raw) != 4 * int(np.prod(shape, dtype=np.int64)):
        raise WireError(f"array data of {len(raw)} bytes does not fit shape {shape}")
    return np.frombuffer(raw, dtype=np.float32).reshape(shape)


_FILTER_TUPLES = ("corpora", "languages", "doc_ids")


def encode_filter(flt: Filter | None) -> dict[str, Any] | None:
    if flt is None:
        return None
    return {
        "corpora": list(flt.corpora),
        "date_from": flt.date_from,
        "date_to": flt.date_to,
        "languages": list(flt.languages),
        "fields": [[k, v] for k, v in flt.fields],
        "doc_ids": list(flt.doc_ids),
    }


def decode_filter(value: Any) -> Filter | None:
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) - {*_FILTER_TUPLES, "date_from", "date_to", "fields"}:
        raise WireError(f"bad filter {value!r:.200}")
    for key in _FILTER_TUPLES:
        if not all(isinstance(x, str) for x in value.get(key, [])):
            raise WireError(f"filter {key} must be a list of strings")
    for key in ("date_from", "date_to"):
        if value.get(key) is not None and not isinstance(value[key], str):
            raise WireError(f"filter {key} must be a string")
    fields = value.get("fields", [])
    if not all(isinstance(f, list) and len(f) == 2 and isinstance(f[0], str) for f in fields):
        raise WireError("filter fields must be [key, value] pairs")
    return Filter(
        corpora=tuple(value.get("corpora", [])),
        date_from=value.get("date_from"),
        date_to=value.get("date_to"),
        languages=tuple(value.get("languages", [])),
        fields=tuple((k, v) for k, v in fields),
        doc_ids=tuple(value.get("doc_ids", [])),
    )


def encode_hits(hits: list[EngineHit]) -> list[list[Any]]:
    return [[h.chunk_id, h.doc_id, h.score] for h in hits]


def decode_hits(value: Any) -> list[EngineHit]:
    if not isinstance(value, list):
        raise WireError("hits must be a list")
    try:
        return [EngineHit(str(c), str(d), float(s)) for c, d, s in value]
    except (TypeError, ValueError):
        raise WireError("a hit is [chunk_id, doc_id, score]") from None


def encode_field_hits(found: FieldHits) -> dict[str, list[list[Any]]]:
    return {field: encode_hits(hits) for field, hits in found.items()}


def decode_field_hits(value: Any) -> FieldHits:
    if not isinstance(value, dict) or not all(isinstance(f, str) for f in value):
        raise WireError("field hits must be an object of field name → hits")
    return {field: decode_hits(hits) for field, hits in value.items()}


def encode_field_stats(stats: dict[str, FieldStats]) -> dict[str, dict[str, Any]]:
    return {
        field: {"chunks": s.chunks, "terms": [[t.term, t.counted, t.chunks] for t in s.terms]}
        for field, s in stats.items()
    }


def decode_field_stats(value: Any) -> dict[str, FieldStats]:
    if not isinstance(value, dict) or not all(isinstance(f, str) and isinstance(s, dict) for f, s in value.items()):
        raise WireError("field stats must be an object of field name → {chunks, terms}")
    stats: dict[str, FieldStats] = {}
    for field, item in value.items():
        chunks, terms = item.get("chunks"), item.get("terms")
        if not _count(chunks) or not isinstance(terms, list):
            raise WireError(f"field stats of {field!r:.40} must be {{chunks: int >= 0, terms: [...]}}")
        parsed = []
        for term in terms:
            if not (
                isinstance(term, list) and len(term) == 3 and isinstance(term[0], str) and all(map(_count, term[1:]))
            ):
                raise WireError("a term's stats are [term, counted, chunks]")
            parsed.append(TermStats(term[0], term[1], term[2]))
        stats[field] = FieldStats(chunks, tuple(parsed))
    return stats


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
