"""The upload's second thread (ringfire.serve.inorder): pieces are worked on in the order put,
no more than the bound wait, an error reaches the producer, and a chunk writer whose file
write fails leaves the upload as it was."""

import hashlib
import threading
import time

import pytest

pytest.importorskip("fastapi")

from ringfire.serve.inorder import InOrder  # noqa: E402
from ringfire.serve.store import Store  # noqa: E402
from serve_support import key_digest_of  # noqa: E402


def test_pieces_are_worked_on_in_order_and_a_digest_matches():
    pieces = [bytes([i % 251]) * (1000 + 37 * i) for i in range(300)]
    digest = hashlib.sha256()
    work = InOrder(digest.update, bound=10_000)
    for piece in pieces:
        work.put(piece)
    work.finish()
    assert digest.hexdigest() == hashlib.sha256(b"".join(pieces)).hexdigest()


def test_a_put_waits_for_room_beyond_the_bound():
    release, seen, most = threading.Event(), [], [0]

    def slow(piece):
        release.wait(5)
        seen.append(len(piece))

    work = InOrder(slow, bound=100)
    producer = threading.Thread(target=lambda: [work.put(b"x" * 60) for _ in range(5)])
    producer.start()
    time.sleep(0.3)
    most[0] = work._queued
    assert producer.is_alive() and most[0] <= 100 + 60  # held back, not queued whole
    release.set()
    producer.join(5)
    work.finish()
    assert seen == [60] * 5


def test_an_error_reaches_the_producer_and_nothing_starts_unused():
    def fail(piece):
        raise OSError("disk full")

    work = InOrder(fail, bound=10)
    work.put(b"a")
    with pytest.raises(OSError, match="disk full"):
        for _ in range(100):
            work.put(b"b")
            time.sleep(0.01)
    with pytest.raises(OSError, match="disk full"):
        work.finish()
    idle = InOrder(fail, bound=10)
    idle.finish()
    assert idle._thread is None


def test_a_failed_chunk_write_leaves_the_upload_where_it_was(tmp_path):
    store = Store(tmp_path / "store")
    up = store.upload("s", "relin", "alice", 1000, "0" * 64)
    assert store.append(up["id"], 0, b"k" * 400) == 400
    writer = store.chunk_writer(up["id"], 400)

    def broken(piece):
        raise OSError("no space left on device")

    writer._writing = InOrder(broken, bound=1 << 20)
    with pytest.raises(OSError, match="no space left"):
        with writer as chunk:
            chunk.write(b"k" * 300)
            chunk.keep()
    assert store.part_path(up["id"]).stat().st_size == 400
    assert store.upload_state("s", "relin")["received"] == 400
    assert store.append(up["id"], 400, b"k" * 600) == 1000  # the upload is free for the next chunk
    assert store.upload_digest(up["id"]) == key_digest_of(b"k" * 1000)
    store.close()
