"""What a server keeps, and for how long: a session ends when its client closes it or after it
sat unused, results expire, keys no session links go when unused or when an upload needs their
room, so that a tenant's limits (sessions, stored bytes) never lock it out for good. Servers on
loopback, bounded in requests and time."""

import dataclasses
import json
import sqlite3
import time

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")
pytest.importorskip("onnx")

from ringfire.serve import Client, ServeConfig, ServerError  # noqa: E402
from nn_models import mlp_bytes, ort_run  # noqa: E402
from serve_support import batch, server_thread, tokens_file  # noqa: E402


@pytest.fixture
def config(tmp_path):
    model = tmp_path / "mlp.onnx"
    model.write_bytes(mlp_bytes((16, 8, 4)))
    return ServeConfig(model=str(model), store=str(tmp_path / "store"), tokens=str(tmp_path / "tokens"),
                       preset="N13_D2", requests_per_second=400, sweep_every=0.05)


@pytest.fixture
def tokens(config):
    return tokens_file(config.tokens)


def db(config):
    return sqlite3.connect(f"{config.store}/state.sqlite")


def uploaded(app) -> float:
    return app.state.metrics.uploaded._value.get()


def test_a_closed_session_is_gone_with_its_results_and_its_keys_serve_the_next_one(config, tokens):
    x = batch(2, 16, seed=1)
    with server_thread(config) as (url, app), Client(url, tokens["alice"]) as client:
        ctx = client.context("mlp")
        sk, keys = ctx.keygen()
        with client.session("mlp", ctx, sk, keys, progress=False) as session:
            job = session.submit(ctx.encrypt_batch(x, sk))
            session.wait(job)
            sid = session.id
        assert session.closed
        assert client.request("GET", f"/v1/sessions/{sid}", expect=(404,)).status_code == 404
        assert client.request("GET", f"/v1/jobs/{job}", expect=(404,)).status_code == 404
        assert not list((app.state.store.root / "results").glob(f"{job}*"))
        session.close()  # twice: harmless
        before = uploaded(app)
        again = client.session("mlp", ctx, sk, keys, progress=False)  # the same keys: linked, not sent
        assert again.key_state == {"relin": "linked"} and uploaded(app) == before
        got = again.infer(x, progress=False)
        assert np.max(np.abs(got - ort_run(open(config.model, "rb").read(), x))) < 1e-3
        assert app.state.metrics.sessions_closed.labels("client")._value.get() == 1


def test_closing_a_session_stops_its_job_and_frees_a_place_under_the_limit(config, tokens):
    config = dataclasses.replace(config, tenant_sessions=2)
    with server_thread(config) as (url, app), Client(url, tokens["alice"]) as client:
        first = client.session("mlp", progress=False)
        second = client.session("mlp", first.ctx, first.secret_key, first.keys, progress=False)
        with pytest.raises(ServerError, match="close one") as refused:
            client.request("POST", "/v1/sessions", expect=(201,), retries=0,
                           json={"model": "mlp", "fingerprint": first.info["parameters"]["fingerprint"]})
        assert refused.value.status == 429
        second.inline = False
        job = second.submit(second.ctx.encrypt_batch(batch(2, 16), second.secret_key))
        for _ in range(100):  # waiting for its client-aided round, which nobody answers
            if client.request("GET", f"/v1/jobs/{job}").json()["state"] == "awaiting_client":
                break
            time.sleep(0.05)
        reply = client.request("DELETE", f"/v1/sessions/{second.id}").json()
        assert reply["jobs_stopped"] == 1
        for _ in range(100):  # the worker lets the job go
            if app.state.runner.live(job) is None or app.state.runner.live(job).state == "failed":
                break
            time.sleep(0.05)
        third = client.session("mlp", first.ctx, first.secret_key, first.keys, progress=False)
        assert third.infer(batch(1, 16), progress=False).shape == (1, 4)


