"""Turns at the CPU (serve/turns.py): given first come first served, at most as many at once as
allowed; the server's jobs give theirs back while they wait for their clients, and the key
holder's work of the sessions of one process takes turns. Bounded in requests and time."""

import os
import threading
import time

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")
pytest.importorskip("onnx")

import ringfire as rf  # noqa: E402
from ringfire.serve import Client, ServeConfig  # noqa: E402
from ringfire.serve import client as client_module  # noqa: E402
from ringfire.serve.turns import Turns, cores_per_kernel_pool  # noqa: E402
from nn_models import mlp_bytes, ort_run  # noqa: E402
from serve_support import batch, server_thread, tokens_file  # noqa: E402


def wait_until(condition, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_turns_are_given_in_the_order_they_were_asked_for():
    turns, order = Turns(1), []
    turns.acquire()
    threads = []
    for name in "abcd":  # each asks only once the one before waits: a known order
        t = threading.Thread(target=lambda n=name: (turns.acquire(), order.append(n), turns.release()))
        t.start()
        threads.append(t)
        wait_until(lambda k=len(threads): turns.waiting == k)
    assert order == []
    turns.release()
    for t in threads:
        t.join(timeout=10)
    assert order == list("abcd") and turns.waiting == 0


def test_no_more_turns_at_once_than_allowed_and_a_turn_given_back_goes_to_the_next_in_line():
    turns, inside, most, lock = Turns(2), [0], [0], threading.Lock()

    def hold():
        with turns.turn():
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            time.sleep(0.02)
            with lock:
                inside[0] -= 1

    threads = [threading.Thread(target=hold) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert most[0] == 2

    one, got = Turns(1), []
    one.acquire()
    waiter = threading.Thread(target=lambda: (one.acquire(), got.append("waiter"), one.release()))
    waiter.start()
    wait_until(lambda: one.waiting == 1)
    with one.given_back():  # a holder that waits hands its turn on ...
        waiter.join(timeout=10)
        assert got == ["waiter"]
    assert one.waiting == 0  # ... and has it again after


def test_the_default_leaves_each_computation_the_kernels_threads(monkeypatch):
    monkeypatch.setattr(rf, "num_threads", lambda: 1)
    assert cores_per_kernel_pool() == len(os.sched_getaffinity(0))
    monkeypatch.setattr(rf, "num_threads", lambda: 4096)
    assert cores_per_kernel_pool() == 1


def test_computing_is_checked():
    with pytest.raises(ValueError, match="computing: from 1 to 64"):
        ServeConfig(model="m.onnx", store="s", tokens="t", computing=0)


@pytest.fixture(scope="module")
def one_turn_server(tmp_path_factory):
    """A server of the MLP (client-aided ReLU) that runs two jobs, one of them computing at once."""
    root = tmp_path_factory.mktemp("turns")
    (root / "mlp.onnx").write_bytes(mlp_bytes((16, 8, 4)))
    tokens = tokens_file(root / "tokens")
    config = ServeConfig(model=str(root / "mlp.onnx"), store=str(root / "store"), tokens=str(root / "tokens"),
                         preset="N13_D2", round_timeout=20.0, requests_per_second=400, workers=2, computing=1)
    with server_thread(config) as (url, app):
        yield url, tokens, app, (root / "mlp.onnx").read_bytes()


def test_a_job_waiting_for_its_client_lets_another_compute(one_turn_server):
    url, tokens, app, model = one_turn_server
    with Client(url, tokens["alice"]) as idle, Client(url, tokens["bob"]) as busy:
        waiting = idle.session("mlp", progress=False)
        job = waiting.submit(waiting.ctx.encrypt_batch(batch(2, 16), waiting.keys))  # its round never answered
        wait_until(lambda: idle.request("GET", f"/v1/jobs/{job}").json()["state"] == "awaiting_client", 30)
        x = batch(3, 16, seed=1)
        got = busy.session("mlp", progress=False).infer(x, progress=False)  # the one turn is free: it runs
        np.testing.assert_allclose(got, ort_run(model, x), atol=1e-3)
        assert idle.request("GET", f"/v1/jobs/{job}").json()["state"] == "awaiting_client"
        metrics = idle.request("GET", "/metrics").text
        assert "ringfire_jobs_waiting_turn 0.0" in metrics
        idle.request("DELETE", f"/v1/sessions/{waiting.id}")


def test_the_key_holders_work_of_a_processs_sessions_takes_turns(one_turn_server, monkeypatch):
    """Sessions in threads of one process encrypt, answer rounds and decrypt one at a time (here
    one turn), each in the order it asked; every result right."""
    url, tokens, _, model = one_turn_server
    monkeypatch.setattr(client_module, "KEY_HOLDER_TURNS", Turns(1))
    inside, most, lock = [0], [0], threading.Lock()

    def counted(work):
        def run(*args, **kwargs):
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            try:
                time.sleep(0.02)  # long enough that unordered sessions would overlap here
                return work(*args, **kwargs)
            finally:
                with lock:
                    inside[0] -= 1
        return run

    clients = [Client(url, tokens["alice"]) for _ in range(3)]  # each its own context: each wrapped once
    try:
        sessions = [c.session("mlp", progress=False) for c in clients]
        for s in sessions:
            monkeypatch.setattr(s.ctx, "encrypt_batch", counted(s.ctx.encrypt_batch))
            monkeypatch.setattr(s.ctx, "decrypt_batch", counted(s.ctx.decrypt_batch))
            monkeypatch.setattr(s.local, "apply", counted(s.local.apply))
        inputs = [batch(2, 16, seed=i) for i in range(3)]
        results = [None] * 3
        start = threading.Barrier(3)

        def infer(i):
            start.wait()
            results[i] = sessions[i].infer(inputs[i], progress=False)

        threads = [threading.Thread(target=infer, args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        for s in sessions:
            s.close()
    finally:
        for c in clients:
            c.close()
    assert most[0] == 1
    for x, got in zip(inputs, results):
        np.testing.assert_allclose(got, ort_run(model, x), atol=1e-3)
