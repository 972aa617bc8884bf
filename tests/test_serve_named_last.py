"""Keys named with their last chunk (``X-Key-Digest: pending`` before it): where the server
cannot hold a key already (its tenant stores no key of that kind), the client hashes the key
as it sends it, one pass over it instead of two; the server keeps it under the digest the last
chunk names, once its bytes hash to it. Each test runs against a server of its own module,
each upload with a tenant of its own; bounded in requests and time."""

import httpx
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("onnx")

from ringfire.serve import Client, ServeConfig, ServerError  # noqa: E402
from ringfire.serve.auth import add_token  # noqa: E402
from ringfire.serve.keydigest import PENDING  # noqa: E402
from nn_models import mlp_bytes  # noqa: E402
from serve_support import DIGEST_BLOCK, chunk_digest_of, key_digest_of, server_thread  # noqa: E402


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("named-last")
    (root / "mlp.onnx").write_bytes(mlp_bytes((16, 8, 4)))
    tokens = iter([add_token(root / "tokens", f"tenant{i}") for i in range(8)])  # one per test at most
    config = ServeConfig(model=str(root / "mlp.onnx"), store=str(root / "store"), tokens=str(root / "tokens"),
                         preset="N13_D2", requests_per_second=400)
    with server_thread(config) as (url, _):
        yield url, tokens


def tenant(tokens) -> str:
    """The token of a tenant no test used (one that stores no keys)."""
    return next(tokens)


def status(url, token, sid) -> dict:
    return httpx.get(f"{url}/v1/sessions/{sid}", headers={"Authorization": f"Bearer {token}"}).json()


def put(url, token, sid, data, start, end, digest, total=None):
    chunk = data[start:end]
    return httpx.put(f"{url}/v1/sessions/{sid}/keys/relin", content=chunk, headers={
        "Authorization": f"Bearer {token}", "Content-Range": f"bytes {start}-{end - 1}/{total or len(data)}",
        "X-Key-Digest": digest, "X-Chunk-Digest": chunk_digest_of(chunk)})


