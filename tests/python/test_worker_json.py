"""The worker's JSON with and without orjson: the same answers, byte for byte where it matters.

``oloproof.worker`` reads requests with ``orjson.loads`` and writes the replies it builds
itself (retrievals, token counts, rewrites, reranks) with ``orjson.dumps`` when orjson is
importable, falling back to ``json`` for anything orjson refuses or would write differently
(NaN, a UUID or an Enum in a passage's metadata, an integer beyond 64 bits). These tests run
the same request lines through ``serve`` twice, with orjson and with ``json`` alone, and
compare the replies: equal JSON values (floats to the bit), and the same error, word for word.
"""

import enum
import io
import json
import math
import random
import sys
import textwrap
import uuid

import pytest

from oloproof import worker

orjson = pytest.importorskip("orjson")


@pytest.fixture
def system_module(tmp_path, monkeypatch):
    """A system whose passages carry the metadata a request names (``input["meta"]``), from
    a module table (``META``) so a test can put non-JSON values there."""
    (tmp_path / "json_sys.py").write_text(
        textwrap.dedent(
            '''
            from oloproof import Filter, Passage, Retrieval, rag_system

            META = {}

            @rag_system(name="json-sys", version="1", depth=3, top_k=2, lanes=["a", "b"])
            class JsonSys:
                def rewrite(self, input):
                    return [input["question"], input["question"] + " again"]

                def retrieve(self, input, depth, query=None, lane=None):
                    meta = META.get(input.get("meta"))
                    return Retrieval(
                        query=query,
                        depth=depth,
                        candidates=tuple(
                            Passage(doc_id="d%d" % i, score=input.get("score", 1.5) / (i + 1),
                                    text=input.get("text", "t%d" % i), metadata=meta)
                            for i in range(depth)
                        ),
                        filters=[Filter("tenant", "=", input.get("tenant", "acme"))],
                    )

                def rerank(self, input, candidates):
                    return sorted(candidates, key=lambda p: p.doc_id, reverse=True)

                def generate(self, input, context):
                    return {"answer": "a", "citations": [p.doc_id for p in context]}

                def count_tokens(self, passage):
                    return len(passage.text or "")
            '''
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("json_sys", None)
    import json_sys

    return json_sys


class CountingOrjson:
    """orjson, counting the replies it wrote (so a test knows the fast path was taken)."""

    def __init__(self):
        self.dumped = 0
        self.loads = orjson.loads

    def dumps(self, obj):
        out = orjson.dumps(obj)
        self.dumped += 1
        return out


def serve_lines(lines, with_orjson, monkeypatch):
    """The reply lines ``serve`` writes for ``lines`` (bytes each), with or without orjson
    (a ``CountingOrjson`` may be passed as ``with_orjson``)."""
    fast = with_orjson if isinstance(with_orjson, CountingOrjson) else orjson
    monkeypatch.setattr(worker, "_orjson", fast if with_orjson else None)
    out = io.BytesIO()
    worker.serve("json_sys:JsonSys", io.BytesIO(b"".join(line + b"\n" for line in lines)), out)
    return out.getvalue().split(b"\n")[:-1]


def same_json(a, b):
    """Equal JSON values, floats compared to the bit (and ints never equal to floats)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        if a != a or b != b:
            return a != a and b != b
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b))
    return a == b


def requests(inp, candidates=None):
    """One case's request lines, as the host sends them."""
    candidates = candidates or [
        {"doc_id": "d0", "score": 1.5, "text": "t0"},
        {"doc_id": "d1", "score": 0.75, "text": "t1", "metadata": {"k": [1, 2.5, None]}},
    ]
    reqs = [
        {"id": 0, "op": "hello", "protocol": 1, "params": {}},
        {"id": 1, "op": "rewrite_retrieve", "input": inp, "depth": 3, "lanes": ["a", "b"]},
        {"id": 2, "op": "retrieve", "input": inp, "depth": 3, "lane": "a", "query": "q"},
        {"id": 3, "op": "retrieve_batch", "input": inp, "depth": 2,
         "calls": [{"query": "x", "lane": "a"}, {"query": "y", "lane": "b"}]},
        {"id": 4, "op": "rerank", "input": inp, "candidates": candidates},
        {"id": 5, "op": "count_tokens", "passages": candidates},
        {"id": 6, "op": "rewrite", "input": inp},
        {"id": 7, "op": "generate", "input": inp,
         "context": [dict(c, position=i) for i, c in enumerate(candidates)]},
    ]
    return [json.dumps(r, ensure_ascii=False).encode("utf-8") for r in reqs]


def without_timings(value):
    """``value`` without its ``elapsed_ms`` entries, which differ from run to run."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k != "elapsed_ms"}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def assert_same_replies(lines, monkeypatch, counting=None):
    fast = serve_lines(lines, counting or True, monkeypatch)
    plain = serve_lines(lines, False, monkeypatch)
    assert len(fast) == len(plain) == len(lines)
    for f, p in zip(fast, plain):
        fv, pv = json.loads(f), json.loads(p)
        assert same_json(without_timings(fv), without_timings(pv)), (f, p)
    return fast


def test_plain_replies_are_the_same_json_with_orjson(system_module, monkeypatch):
    inp = {"question": "caf\u00e9 \u2028 \"quoted\" \\ \x01", "n": 7, "score": 1e-05, "tenant": "t\u00e9"}
    counting = CountingOrjson()
    replies = assert_same_replies(requests(inp), monkeypatch, counting)
    assert all(b'"error"' not in r for r in replies), replies
    # rewrite_retrieve, retrieve, retrieve_batch, rerank, count_tokens and rewrite went the
    # fast way; hello and generate (the user's own dict) did not.
    assert counting.dumped == 6, counting.dumped


@pytest.mark.parametrize(
    "meta, error",
    [
        (float("nan"), "ValueError"),
        (float("inf"), "ValueError"),
        (uuid.UUID(int=7), "TypeError"),
        (enum.Enum("Color", "red blue").red, "TypeError"),
        ({1, 2}, "TypeError"),
        (2**70, None),
        ("circular", "ValueError"),
        ({1: "int key"}, None),
        ("lone \udc80 surrogate", None),
    ],
)
def test_metadata_orjson_would_write_differently_takes_the_json_path(
    system_module, monkeypatch, meta, error
):
    """orjson writes NaN as null and a UUID or an Enum as a value, where json raises: the
    reply must be json's (the same error), never orjson's quiet conversion."""
    system_module.META["odd"] = {"value": meta}
    if meta == "circular":
        system_module.META["odd"]["value"] = system_module.META["odd"]
    lines = requests({"question": "q", "meta": "odd"})
    if isinstance(meta, str) and meta != "circular":
        # A lone surrogate cannot be written as UTF-8 at all: both ways fail alike.
        for with_orjson in (True, False):
            with pytest.raises(UnicodeEncodeError):
                serve_lines(lines, with_orjson, monkeypatch)
        return
    replies = assert_same_replies(lines, monkeypatch)
    retrieve = json.loads(replies[2])
    if error is None:
        assert "ok" in retrieve, retrieve
    else:
        assert retrieve["error"]["type"] == error, retrieve


def test_request_lines_read_alike(monkeypatch):
    """``_loads`` gives json's value for every line the host can write, or json's error.
    (An integer beyond 64 bits, which orjson reads as a float, is not among them: the host's
    serde_json, without arbitrary precision, holds and writes such a number as a float.)"""
    lines = [
        b'{"a":1,"a":2}',
        b'{"x": [1, 2.5e-7, -0.0, 1e308, 18446744073709551615, -9223372036854775808]}',
        b'{"big": 1.2345678901234568e29, "huge": 1e400}',
        b'{"n": NaN}',
        b'{"s": "\\ud800"}',
        b'{"s": "\\u00e9\\n\\t"}',
        b'{"deep": ' + b"[" * 200 + b"]" * 200 + b"}",
        b"[1, 2",
        b"\xff\xfe",
        b'  {"ws": true}  ',
    ]
    rng = random.Random(20261207)
    for _ in range(300):
        value = {
            "f": rng.choice([rng.uniform(-1e9, 1e9), rng.random() * 10 ** rng.randint(-300, 300), 0.1]),
            "i": rng.randint(-(2**63), 2**64 - 1),
            "s": "".join(chr(rng.choice([rng.randint(0, 0x7F), rng.randint(0x80, 0xD7FF)])) for _ in range(8)),
        }
        lines.append(json.dumps(value, ensure_ascii=rng.random() < 0.5).encode("utf-8"))
    for line in lines:
        try:
            expected = ("ok", json.loads(line.decode("utf-8")))
        except (UnicodeDecodeError, ValueError) as exc:
            expected = ("error", type(exc).__name__, str(exc))
        for with_orjson in (True, False):
            monkeypatch.setattr(worker, "_orjson", orjson if with_orjson else None)
            try:
                got = ("ok", worker._loads(line))
            except (UnicodeDecodeError, ValueError) as exc:
                got = ("error", type(exc).__name__, str(exc))
            assert got[0] == expected[0] and (
                same_json(got[1], expected[1]) if got[0] == "ok" else got == expected
            ), (line[:80], got, expected)


def test_is_plain():
    plain = [None, True, 0, -(2**63), "s", 1.5, [], (), {}, {"a": [1, {"b": (None, 2.0)}]}]
    odd = [float("nan"), float("-inf"), {1: 2}, {"a": {3}}, b"x", uuid.UUID(int=1),
           [object()], {"a": [float("nan")]}, type("S", (str,), {})("sub")]
    assert all(worker._is_plain(v) for v in plain)
    assert not any(worker._is_plain(v) for v in odd)
