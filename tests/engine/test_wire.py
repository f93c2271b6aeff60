"""A lexical search's per-field hits and a query's per-field term statistics cross the wire as they are (never
merged on the way), and anything else is a protocol error, never a crash or a wrong answer."""

from __future__ import annotations

import json

import pytest

from tracerag.engine import EngineHit, FieldStats, TermStats
from tracerag.engine.wire import (
    WireError,
    decode_field_hits,
    decode_field_stats,
    encode_field_hits,
    encode_field_stats,
)

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


STATS = {
    "en": FieldStats(2, (TermStats("strike", 2, 2), TermStats("grève", 1, 0))),
    "fr": FieldStats(4, ()),
}


def test_field_stats_round_trip_through_json_exactly():
    back = decode_field_stats(json.loads(json.dumps(encode_field_stats(STATS), ensure_ascii=False)))
    assert back == STATS and list(back) == ["en", "fr"]
    assert decode_field_stats({}) == {}


@pytest.mark.parametrize(
    "bad",
    [
        None,
        [],
        {"en": []},
        {"en": {"chunks": "2", "terms": []}},
        {"en": {"chunks": -1, "terms": []}},
        {"en": {"chunks": 2}},
        {"en": {"chunks": 2, "terms": [["strike", 2]]}},
        {"en": {"chunks": 2, "terms": [["strike", True, 2]]}},
        {"en": {"chunks": 2, "terms": [[3, 1, 2]]}},
        {"en": {"chunks": 2, "terms": [["strike", 1, 2.5]]}},
    ],
)
def test_field_stats_of_another_shape_are_a_protocol_error(bad):
    with pytest.raises(WireError):
        decode_field_stats(bad)