def test_a_tenant_at_its_limit_lists_the_sessions_it_lost_track_of_and_closes_them(config, tokens):
    config = dataclasses.replace(config, tenant_sessions=3)
    with server_thread(config) as (url, _), Client(url, tokens["alice"]) as client:
        kept = client.session("mlp", progress=False)
        kept.inline = False
        job = kept.submit(kept.ctx.encrypt_batch(batch(2, 16), kept.secret_key))  # under way: never closed
        deadline = time.monotonic() + 30  # waiting for its client: its last change before the next sessions
        while client.request("GET", f"/v1/jobs/{job}").json()["state"] != "awaiting_client":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        lost = [client.session("mlp", kept.ctx, kept.secret_key, kept.keys, progress=False).id for _ in range(2)]
        with pytest.raises(ServerError, match="GET /v1/sessions lists them") as refused:
            client.request("POST", "/v1/sessions", expect=(201,), retries=0,
                           json={"model": "mlp", "fingerprint": kept.info["parameters"]["fingerprint"]})
        assert refused.value.status == 429
        listed = client.sessions()
        assert [s["id"] for s in listed] == [kept.id, *lost]  # least recently used first
        assert [s["jobs_under_way"] for s in listed] == [1, 0, 0]
        assert client.close_sessions(unused_for=3600) == []  # none unused that long
        assert sorted(client.close_sessions()) == sorted(lost)
        assert [s["id"] for s in client.sessions()] == [kept.id]
        assert client.session("mlp", kept.ctx, kept.secret_key, kept.keys, progress=False).key_state == \
            {"relin": "linked"}
        assert client.sessions()[0]["id"] == kept.id and kept.wait(job).cts.size == 4
        with pytest.raises(ServerError, match="open a new one") as gone:  # a closed session's id says why
            client.request("GET", f"/v1/sessions/{lost[0]}")
        assert gone.value.status == 404


def test_an_unused_session_is_closed_and_a_result_expires_but_work_under_way_is_kept(config, tokens):
    config = dataclasses.replace(config, session_idle=0.6, result_ttl=0.3)
    with server_thread(config) as (url, app), Client(url, tokens["alice"]) as client:
        idle = client.session("mlp", progress=False)
        busy = client.session("mlp", idle.ctx, idle.secret_key, idle.keys, progress=False)
        done = busy.submit(busy.ctx.encrypt_batch(batch(2, 16), busy.secret_key))
        busy.wait(done)
        busy.inline = False
        waiting = busy.submit(busy.ctx.encrypt_batch(batch(2, 16), busy.secret_key))
        time.sleep(1.5)  # both sessions unused past session_idle; one has a job waiting for its client
        assert client.request("GET", f"/v1/sessions/{idle.id}", expect=(404,)).status_code == 404
        assert client.request("GET", f"/v1/sessions/{busy.id}").status_code == 200
        expired = client.request("GET", f"/v1/jobs/{done}/result", expect=(410,))
        assert "deleted" in expired.json()["error"] and "keeps results 0.3 s" in expired.json()["error"]
        assert busy.wait(waiting).cts.size == 4  # the job under way goes on, its result fetched at once
        assert app.state.metrics.sessions_closed.labels("idle")._value.get() == 1


def test_a_session_is_in_use_while_its_jobs_move_on(tmp_path):
    """A session's idle time counts from the last request that named it or the last change of
    one of its jobs, whichever came later: a job that ran (or waited for its client) past the
    idle time does not leave its session to be closed the moment it ends."""
    from ringfire.serve.store import Store

    store = Store(tmp_path / "store")
    sid = store.create_session("alice", "mlp", "f")
    jid, _ = store.create_job("alice", sid, None)
    long_ago = time.time() - 3600
    store._q("update sessions set created = ?, used = ? where id = ?", (long_ago, long_ago, sid))
    store._q("update jobs set created = ?, updated = ? where id = ?", (long_ago, long_ago, jid))
    assert store.idle_sessions(time.time() - 60) == []  # a job under way
    store.set_job(jid, "done")  # it ends now
    assert store.idle_sessions(time.time() - 60) == []
    assert store.close_session(sid, idle_before=time.time() - 60) is None
    assert store.sessions_of("alice")[0]["used"] > time.time() - 60
    store._q("update jobs set updated = ? where id = ?", (long_ago, jid))
    assert store.idle_sessions(time.time() - 60) == [(sid, "alice")]
    assert store.close_session(sid, idle_before=time.time() - 60) == {"jobs_stopped": [], "results_deleted": 0}
    store.close()


def test_a_client_whose_session_the_server_closed_opens_it_again_with_the_same_keys(config, tokens):
    """A long-lived client that sat idle past ``session_idle``: its next inference opens the
    session again (the keys linked, not sent) and runs; a session the client closed itself
    stays closed."""
    config = dataclasses.replace(config, session_idle=0.5)
    x = batch(2, 16, seed=6)
    with server_thread(config) as (url, app), Client(url, tokens["alice"]) as client:
        session = client.session("mlp", progress=False)
        first = session.id
        session.infer(x, progress=False)
        sent = uploaded(app)
        time.sleep(1.2)
        assert client.request("GET", f"/v1/sessions/{first}", expect=(404,)).headers["x-ringfire-unknown"] \
            == "session"
        got = session.infer(x, progress=False)
        assert session.id != first and session.key_state == {"relin": "linked"} and uploaded(app) == sent
        assert np.max(np.abs(got - ort_run(open(config.model, "rb").read(), x))) < 1e-3
        session.close()
        with pytest.raises(ServerError) as closed:
            session.infer(x, progress=False)
        assert closed.value.status == 404 and closed.value.unknown == "session"


