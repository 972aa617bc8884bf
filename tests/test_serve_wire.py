"""The service's tensor container read from the pieces a socket delivers (ringfire.serve.wire):
any cut of a body reads as the body itself, a short or long body is refused with the place it
went wrong, and a ciphertext over the limit is refused before its bytes are gathered."""

import asyncio
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ringfire as rf
from ringfire.serve import wire
from ringfire.serve.watchers import Watchers


@pytest.fixture(scope="module")
def toy():
    ctx = rf.ckks.Context.preset("N13_D2")
    sk, _ = ctx.keygen()
    values = np.random.default_rng(3).normal(size=(4, ctx.slots))
    cts = np.empty((2, 3), dtype=object)
    cts.flat[:] = [ctx.encrypt(values[0], sk), None, 1.25, ctx.encrypt(values[1], sk, level=0), None,
                   ctx.encrypt(values[2], sk)]
    parts = wire.tensor_parts(cts, batch=5, packing="inter", period=7, sample_shape=(3, 2),
                              element_slots=[0, 4, 9])
    return ctx, sk, values, parts


def cut(body: bytes, points: list[int]) -> list[bytes]:
    """`body` in pieces at `points` (empty pieces included where points repeat)."""
    edges = [0, *sorted(p % (len(body) + 1) for p in points), len(body)]
    return [body[a:b] for a, b in zip(edges, edges[1:])]


def read(ctx, data):
    return wire.unpack_tensor(data, ctx.load, max_entries=16, max_entry_bytes=ctx._largest_object_bytes())


@settings(max_examples=40)
@given(points=st.lists(st.integers(min_value=0, max_value=2**40), max_size=40))
def test_any_cut_of_a_body_reads_as_the_body(toy, points):
    ctx, sk, values, parts = toy
    body = b"".join(parts)
    whole = read(ctx, body)
    got = read(ctx, iter(cut(body, points)))  # an iterator, as a socket gives them
    assert {k: v for k, v in got.items() if k not in ("cts", "element_slots")} == \
        {k: v for k, v in whole.items() if k not in ("cts", "element_slots")}
    assert got["batch"] == 5 and got["packing"] == "inter" and got["period"] == 7 and got["sample_shape"] == (3, 2)
    assert got["element_slots"].tolist() == [0, 4, 9]
    assert got["cts"].shape == (2, 3)
    assert got["cts"][0, 1] is None and got["cts"][1, 1] is None and got["cts"][0, 2] == 1.25
    for (i, j), v in (((0, 0), values[0]), ((1, 0), values[1]), ((1, 2), values[2])):
        assert got["cts"][i, j].to_bytes() == whole["cts"][i, j].to_bytes()
        assert np.max(np.abs(ctx.decrypt(got["cts"][i, j], sk).real - v)) < 1e-3


def test_the_parts_are_the_body_and_sent_as_they_are(toy):
    ctx, _, _, parts = toy
    assert wire.parts_size(parts) == len(b"".join(parts))
    assert all(isinstance(p, bytes) for p in parts)


@given(sizes=st.lists(st.integers(0, 300), max_size=40), block=st.integers(1, 700))
@settings(max_examples=200, deadline=None)
def test_blocks_are_the_parts_joined_in_order_and_bounded(sizes, block):
    parts = [bytes([i % 251]) * n for i, n in enumerate(sizes)]
    blocks = wire.Blocks(parts, block)
    sent = list(blocks)
    assert b"".join(sent) == b"".join(parts)
    assert list(blocks) == sent  # iterable again, for a retried request
    # A part of `block` bytes or more goes alone and uncopied; the rest are joined, and a
    # joined block is smaller than `block` plus the part that closed it.
    large = [p for p in parts if len(p) >= block]
    assert [b for b in sent if any(b is p for p in large)] == large
    assert all(len(b) < 2 * block for b in sent if not any(b is p for p in large))


def test_blocks_send_each_large_envelope_alone_and_uncopied(toy):
    _, _, _, parts = toy
    envelopes = [p for p in parts if len(p) > 1024]
    sent = list(wire.Blocks(parts, block=1024))
    # Every envelope behind its 9-byte entry header: the header waits, goes first, then the
    # envelope itself (not a copy).
    assert sum(any(b is e for e in envelopes) for b in sent) == len(envelopes)
    assert b"".join(sent) == b"".join(parts)
    blocks = list(wire.Blocks(parts))  # a few small ciphertexts: one block of 1 MiB at most
    assert len(blocks) < len(parts) and b"".join(blocks) == b"".join(parts)
    assert read(toy[0], blocks)["batch"] == 5