def open_raw(url, token, client) -> tuple[str, dict]:
    r = httpx.post(f"{url}/v1/sessions", json={"model": "mlp",
                                                "fingerprint": client.model("mlp")["parameters"]["fingerprint"]},
                   headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 201, r.text
    return r.json()["id"], r.json()


def test_a_new_tenants_key_is_hashed_as_it_is_sent_and_stored_under_its_digest(served, monkeypatch):
    """Serialized once (the client's timings: no pass before the transfer), in several chunks,
    every chunk but the last marked pending; stored under the key's own digest; another session
    with the same key objects links it, and so does a client that has only the key's bytes
    (it hashes them first: this tenant now stores a key of that kind)."""
    url, tokens = served
    token = tenant(tokens)
    sent = []
    with Client(url, token, chunk_bytes=DIGEST_BLOCK * 4) as client:
        ctx = client.context("mlp")
        sk, keys = ctx.keygen()
        real_send = client.http.send

        def spy(request, **kw):
            if request.method == "PUT":
                sent.append(request.headers["x-key-digest"])
            return real_send(request, **kw)

        monkeypatch.setattr(client.http, "send", spy)
        saves = []
        real_save = type(keys.relin).save_to
        monkeypatch.setattr(type(keys.relin), "save_to", lambda key, f: saves.append(1) or real_save(key, f))
        session = client.session("mlp", ctx, sk, keys, progress=False)
        digest = key_digest_of(keys.relin.to_bytes())
        assert session.key_state == {"relin": "uploaded"}
        assert len(saves) == 1 and session.upload_timings["relin"]["prepare_s"] == 0.0
        assert len(sent) > 2 and sent[:-1] == [PENDING] * (len(sent) - 1) and sent[-1] == digest
        assert status(url, token, session.id)["keys"]["relin"]["digest"] == digest
        assert client.session("mlp", ctx, sk, keys, progress=False).key_state == {"relin": "linked"}
        assert len(saves) == 1  # its digests were kept from the upload
        again = ctx.load(keys.relin.to_bytes())  # the same key, a new object: nothing cached
        keys.relin = again
        assert client.session("mlp", ctx, sk, keys, progress=False).key_state == {"relin": "linked"}


def test_keys_the_client_made_go_named_last_to_a_tenant_that_stores_keys_of_their_kind(served, monkeypatch):
    """A tenant that stores relinearization keys already: keys ``Client.keygen`` made here from
    the system's randomness cannot be among them, so they are sent in one pass too (not hashed
    first to ask); keys handed in (perhaps loaded, perhaps sent before by another process) are
    hashed first and linked where stored."""
    url, tokens = served
    token = tenant(tokens)
    with Client(url, token, chunk_bytes=DIGEST_BLOCK * 4) as client:
        first = client.session("mlp", progress=False)  # this tenant now stores a relinearization key
        assert first.key_state == {"relin": "uploaded"}
        saves = []
        real_save = type(first.keys.relin).save_to
        monkeypatch.setattr(type(first.keys.relin), "save_to", lambda key, f: saves.append(1) or real_save(key, f))
        made = client.session("mlp", progress=False)
        assert made.key_state == {"relin": "uploaded"}
        assert len(saves) == 1 and made.upload_timings["relin"]["prepare_s"] == 0.0
        assert status(url, token, made.id)["keys"]["relin"]["digest"] == key_digest_of(made.keys.relin.to_bytes())
        # Keys of the same words that this client did not make: hashed first, then linked.
        made.keys.relin = made.ctx.load(made.keys.relin.to_bytes())
        linked = client.session("mlp", made.ctx, made.secret_key, made.keys, progress=False)
        assert linked.key_state == {"relin": "linked"}


def corrupting(client, monkeypatch, which):
    """Every PUT whose number (from 0) is in `which` has one bit flipped on the way; returns
    [(the request's X-Chunk-Digest or None, the answer's status)] of every PUT."""
    real_send, puts = client.http.send, []

    def send(request, **kw):
        if request.method != "PUT":
            return real_send(request, **kw)
        body = bytearray(b"".join(request.stream))
        if len(puts) in which:
            body[len(body) // 2] ^= 1
        answer = real_send(httpx.Request("PUT", request.url, content=bytes(body), headers=request.headers), **kw)
        puts.append((request.headers.get("x-chunk-digest"), answer.status_code))
        return answer

    monkeypatch.setattr(client.http, "send", send)
    return puts


def test_a_chunk_corrupted_on_the_way_is_sent_again_in_one_pass(served, monkeypatch):
    """The one-pass upload keeps each chunk until the server kept it, like the two-pass one:
    a chunk (after the first) whose bytes change on the way is refused (422) and sent again as
    it was."""
    url, tokens = served
    token = tenant(tokens)
    with Client(url, token, chunk_bytes=DIGEST_BLOCK * 4) as client:
        ctx = client.context("mlp")
        sk, keys = ctx.keygen()
        puts = corrupting(client, monkeypatch, {1, 2})  # the second chunk, twice
        session = client.session("mlp", ctx, sk, keys, progress=False)
        assert [code for _, code in puts[:4]] == [200, 422, 422, 200]
        assert session.upload_timings["relin"]["prepare_s"] == 0.0
        assert status(url, token, session.id)["keys"]["relin"]["digest"] == key_digest_of(keys.relin.to_bytes())


def test_the_first_chunk_goes_as_it_is_serialized_and_is_checked_by_the_servers_answer(served, monkeypatch):
    """The first chunk of a key named last is sent while it is serialized, without its digest;
    the server's answer names what it kept, and a mismatch sends the chunk again at byte 0,
    which starts the upload over. The later chunks carry their digests."""
    url, tokens = served
    token = tenant(tokens)
    with Client(url, token, chunk_bytes=DIGEST_BLOCK * 4) as client:
        ctx = client.context("mlp")
        sk, keys = ctx.keygen()
        puts = corrupting(client, monkeypatch, {0})
        session = client.session("mlp", ctx, sk, keys, progress=False)
        assert puts[0] == (None, 200) and puts[1] == (None, 200)  # kept, found different, sent again
        assert all(said is not None for said, _ in puts[2:]) and len(puts) > 3
        assert status(url, token, session.id)["keys"]["relin"]["digest"] == key_digest_of(keys.relin.to_bytes())


def test_the_protocol_of_a_key_named_last(served):
    """Pending names no key: the last chunk must carry the digest (400). A pending chunk at 0
    starts the upload over; one after it continues only an upload that is itself pending (409
    at 0 otherwise). A pending upload resumed by a client that hashed the key first takes the
    digest it names, and a last chunk whose digest the bytes do not hash to is refused (422) and
    the upload dropped."""
    url, tokens = served
    token = tenant(tokens)
    with Client(url, token) as client:
        ctx = client.context("mlp")
        sk, keys = ctx.keygen()
        data = keys.relin.to_bytes()
        digest = key_digest_of(data)
        third = len(data) // 3 // DIGEST_BLOCK * DIGEST_BLOCK
        sid, opened = open_raw(url, token, client)
        assert opened["stored_kinds"] == []
        whole = put(url, token, sid, data, 0, len(data), PENDING)
        assert whole.status_code == 400 and "last chunk names the key" in whole.json()["error"]
        assert put(url, token, sid, data, 0, third, PENDING).json()["received"] == third
        # A named upload under way is not continued by a pending chunk.
        sid2, _ = open_raw(url, token, client)
        assert put(url, token, sid2, data, 0, third, digest).json()["received"] == third
        other = put(url, token, sid2, data, third, 2 * third, PENDING)
        assert other.status_code == 409 and other.headers["x-received"] == "0"
        # A pending chunk at 0 starts over; the next continues; a wrong name at the end is refused.
        assert put(url, token, sid, data, 0, third, PENDING).json()["received"] == third
        assert put(url, token, sid, data, third, 2 * third, PENDING).json()["received"] == 2 * third
        wrong = put(url, token, sid, data, 2 * third, len(data), "0" * 64)
        assert wrong.status_code == 422 and "does not match" in wrong.json()["error"]
        assert status(url, token, sid)["keys"]["relin"]["received"] == 0
        # Interrupted after its first chunk, resumed by a client that names the key first.
        assert put(url, token, sid, data, 0, third, PENDING).json()["received"] == third
        from ringfire.serve.client import Session
        session = Session(client, "mlp", sid, ctx, sk, keys, client.model("mlp"))
        assert session.upload_keys(progress=False) == {"relin": "uploaded"}
        assert session.upload_timings["relin"]["prepare_s"] > 0  # hashed first, resumed at its offset
        assert status(url, token, sid)["keys"]["relin"]["digest"] == digest


def test_a_server_that_takes_no_key_named_last_gets_it_named_first(served, monkeypatch):
    """A server's description without ``keys_named_last`` (one of before) gets the digest with
    every chunk: the client hashes the key in a pass of its own first."""
    url, tokens = served
    with Client(url, tenant(tokens)) as client:
        ctx = client.context("mlp")
        sk, keys = ctx.keygen()
        client._described["mlp"]["parameters"].pop("keys_named_last")
        session = client.session("mlp", ctx, sk, keys, progress=False)
        assert session.key_state == {"relin": "uploaded"} and session.upload_timings["relin"]["prepare_s"] > 0


def test_a_corrupt_key_named_last_ends_in_a_clear_error(served, monkeypatch):
    """Every try of a chunk corrupted on the way: the one-pass upload gives up after
    CHUNK_RESENDS resends with the reason, as the two-pass one does."""
    from ringfire.serve.client import CHUNK_RESENDS

    url, tokens = served
    with Client(url, tenant(tokens), chunk_bytes=DIGEST_BLOCK * 4) as client:
        ctx = client.context("mlp")
        sk, keys = ctx.keygen()
        puts = corrupting(client, monkeypatch, range(100))
        with pytest.raises(ServerError, match="does not match"):
            client.session("mlp", ctx, sk, keys, progress=False)
    assert len(puts) == CHUNK_RESENDS + 1


def test_a_server_that_names_no_kept_chunk_gets_every_chunk_with_its_digest(served, monkeypatch):
    """A server whose description says ``keys_named_last`` 1 (keys named last, but no
    ``chunk_digest`` in its answers) gets the first chunk serialized whole, with its digest."""
    url, tokens = served
    token = tenant(tokens)
    with Client(url, token, chunk_bytes=DIGEST_BLOCK * 4) as client:
        ctx = client.context("mlp")
        sk, keys = ctx.keygen()
        client._described["mlp"]["parameters"]["keys_named_last"] = 1
        puts = corrupting(client, monkeypatch, set())
        session = client.session("mlp", ctx, sk, keys, progress=False)
        assert session.upload_timings["relin"]["prepare_s"] == 0.0
        assert len(puts) > 2 and all(said is not None for said, _ in puts)
        assert status(url, token, session.id)["keys"]["relin"]["digest"] == key_digest_of(keys.relin.to_bytes())