def test_keys_no_session_links_make_room_for_an_upload_and_expire_when_unused(config, tokens):
    key_bytes = 586921  # N13_D2's relinearization key, as sent
    beside = 1572864 + 65536  # its image, expanded, reserved when the upload starts
    config = dataclasses.replace(config, tenant_bytes=int(1.5 * (key_bytes + beside)))
    with server_thread(config) as (url, app), Client(url, tokens["alice"]) as client:
        first = client.session("mlp", progress=False)
        assert first.key_state == {"relin": "uploaded"}
        # Its keys linked by an open session: another key set has no room.
        with pytest.raises(ServerError, match="close sessions") as refused:
            client.session("mlp", progress=False)
        assert refused.value.status == 413
        first.close()
        # Unlinked now: they go to make room for the next key set.
        second = client.session("mlp", progress=False)
        assert second.key_state == {"relin": "uploaded"}
        assert app.state.metrics.keys_deleted.labels("room")._value.get() == 1
        with db(config) as d:
            assert d.execute("select count(*) from blobs").fetchone()[0] == 1
    config = dataclasses.replace(config, key_idle=0.3, tenant_bytes=64 * 2**30)
    with server_thread(config) as (url, app), Client(url, tokens["alice"]) as client:
        kept = client.session("mlp", progress=False)  # a second key set, linked: never deleted
        time.sleep(1.0)
        with db(config) as d:  # the first server's session ended with it unclosed: still linked
            assert d.execute("select count(*) from blobs").fetchone()[0] == 2
        for sid, in db(config).execute("select id from sessions where id != ?", (kept.id,)).fetchall():
            client.request("DELETE", f"/v1/sessions/{sid}")
        for _ in range(60):
            with db(config) as d:
                if d.execute("select count(*) from blobs").fetchone()[0] == 1:
                    break
            time.sleep(0.1)
        with db(config) as d:
            assert d.execute("select sha256 from blobs").fetchall() == \
                d.execute("select sha256 from session_keys where session = ?", (kept.id,)).fetchall()
        assert kept.infer(batch(1, 16), progress=False).shape == (1, 4)