@pytest.mark.parametrize("short", [1, 9, 100, 5000])
def test_a_short_body_is_refused_with_what_was_missing(toy, short):
    ctx, _, _, parts = toy
    body = b"".join(parts)[:-short]
    with pytest.raises(wire.WireError, match="truncated body"):
        read(ctx, cut(body, [17, 4000, 70000]))


def test_bytes_after_the_last_entry_are_refused(toy):
    ctx, _, _, parts = toy
    with pytest.raises(wire.WireError, match="3 bytes after the last entry"):
        read(ctx, [*parts, b"", b"abc"])


def test_a_ciphertext_over_the_limit_is_refused_before_it_is_gathered(toy):
    ctx, _, _, parts = toy

    def pieces():
        yield from parts[:8]  # the header, the slots, the first entry's kind and length
        raise AssertionError("the reader asked for the ciphertext's bytes")
    with pytest.raises(wire.WireError, match="a ciphertext of .* bytes"):
        wire.unpack_tensor(pieces(), ctx.load, max_entries=16, max_entry_bytes=1000)


@settings(max_examples=20)
@given(points=st.lists(st.integers(min_value=0, max_value=2**40), max_size=20))
def test_a_reply_that_carries_a_tensor_reads_as_its_fields_and_the_tensor(toy, points):
    ctx, _, _, parts = toy
    fields = {"accepted": True, "status": {"state": "awaiting_client", "round": {"number": 2}}}
    body = wire.reply_head(fields) + b"".join(parts)
    head: dict = {}
    got = wire.unpack_reply(iter(cut(body, points)), ctx.load, head, max_entries=16,
                            max_entry_bytes=ctx._largest_object_bytes())
    assert head == fields
    assert [c.to_bytes() for c in got["cts"].flat if c is not None and not isinstance(c, float)] == \
        [c.to_bytes() for c in read(ctx, parts)["cts"].flat if c is not None and not isinstance(c, float)]


def test_a_reply_cut_short_keeps_its_fields_and_a_foreign_one_is_refused(toy):
    ctx, _, _, parts = toy
    limits = {"max_entries": 16, "max_entry_bytes": ctx._largest_object_bytes()}
    head: dict = {}
    body = wire.reply_head({"job": "j", "status": {"state": "done"}}) + b"".join(parts)
    with pytest.raises(wire.WireError, match="truncated body"):
        wire.unpack_reply(body[:-100], ctx.load, head, **limits)
    assert head["status"] == {"state": "done"}  # what arrived before the cut
    for bad, why in ((b"RFT1" + bytes(4), "not a reply"), (b"RFR1\xff\xff\xff\x7f{}", "not a reply"),
                     (b"RFR1\x02\0\0\0[]", "not a JSON object"), (b"RFR1\x02\0\0\0{,", "not JSON")):
        with pytest.raises(wire.WireError, match=why):
            wire.unpack_reply(bad + b"".join(parts), ctx.load, {}, **limits)


def test_a_watched_job_wakes_its_reader_from_another_thread():
    watchers = Watchers()

    async def main():
        with watchers.watching("job-1") as changed:
            threading.Timer(0.05, watchers.notify, args=("job-1",)).start()
            loop = asyncio.get_running_loop()
            start = loop.time()
            await asyncio.wait_for(changed.wait(), timeout=5)
            return loop.time() - start
    assert asyncio.run(main()) < 1.0
    watchers.notify("job-1")  # nobody watches it now: nothing to wake, no error


def _dropping(parts, keep):
    """A response body that stops with a transport error after `keep` pieces (None: never)."""
    import httpx

    class Dropping(httpx.SyncByteStream):
        def __iter__(self):
            for i, p in enumerate(parts):
                if keep is not None and i == keep:
                    raise httpx.ReadError("connection dropped mid-body")
                yield p
    return Dropping()


def _client_over(handler):
    import httpx

    from ringfire.serve import Client
    client = Client("http://server.test", "token")
    client.http = httpx.Client(base_url="http://server.test", transport=httpx.MockTransport(handler))
    return client


def test_a_result_dropped_mid_body_is_asked_for_again(toy):
    import httpx
    ctx, sk, values, parts = toy
    calls = []

    def handler(request):
        calls.append(request.url.path)
        body = _dropping(parts, keep=9 if len(calls) == 1 else None)  # the first answer breaks off
        return httpx.Response(200, stream=body, headers={"Content-Length": str(wire.parts_size(parts))})
    client = _client_over(handler)
    fields = client.download_tensor("/v1/jobs/j/result", ctx.load, max_entry_bytes=ctx._largest_object_bytes())
    assert calls == ["/v1/jobs/j/result"] * 2
    assert np.max(np.abs(ctx.decrypt(fields["cts"][1, 2], sk).real - values[2])) < 1e-3


