"""The upload's second thread (ringfire.serve.inorder): pieces are worked on in the order put,
no more than the bound wait, an error reaches the producer, and a chunk writer whose file
write fails leaves the upload as it was."""

import hashlib
import threading
import time

import numpy as np
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


def test_a_direct_write_puts_every_byte_where_it_belongs(tmp_path):
    """directwrite: pieces of odd sizes across the staging buffer, from an aligned offset past
    what the file holds, an unaligned tail; an unaligned offset or a file system without
    O_DIRECT gets no direct writer (the store then writes through the page cache)."""
    import numpy as np

    from ringfire.serve import directwrite

    path = tmp_path / "part"
    path.write_bytes(b"p" * 70_000)
    assert directwrite.open_direct(path, 4097) is None
    writer = directwrite.open_direct(path, 65_536)
    if writer is None:
        pytest.skip("this file system takes no O_DIRECT writes")
    data = np.random.default_rng(5).integers(0, 256, 2 * directwrite.STAGE + 5_000, dtype=np.uint8).tobytes()
    at, step = 0, 1
    while at < len(data):
        lent = bytearray(data[at:at + step])
        writer.write(lent)
        lent[:] = bytes(len(lent))  # the writer copied it
        at, step = at + step, step * 3 + 1
    assert writer.close() == 65_536 + len(data) and writer.close() == 65_536 + len(data)
    assert path.read_bytes() == b"p" * 65_536 + data


def test_a_large_upload_written_past_the_page_cache_is_kept_or_cut_like_any(tmp_path, monkeypatch):
    """A store whose uploads all go past the page cache: chunks kept in order give the key's
    digest; a chunk whose write fails leaves the file and the upload where they were."""
    from ringfire.serve import directwrite, store as store_module

    store = Store(tmp_path / "store")
    store.direct_from = 0
    opened = []
    real = store_module.open_direct
    monkeypatch.setattr(store_module, "open_direct", lambda *a: opened.append(a) or real(*a))
    data = bytes(range(256)) * 5000 + b"tail"  # 1,280,004 bytes: the last chunk ends unaligned
    up = store.upload("s", "relin", "alice", len(data), "0" * 64)
    assert store.append(up["id"], 0, data[:655_360]) == 655_360
    assert opened and (store.part_path(up["id"]).stat().st_size == 655_360)
    writer = store.chunk_writer(up["id"], 655_360)
    direct = writer._direct is not None  # False where the file system takes no O_DIRECT writes

    def broken(piece):
        raise OSError("no space left on device")

    writer._writing = InOrder(broken, bound=1 << 20)
    with pytest.raises(OSError, match="no space left"):
        with writer as chunk:
            chunk.write(data[655_360:])
            chunk.keep()
    assert store.part_path(up["id"]).stat().st_size == 655_360
    assert store.append(up["id"], 655_360, data[655_360:]) == len(data)
    assert store.part_path(up["id"]).read_bytes() == data
    assert store.upload_digest(up["id"]) == key_digest_of(data)
    assert directwrite.DIRECT_FROM == directwrite.STAGE  # uploads smaller than a stage stay in the page cache
    store.close()
    if not direct:
        pytest.skip("this file system takes no O_DIRECT writes (the page cache path was tested)")


def test_direct_writers_reuse_their_staging_buffers(tmp_path):
    """A chunk's staging buffer goes to the next chunk (fresh memory is what is slow to touch),
    at most SPARE_STAGES of them are kept, and a reused buffer's old bytes never reach a file."""
    from ringfire.serve import directwrite

    directwrite._spare.clear()
    path = tmp_path / "part"
    path.write_bytes(b"")
    first = directwrite.open_direct(path, 0)
    if first is None:
        pytest.skip("this file system takes no O_DIRECT writes")
    stage = first._stage
    first.write(b"\xff" * (directwrite.STAGE - 5))
    assert first.close() == directwrite.STAGE - 5
    assert directwrite._spare == [stage]
    second = directwrite.open_direct(path, 0)
    assert second._stage is stage and directwrite._spare == []
    second.write(b"ab" * 3000)
    assert second.close() == 6000
    assert path.read_bytes()[:6000] == b"ab" * 3000
    writers = [directwrite.open_direct(path, 0) for _ in range(directwrite.SPARE_STAGES + 2)]
    for w in writers:
        w.close()
    assert len(directwrite._spare) == directwrite.SPARE_STAGES


def test_a_file_system_that_refuses_direct_writes_gets_them_through_the_page_cache(tmp_path, monkeypatch):
    """O_DIRECT accepted at open but its writes refused (EINVAL): the writer goes on through the
    page cache from where it was, and the file holds every byte."""
    import errno
    import os

    from ringfire.serve import directwrite

    path = tmp_path / "part"
    path.write_bytes(b"x" * 8192)
    writer = directwrite.open_direct(path, 8192)
    if writer is None:
        pytest.skip("this file system takes no O_DIRECT writes")
    refused, real = [], os.pwrite

    def pwrite(fd, data, offset):
        if writer.direct and fd == writer._fd:
            refused.append(offset)
            raise OSError(errno.EINVAL, "Invalid argument")
        return real(fd, data, offset)

    monkeypatch.setattr(directwrite.os, "pwrite", pwrite)
    data = np.random.default_rng(5).integers(0, 256, 2 * directwrite.STAGE + 777, dtype=np.uint8).tobytes()
    writer.write(data[:5000])
    writer.write(data[5000:])
    assert writer.close() == 8192 + len(data)
    assert refused == [8192] and not writer.direct
    assert path.read_bytes() == b"x" * 8192 + data
