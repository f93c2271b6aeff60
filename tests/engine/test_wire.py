"""A lexical search's per-field hits cross the wire as they are (never merged on the way), and anything else
is a protocol error, never a crash or a wrong answer."""

from __future__ import annotations

import json

import pytest

from tracerag.engine import EngineHit
from tracerag.engine.wire import WireError, decode_field_hits, encode_field_hits

FOUND = {
    "fr": [EngineHit("fr1#0", "fr1", 7.25), EngineHit("fr3#0", "fr3", 0.1)],
    "de": [EngineHit("de1#0", "de1", 4.0)],
}


def test_field_hits_round_trip_through_json_exactly():
    back = decode_field_hits(json.loads(json.dumps(encode_field_hits(FOUND))))
    assert back == FOUND and list(back) == ["fr", "de"]
    assert decode_field_hits({}) == {}


@pytest.mark.parametrize(
    "bad",
    [
        [["fr1#0", "fr1", 1.0]],  # a merged list: the old shape
        {"fr": "fr1#0"},
        {"fr": [["fr1#0", "fr1"]]},
        {"fr": [["fr1#0", "fr1", "high"]]},
        None,
    ],
)
def test_anything_else_is_a_protocol_error(bad):
    with pytest.raises(WireError):
        decode_field_hits(bad)