def test_a_round_dropped_mid_body_is_left_for_the_next_status_read(toy):
    import httpx

    from ringfire.serve.client import Session
    ctx, sk, _, parts = toy

    def handler(request):
        return httpx.Response(200, stream=_dropping(parts, keep=9),
                              headers={"Content-Length": str(wire.parts_size(parts)),
                                       "X-Ringfire-Layer": '{"op": "Relu", "name": "r", "attrs": {}, '
                                                           '"shape": [2, 3], "clip": null}'})
    session = Session.__new__(Session)  # only what _answer reads
    session.client, session.ctx, session.packing = _client_over(handler), ctx, "batch"
    assert session._answer("j", 1, {"state": "awaiting_client", "round": {"number": 1}}) == (False, None)


def _replying(ctx, fields: dict, parts, keep):
    """A session (only what _reply reads) and the streamed response of a server whose reply
    carries ``fields`` and the container ``parts``, cut off after ``keep`` pieces (None: whole)."""
    import httpx

    from ringfire.serve.client import Session
    body = [wire.reply_head(fields), *parts]

    def handler(request):
        return httpx.Response(200, stream=_dropping(body, keep=keep),
                              headers={"Content-Type": wire.REPLY_TYPE, "Content-Length": str(wire.parts_size(body))})
    session = Session.__new__(Session)
    session.client, session.ctx = _client_over(handler), ctx
    return session, session.client.request("POST", "/v1/jobs/j/rounds/1", stream=True)


@pytest.mark.parametrize("keep", [0, 1, 9, None])
def test_a_reply_that_carries_data_dropped_mid_body_keeps_its_status(toy, keep):
    """Cut off after its status, a reply gives the status without the data (the round or the
    result is then read by a request of its own); cut off before, the error is raised."""
    import httpx

    ctx, _, _, parts = toy
    session, response = _replying(ctx, {"accepted": True, "status": {"state": "done", "progress": None}}, parts, keep)
    if keep == 0:
        with pytest.raises(httpx.ReadError):
            session._reply(response)
        return
    got = session._reply(response)
    assert got["accepted"] is True and got["status"]["state"] == "done"
    assert ("carried" in got["status"]) == (keep is None)
    if keep is None:
        assert got["status"]["carried"]["cts"].shape == (2, 3)


@pytest.mark.parametrize("fields", [{"accepted": True}, {"status": "done"}, {"status": None}])
def test_a_reply_that_carries_data_without_a_status_is_refused(toy, fields):
    """A server (hostile, or broken) whose reply carries data but no status object: a WireError
    that says so, not a KeyError or TypeError from deep in the client."""
    ctx, _, _, parts = toy
    session, response = _replying(ctx, fields, parts, keep=None)
    with pytest.raises(wire.WireError, match="without its job's status"):
        session._reply(response)


def test_a_body_dripped_in_tiny_pieces_is_kept_in_few_objects():
    from ringfire.serve.app import read_pieces

    cut_up = [b"a"] * 20000 + [bytes(range(256)) * 300] + [b"b"] * 7 + [b"c" * 5000]

    class Dripping:  # what read_pieces reads of a Starlette request
        headers = {"content-length": str(sum(map(len, cut_up)))}

        async def stream(self):
            for piece in cut_up:
                yield piece
    pieces = asyncio.run(read_pieces(Dripping(), 10**6, "test body"))
    assert b"".join(pieces) == b"".join(cut_up)
    assert len(pieces) <= 4


def test_the_client_reads_its_socket_in_large_pieces_unless_the_process_chose(monkeypatch):
    from httpcore._sync.http11 import HTTP11Connection

    from ringfire.serve import Client
    from ringfire.serve.client import HTTPCORE_READ_BYTES, READ_BYTES, read_in_pieces_of
    monkeypatch.setattr(HTTP11Connection, "READ_NUM_BYTES", HTTPCORE_READ_BYTES)
    Client("http://server.test", "token", read_bytes=0).close()  # 0: httpcore's own
    assert HTTP11Connection.READ_NUM_BYTES == HTTPCORE_READ_BYTES
    Client("http://server.test", "token").close()
    assert HTTP11Connection.READ_NUM_BYTES == READ_BYTES == 2**20
    monkeypatch.setattr(HTTP11Connection, "READ_NUM_BYTES", 3 * 2**16)  # the process's own choice stays
    read_in_pieces_of(2**22)
    assert HTTP11Connection.READ_NUM_BYTES == 3 * 2**16
    for bad in (0, 100, 2**27, 1.5, True, "1"):
        with pytest.raises(ValueError, match="read_bytes"):
            read_in_pieces_of(bad)