def test_key_images_count_against_the_tenants_stored_bytes(config, tokens):
    """What the server keeps beside a tenant's keys (their mapped images, expanded) is the
    tenant's disk too: counted with the keys, so that an upload the keys alone would leave room
    for is refused while they are linked, and freed with them when they make room."""
    with server_thread(config) as (url, app), Client(url, tokens["alice"]) as client:
        first = client.session("mlp", progress=False)
        assert app.state.key_checks.wait(60)
        store = app.state.store
        key_bytes = store._q("select size from blobs")[0][0]
        images = list(store.blob_path("alice", "-").parent.glob("*.image"))
        assert len(images) == 1
        image_bytes = images[0].stat().st_size
        assert store.beside_bytes("alice") == image_bytes > 0
        # What an upload reserves for its image from its start, counted until the image is
        # written and while it is the more: the image, and little more.
        reserved = app.state.host.beside_bytes_expected("relin")
        assert image_bytes <= reserved <= 1.1 * image_bytes
        assert store._q("select reserved from blobs")[0][0] == reserved
        assert store.stored_bytes("alice") == key_bytes + reserved
        mine = first.ctx, first.secret_key, first.keys
        first.close()
    # Room for one key set with its image and half an image more: not for a second one beside
    # the first while that one is linked.
    config = dataclasses.replace(config, tenant_bytes=key_bytes + reserved + image_bytes // 2)
    with server_thread(config) as (url, app), Client(url, tokens["alice"]) as client:
        kept = client.session("mlp", *mine, progress=False)  # the same keys: linked, nothing sent
        assert kept.key_state == {"relin": "linked"}
        with pytest.raises(ServerError, match="image and derived keys") as refused:
            client.session("mlp", progress=False)  # new keys
        assert refused.value.status == 413
        kept.close()
        # Unlinked: the key and its image make room together.
        again = client.session("mlp", progress=False)
        assert again.key_state == {"relin": "uploaded"}
        assert app.state.metrics.keys_deleted.labels("room")._value.get() == 1
        assert again.infer(batch(1, 16), progress=False).shape == (1, 4)


def test_an_upload_under_way_holds_its_whole_room(config, tokens):
    """An upload counts against its tenant from its first chunk at its whole size and with what
    it reserves beside it, so that uploads started side by side cannot each find the same room."""
    from ringfire.serve.keydigest import BLOCK, PENDING
    with server_thread(config) as (url, app), Client(url, tokens["alice"]) as client:
        ctx = client.context("mlp")
        data = ctx.keygen()[1].relin.to_bytes()
        reserved = app.state.host.beside_bytes_expected("relin")
    config = dataclasses.replace(config, tenant_bytes=len(data) + reserved + BLOCK)
    with server_thread(config) as (url, app), Client(url, tokens["alice"]) as client:
        fingerprint = client.model("mlp")["parameters"]["fingerprint"]
        sids = [client.request("POST", "/v1/sessions", expect=(201,), json={
            "model": "mlp", "fingerprint": fingerprint}).json()["id"] for _ in range(2)]
        first_chunk = {"content": data[:BLOCK], "headers": {
            "Content-Range": f"bytes 0-{BLOCK - 1}/{len(data)}", "X-Key-Digest": PENDING}}
        started = client.request("PUT", f"/v1/sessions/{sids[0]}/keys/relin", **first_chunk).json()
        assert started["received"] == BLOCK
        assert app.state.store.stored_bytes("alice") == len(data) + reserved
        with pytest.raises(ServerError, match="uploads under way") as refused:
            client.request("PUT", f"/v1/sessions/{sids[1]}/keys/relin", **first_chunk)
        assert refused.value.status == 413
        # Started over in its own session, an upload's earlier start is not counted twice.
        again = client.request("PUT", f"/v1/sessions/{sids[0]}/keys/relin", **first_chunk).json()
        assert again["received"] == BLOCK


def test_a_tenants_room_and_sessions_are_counted_as_one_by_every_process_of_the_store(config, tokens,
                                                                                     monkeypatch):
    """Replicas share one store: an upload's room is counted and taken under a lock every
    process shares (a file lock: another Store on the same folder stands for another process),
    held by one tenant without holding up another, answered 503 with Retry-After past its wait;
    sessions and jobs in flight are counted and added in one statement, so that requests at
    once on several processes never pass the tenant's limits."""
    import concurrent.futures
    import functools

    from ringfire.serve.keydigest import BLOCK, PENDING
    from ringfire.serve.store import Store, TenantBusy

    other = Store(config.store)  # another replica's view of the same store
    with server_thread(config) as (url, app), Client(url, tokens["alice"]) as alice, \
            Client(url, tokens["bob"]) as bob:
        monkeypatch.setattr(app.state.store, "tenant_lock", functools.partial(Store.tenant_lock, app.state.store,
                                                                             wait=0.3))
        data = alice.context("mlp").keygen()[1].relin.to_bytes()
        fingerprint = alice.model("mlp")["parameters"]["fingerprint"]
        chunk = {"content": data[:BLOCK], "headers": {"Content-Range": f"bytes 0-{BLOCK - 1}/{len(data)}",
                                                      "X-Key-Digest": PENDING}}

        def first_chunk(client):
            sid = client.request("POST", "/v1/sessions", expect=(201,), json={"model": "mlp",
                                                                             "fingerprint": fingerprint}).json()["id"]
            return client.request("PUT", f"/v1/sessions/{sid}/keys/relin", retries=0, **chunk)

        with other.tenant_lock("alice"):
            with pytest.raises(TenantBusy, match="more than 0.1 s"):
                with app.state.store.tenant_lock("alice", wait=0.1):
                    pass
            with pytest.raises(ServerError, match="stored bytes are being counted|more than 0.3 s") as busy:
                first_chunk(alice)
            assert busy.value.status == 503
            assert first_chunk(bob).json()["received"] == BLOCK  # another tenant's lock
        assert first_chunk(alice).json()["received"] == BLOCK
    with pytest.raises(TenantBusy):  # a thread of the same process waits its turn too
        with other.tenant_lock("carol"), other.tenant_lock("carol", wait=0.05):
            pass
    stores = [other, Store(config.store)]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        made = list(pool.map(lambda i: stores[i % 2].create_session("dave", "mlp", "f", most=5), range(24)))
    assert sum(sid is not None for sid in made) == 5 == other.count_sessions("dave")
    with concurrent.futures.ThreadPoolExecutor(8) as pool:  # jobs in flight likewise
        jobs = list(pool.map(lambda i: stores[i % 2].create_job("dave", made[0] or "s", None, most=3), range(24)))
    assert sum(created for _, created in jobs) == 3 == other.jobs_in_flight("dave")
    for store in stores:
        store.close()


def test_files_of_no_stored_key_are_swept_once_old(config, tokens):
    """An image written while its key was deleted, or a temporary file a crash left, belongs to
    no stored key but counts against its tenant's bytes: the retention sweep deletes such files
    once they are an hour old (a younger one may be being written), and never a kept key's."""
    import os

    from ringfire.serve.retention import ORPHAN_GRACE
    with server_thread(config) as (url, app), Client(url, tokens["alice"]) as client:
        with client.session("mlp", progress=False) as session:
            assert app.state.key_checks.wait(60)
            store = app.state.store
            folder = store.blob_path("alice", "-").parent
            kept = sorted(p.name for p in folder.iterdir())
            assert len(kept) == 2  # the key and its image
            old = time.time() - ORPHAN_GRACE - 60
            orphans = [folder / ("0" * 64 + ".image"), folder / f".{kept[0]}.image.123.abcd.tmp",
                       folder / f"{kept[0]}.image.partial-123-abcd"]
            young = folder / ("1" * 64 + ".galois-0123456789abcdef")
            for path in (*orphans, young):
                path.write_bytes(b"x" * 4096)
            for path in (*orphans, *(folder / name for name in kept)):
                os.utime(path, (old, old))
            before = store.beside_bytes("alice")
            done = app.state.retention.sweep()
            assert done["orphans"] == 3 and not any(p.exists() for p in orphans)
            assert sorted(p.name for p in folder.iterdir()) == sorted([*kept, young.name])
            assert store.beside_bytes("alice") == before - 3 * 4096
            assert session.infer(batch(1, 16), progress=False).shape == (1, 4)


def test_ringfire_infer_closes_its_session(config, tokens, tmp_path, capsys):
    from ringfire import cli
    np.save(tmp_path / "x.npy", batch(2, 16, seed=3))
    with server_thread(config) as (url, _):
        for _ in range(2):
            assert cli.main(["infer", config.model, "--input", str(tmp_path / "x.npy"), "--server", url,
                             "--token", tokens["alice"], "--json"]) == 0
        with db(config) as d:
            assert d.execute("select count(*) from sessions").fetchone()[0] == 0
            assert d.execute("select count(*) from jobs").fetchone()[0] == 0
    report, _ = json.JSONDecoder().raw_decode(capsys.readouterr().out)
    assert report["rounds"] == 1 and report["max_abs_error"] < 1e-3


def test_a_store_written_before_retention_opens_with_its_columns_and_ages_by_creation(tmp_path):
    """A store of an earlier version (no ``used``, ``params`` or ``expired`` columns) gets them
    when a server opens it; its sessions age from their creation, its keys count as unused."""
    from ringfire.serve.store import Store
    (tmp_path / "store").mkdir()
    with sqlite3.connect(tmp_path / "store" / "state.sqlite") as old:
        old.executescript("""
            create table sessions (id text primary key, tenant text not null, model text not null,
                fingerprint text not null, created real not null);
            create table session_keys (session text not null, kind text not null, sha256 text not null,
                size integer not null, primary key (session, kind));
            create table blobs (tenant text not null, sha256 text not null, size integer not null,
                kind text not null, primary key (tenant, sha256));
            create table jobs (id text primary key, tenant text not null, session text not null,
                idempotency text, state text not null, error text, progress text, created real not null,
                updated real not null, result_bytes integer);
            insert into sessions values ('s-old', 'alice', 'mlp', 'f', 100.0);
            insert into sessions values ('s-new', 'alice', 'mlp', 'f', 1e12);
            insert into blobs values ('alice', 'k-linked', 10, 'relin');
            insert into blobs values ('alice', 'k-free', 20, 'relin');
            insert into session_keys values ('s-new', 'relin', 'k-linked', 10);
        """)
    store = Store(tmp_path / "store")
    for table, column in (("sessions", "used"), ("blobs", "params"), ("blobs", "used"), ("jobs", "expired")):
        assert column in {row[1] for row in store._q(f"pragma table_info({table})")}, (table, column)
    assert store.idle_sessions(before=1000.0) == [("s-old", "alice")]
    assert store.unlinked_blobs("alice") == [("alice", "k-free", 20)]
    assert store.close_session("s-new", idle_before=1000.0) is None  # not idle: kept
    assert store.close_session("s-old", idle_before=1000.0) == {"jobs_stopped": [], "results_deleted": 0}
    store.close()
