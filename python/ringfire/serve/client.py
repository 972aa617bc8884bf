"""The client of ``ringfire serve``: it makes (or takes) the keys, uploads the evaluation
keys once (resuming an interrupted upload, skipping keys the server already has),
encrypts, submits, answers the client-aided rounds, and decrypts. The secret key never
leaves it; the server sees the evaluation keys, the ciphertexts, the model's layer
names, and timing.

    client = rf.serve.Client("http://127.0.0.1:8000", token=TOKEN)
    session = client.session("mlp")            # keys made here, uploaded once
    y = session.infer(x)                       # x: NumPy, batch first
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import time
import uuid

import numpy as np

from .. import _progress, ckks
from ..ckks.batch import EncryptedTensor
from ..nn.client import LocalClient, encryption_level
from . import wire
from .inorder import InOrder

CHUNK = 16 * 2**20


class ServerError(RuntimeError):
    """The server refused a request or a job failed: its status and message."""

    def __init__(self, status: int, message: str):
        super().__init__(f"[serve] {status}: {message}")
        self.status, self.message = status, message


class Client:
    """A connection to a server. ``token``: the tenant's bearer token; ``verify``: TLS
    verification (a CA bundle path for a private CA); ``timeout``: seconds per request."""

    def __init__(self, url: str, token: str, *, verify=True, timeout: float = 120.0, chunk_bytes: int = CHUNK):
        import httpx
        self.url = url.rstrip("/")
        self.chunk_bytes = int(chunk_bytes)
        self.http = httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {token}"}, verify=verify,
                                 timeout=timeout)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def request(self, method: str, path: str, *, expect=(200,), retries: int = 4, stream: bool = False, **kwargs):
        """One request, retried on 429 (after Retry-After), on a gateway's 502/503/504 (a replica
        going away behind it) and on dropped connections. With ``stream``, an expected
        response comes back with its body unread (``iter_raw()``; the caller closes it)."""
        import httpx
        for attempt in range(retries + 1):
            try:
                response = self.http.send(self.http.build_request(method, path, **kwargs), stream=stream)
            except httpx.TransportError:
                if attempt == retries:
                    raise
                time.sleep(0.2 * 2**attempt)
                continue
            if stream and response.status_code not in expect:
                try:
                    response.read()  # a refusal: its message is small, read it as unstreamed
                except httpx.TransportError:
                    if attempt == retries:
                        raise
                    time.sleep(0.2 * 2**attempt)
                    continue
                finally:
                    response.close()
            if response.status_code == 429 and attempt < retries:
                time.sleep(min(30.0, float(response.headers.get("retry-after", "1"))))
                continue
            if response.status_code in (502, 503, 504) and attempt < retries:
                time.sleep(0.5 * 2**attempt)
                continue
            if response.status_code not in expect:
                try:
                    message = response.json().get("error", response.text)
                except ValueError:
                    message = response.text
                raise ServerError(response.status_code, message)
            return response
        raise AssertionError("unreachable")

    def download_tensor(self, path: str, load, *, max_entry_bytes: int, retries: int = 4) -> dict:
        """An encrypted tensor the server keeps (a job's result), read and loaded as its bytes
        arrive (never gathered whole); a connection dropped mid-body asks again."""
        import httpx
        for attempt in range(retries + 1):
            response = self.request("GET", path, stream=True)
            try:
                return wire.unpack_tensor(response.iter_raw(), load, max_entries=2**24,
                                          max_entry_bytes=max_entry_bytes)
            except httpx.TransportError:
                if attempt == retries:
                    raise
                time.sleep(0.2 * 2**attempt)
            finally:
                response.close()
        raise AssertionError("unreachable")

    def models(self) -> list[str]:
        return self.request("GET", "/v2/models").json()["models"]

    def model(self, name: str) -> dict:
        return self.request("GET", f"/v2/models/{name}").json()

    def context(self, name: str, **options) -> ckks.Context:
        """The model's parameters as a context (made here; its randomness is the client's).
        ``options`` go to :meth:`ckks.Context.from_bytes`; parameters the server runs without the
        security check (toy rings, for tests) load with it off, which warns."""
        params = self.model(name)["parameters"]
        return ckks.Context.from_bytes(self.request("GET", f"/v2/models/{name}/context").content,
                                       bootstrap=params["bootstrap_options"],
                                       insecure_no_security_check=params["insecure"], **options)

    def session(self, name: str, ctx=None, secret_key=None, keys=None, *, progress: bool | None = None,
                master_rotations: bool = False) -> "Session":
        """A session for model `name`: with `ctx`, `secret_key` and `keys` given, those (they must
        match the model's parameters and cover its rotations); else a context and keys made here.
        Evaluation keys the server lacks are uploaded. ``master_rotations``: make and send master
        keys instead of the model's Galois keys (the server derives those; a fraction of the
        bytes and of the client's keygen time, docs/keys.md), where the model accepts them."""
        info = self.model(name)
        if ctx is None:
            ctx = self.context(name)
        params = info["parameters"]
        if f"{ctx.fingerprint:016x}" != params["fingerprint"]:
            raise ValueError(f"[serve] this context's parameters are not the model's: make it with "
                             f"client.context({name!r})")
        if master_rotations and not params.get("master_keys"):
            raise ValueError(f"[serve] model {name!r} takes no master keys (it makes no rotations, or its "
                             "parameters leave no room for them under the security bound): send its Galois keys")
        if secret_key is None or keys is None:
            secret_key, keys = (ctx.keygen(bootstrap=params["bootstrap"], master_rotations=True) if master_rotations
                                else ctx.keygen(rotations=params["rotations"], bootstrap=params["bootstrap"]))
        sid = self.request("POST", "/v1/sessions", expect=(201,),
                           json={"model": name, "fingerprint": params["fingerprint"]}).json()["id"]
        session = Session(self, name, sid, ctx, secret_key, keys, info)
        session.upload_keys(progress=progress)
        return session


class Session:
    def __init__(self, client: Client, model: str, sid: str, ctx, secret_key, keys, info: dict):
        self.client, self.model, self.id = client, model, sid
        self.ctx, self.secret_key, self.keys, self.info = ctx, secret_key, keys, info
        self.packing = info["parameters"]["packing"]
        self.local = LocalClient(ctx, secret_key, keys)
        self.rounds = 0
        self.upload_timings: dict = {}  # per kind, from the last upload_keys (bytes, prepare_s, transfer_s)

    # ---- keys ---------------------------------------------------------------------------
    def upload_keys(self, progress: bool | None = None) -> dict:
        """Each evaluation key set the session lacks: linked when the server stored it already
        (same SHA-256), else uploaded in chunks, from the server's offset when an earlier
        upload was interrupted. Each key is streamed into a temporary file first (its bytes are
        never held whole beside the keys: 3.48 GiB at N16_BOOT) and the chunks are read from
        there. Returns {kind: "linked" | "uploaded" | "stored"}; ``upload_timings`` then holds,
        per uploaded kind, its bytes and the seconds spent writing and hashing it here
        (``prepare_s``) and sending it until the server kept it (``transfer_s``)."""
        status = self.client.request("GET", f"/v1/sessions/{self.id}").json()["keys"]
        out = {}
        self.upload_timings = {}
        for kind, st in status.items():
            if st["stored"]:
                out[kind] = "stored"
                continue
            if kind == "galois" and self.keys.galois is None and self.keys.master is not None:
                kind, st = "master", {}  # the server derives the Galois keys; a 409 says where to resume
            with tempfile.TemporaryFile() as data:
                # The SHA-256s (the whole key's and each chunk's) as the key is written: no second pass.
                start = time.perf_counter()
                hashing = _HashingWriter(data, self.client.chunk_bytes)
                total = getattr(self.keys, kind).save_to(hashing)
                sha = hashing.hexdigest()
                prepared = time.perf_counter()
                linked = self.client.request("POST", f"/v1/sessions/{self.id}/keys/{kind}/link",
                                             expect=(200, 404), json={"sha256": sha})
                if linked.status_code == 200:
                    out[kind] = "linked"
                    continue
                self._upload(kind, data, total, sha, st["received"] if st.get("total") == total else 0, progress,
                             hashing.chunks)
                self.upload_timings[kind] = {"bytes": total, "prepare_s": prepared - start,
                                             "transfer_s": time.perf_counter() - prepared}
            out[kind] = "uploaded"
        return out

    def _upload(self, kind: str, data, total: int, sha: str, start: int, progress, chunk_sha256: dict) -> None:
        """The key in file `data` from offset `start`, one chunk per request, each streamed from
        the file (never read whole) with its SHA-256 (`chunk_sha256`: by offset, from when the
        key was written; a chunk that starts elsewhere, after a resume, is hashed here)."""
        step = self.client.chunk_bytes
        with _progress.progress_bar(total, f"uploading {kind} keys", progress, unit="B") as bar:
            bar.update(start)
            offset = start
            while offset < total:
                size = min(step, total - offset)
                digest = chunk_sha256.get(offset) or _file_sha256(data, offset, size)
                headers = {"Content-Range": f"bytes {offset}-{offset + size - 1}/{total}",
                           "Content-Length": str(size), "X-Content-SHA256": sha, "X-Chunk-SHA256": digest,
                           "Content-Type": "application/octet-stream"}
                response = self.client.request("PUT", f"/v1/sessions/{self.id}/keys/{kind}",
                                               content=_file_range(data, offset, size), headers=headers,
                                               expect=(200, 409))
                if response.status_code == 409:  # the server has a different offset: resume there
                    time.sleep(min(5.0, float(response.headers.get("retry-after", "0"))))
                    offset = int(response.headers.get("x-received", "0"))
                    continue
                offset += size
                bar.update(size)

    # ---- inference ---------------------------------------------------------------------------
    def submit(self, enc: EncryptedTensor, idempotency_key: str | None = None) -> str:
        parts = wire.tensor_parts(enc.cts, enc.batch, enc.packing, enc.period, enc.sample_shape, enc.element_slots)
        key = idempotency_key or uuid.uuid4().hex
        response = self.client.request("POST", f"/v1/sessions/{self.id}/infer", content=parts, expect=(200, 202),
                                       headers={"Idempotency-Key": key, "Content-Type": "application/octet-stream",
                                                "Content-Length": str(wire.parts_size(parts))})
        return response.json()["job"]

    def wait(self, job: str, progress: bool | None = None, timeout: float | None = None) -> EncryptedTensor:
        """Answers the job's rounds until it is done, then downloads the result (the status
        requests wait on the server until the job moves on)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        answered = 0  # the last round answered: never twice (a status read can lag the worker)
        seen = ""
        with _progress.progress_bar(None, "encrypted inference (server)", progress, unit="step") as bar:
            while True:
                status = self.client.request("GET", f"/v1/jobs/{job}", params={"wait": 10, "seen": seen}).json()
                seen = f"{status['state']}:{status.get('round', {}).get('number', '')}"
                if status["progress"]:
                    bar.set_postfix_str(f"{status['progress'].get('layer', '')} "
                                        f"{status['progress'].get('done')}/{status['progress'].get('total')}")
                if status["state"] == "done":
                    break
                if status["state"] == "failed":
                    raise ServerError(410, f"job {job} failed: {status['error']}")
                if status["state"] == "awaiting_client" and "round" in status \
                        and status["round"]["number"] > answered:
                    if self._answer(job, status["round"]["number"]):
                        answered = status["round"]["number"]
                        bar.update()
                        continue
                    # Not served at this moment: read the status again soon, not after the
                    # long poll's wait for a change the job may never make.
                    seen = ""
                    time.sleep(0.05)
                if deadline is not None and time.monotonic() > deadline:
                    raise TimeoutError(f"[serve] job {job} still {status['state']} after {timeout:g} s")
        fields = self.client.download_tensor(f"/v1/jobs/{job}/result", self.ctx.load,
                                             max_entry_bytes=self.ctx._largest_object_bytes())
        return EncryptedTensor(fields["cts"], fields["batch"], self.ctx, fields["packing"], fields["period"],
                               fields["sample_shape"], fields["element_slots"])

    def _answer(self, job: str, number: int) -> bool:
        """Answers round ``number``; False when the server does not serve it at this moment (409: a
        status read that ran ahead of the round's question, or the job moved on), for the next
        status read to say whether to ask again."""
        import httpx
        # Streamed: the ciphertexts load as they arrive, never gathered whole (a round is tens of MiB).
        response = self.client.request("GET", f"/v1/jobs/{job}/rounds/{number}", expect=(200, 409), stream=True)
        try:
            if response.status_code == 409:
                return False
            node, shape, clip = wire.node_from_json(response.headers["x-ringfire-layer"])
            x = wire.unpack_tensor(response.iter_raw(), self.ctx.load, max_entries=2**24,
                                   max_entry_bytes=self.ctx._largest_object_bytes())["cts"]
        except httpx.TransportError:  # dropped mid-body: the next status read says whether to ask again
            return False
        finally:
            response.close()
        if self.packing == "inter":  # one sample per ciphertext: the layer on its slot vector
            out, out_shape = np.array([self.local.apply_vector(node, x.flat[0])], dtype=object), (1,)
        else:
            out, out_shape = self.local.apply(node, x, shape, clip)
        parts = wire.tensor_parts(out, batch=0, sample_shape=out.shape)
        # 409: answered already (a retry after a lost response) or no longer awaited (the job
        # ended): the next status read says which.
        self.client.request("POST", f"/v1/jobs/{job}/rounds/{number}", content=parts, expect=(200, 409),
                            headers={"X-Ringfire-Out-Shape": json.dumps(list(out_shape)),
                                     "Content-Type": "application/octet-stream",
                                     "Content-Length": str(wire.parts_size(parts))})
        self.rounds += 1
        return True

    def infer_encrypted(self, enc: EncryptedTensor, progress: bool | None = None,
                        idempotency_key: str | None = None) -> EncryptedTensor:
        return self.wait(self.submit(enc, idempotency_key), progress)

    def infer(self, x, progress: bool | None = None) -> np.ndarray:
        """The model's outputs on `x` (NumPy, batch first): encrypted here, computed by the
        server, decrypted here."""
        # With the secret key: seeded ciphertexts, half the bytes of public-key ones; at the
        # level the model's first layers need (fewer limbs than the top, where it says).
        x = np.asarray(x, dtype=np.float64)
        level = encryption_level(self.ctx, self.info["parameters"].get("input_level", self.ctx.max_level), x)
        enc = self.ctx.encrypt_batch(x, self.secret_key, packing=self.packing, level=level)
        return self.ctx.decrypt_batch(self.infer_encrypted(enc, progress), self.secret_key)


PIECE = 1 << 20  # what a chunk is read and sent in
WHOLE_DIGEST_BEHIND = 16 * PIECE  # copies of written pieces waiting for the whole key's digest


class _HashingWriter:
    """A binary file's ``write`` that also feeds the SHA-256 of everything written and one of
    each `chunk`-byte stretch (``chunks``: {offset: hex digest}). The whole digest runs on a
    second thread (inorder.py) from a copy of each piece (a save lends its pieces only for
    the call), beside the chunks' digests and the file write here."""

    def __init__(self, file, chunk: int):
        self._file, self._digest, self._chunk = file, hashlib.sha256(), chunk
        self._written, self._current = 0, hashlib.sha256()
        self._whole = InOrder(self._digest.update, WHOLE_DIGEST_BEHIND)
        self.chunks: dict[int, str] = {}

    def write(self, data) -> int:
        view = memoryview(data).cast("B")
        self._whole.put(bytes(view))
        while len(view):
            room = self._chunk - self._written % self._chunk
            part, view = view[:room], view[room:]
            self._current.update(part)
            self._written += len(part)
            if self._written % self._chunk == 0:
                self._close_chunk()
        return self._file.write(data)

    def _close_chunk(self) -> None:
        start = (self._written - 1) // self._chunk * self._chunk
        self.chunks[start] = self._current.hexdigest()
        self._current = hashlib.sha256()

    def hexdigest(self) -> str:
        """The whole file's digest; the last, partial chunk's goes into ``chunks`` (the same on
        every call, and writing may go on after it)."""
        if self._written % self._chunk:
            start = self._written // self._chunk * self._chunk
            self.chunks[start] = self._current.copy().hexdigest()
        self._whole.finish()
        self._whole = InOrder(self._digest.update, WHOLE_DIGEST_BEHIND)  # for writes after this call
        return self._digest.hexdigest()


def _file_range(file, offset: int, size: int):
    """The bytes [offset, offset + size) of `file`, in pieces (a request body httpx streams)."""
    file.seek(offset)
    left = size
    while left:
        piece = file.read(min(PIECE, left))
        if not piece:
            raise ValueError(f"[serve] the key file ended {left} bytes early")
        left -= len(piece)
        yield piece


def _file_sha256(file, offset: int, size: int) -> str:
    digest = hashlib.sha256()
    for piece in _file_range(file, offset, size):
        digest.update(piece)
    return digest.hexdigest()
