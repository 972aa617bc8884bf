"""The distributed cost model's own arithmetic (ringfire.distributed.costmodel), without Ray:
what a recording executor measures of a map, and how a prediction prices it."""

import time

import pytest

from ringfire.distributed.costmodel import Profile, RecordingExecutor, efficiency, predict


def sleeper(first: float, rest: float, setup_flag: bool):
    calls = []

    def fn(ev, shared, item, const):
        time.sleep(first if not calls else rest)
        calls.append(item)
        return None

    if setup_flag:
        fn.per_worker_setup = True
    return fn


def test_a_per_worker_setup_is_timed_apart_and_every_worker_pays_it_once():
    recorder = RecordingExecutor()
    recorder.map(sleeper(0.25, 0.02, True), range(8), ev=None, label="samples")
    stage = recorder.stages[0]
    assert stage.items == 8 and 0.2 <= stage.setup_seconds <= 0.6  # the first call's excess
    assert 0.14 <= stage.compute_seconds <= 0.5                    # eight items at 0.02 s
    profile = Profile([stage], 0.0, stage.compute_seconds + stage.setup_seconds)
    one, two = (predict(profile, nodes, 1, task_overhead=0.0) for nodes in (1, 2))
    assert one["compute"] == pytest.approx(stage.compute_seconds + stage.setup_seconds)
    # Two workers halve the items; each still builds its own runner, side by side.
    assert two["compute"] == pytest.approx(stage.compute_seconds / 2 + stage.setup_seconds)
    assert efficiency(profile, 2, task_overhead=0.0) < 0.75  # the setup dominates this stage


def test_without_the_flag_a_slow_first_item_is_work_like_the_others():
    recorder = RecordingExecutor()
    recorder.map(sleeper(0.1, 0.02, False), range(4), ev=None)
    stage = recorder.stages[0]
    assert stage.setup_seconds == 0.0 and stage.compute_seconds >= 0.16
    profile = Profile([stage], 0.0, stage.compute_seconds)
    assert predict(profile, 2, 1, task_overhead=0.0)["compute"] == pytest.approx(stage.compute_seconds / 2)


def test_contention_slows_only_tasks_that_run_side_by_side():
    recorder = RecordingExecutor()
    recorder.map(sleeper(0.02, 0.02, False), range(4), ev=None)
    profile = Profile(recorder.stages, 0.0, recorder.stages[0].compute_seconds)
    compute = recorder.stages[0].compute_seconds
    assert predict(profile, 1, 1, task_overhead=0.0, contention=1.5)["compute"] == pytest.approx(compute)
    assert predict(profile, 2, 1, task_overhead=0.0, contention=1.5)["compute"] == pytest.approx(1.5 * compute / 2)
    stages = predict(profile, 2, 1, task_overhead=0.0)["stages"]
    assert [s["label"] for s in stages] == ["work"] and stages[0]["seconds"] > 0
    with pytest.raises(ValueError, match="contention"):
        predict(profile, 2, 1, contention=0.5)


def test_a_recorded_inter_packed_run_splits_its_time_into_serial_compute_and_setup_once():
    pytest.importorskip("onnx")
    import numpy as np

    import ringfire as rf
    from nn_models import mlp_bytes
    from ringfire.distributed.costmodel import record

    ctx = rf.ckks.Context(poly_degree=2**14, coeff_bits=[60, 40, 40, 40, 40, 60], scale_bits=40)
    rng = np.random.default_rng(3)
    model = rf.nn.load(mlp_bytes(), ctx, activation="poly", poly_degree=2, calibration=rng.uniform(-1, 1, (64, 16)),
                       packing="inter")
    sk, keys = ctx.keygen(rotations=model.rotations())
    profile = record(model, ctx.encrypt_batch(rng.uniform(-1, 1, (4, 16)), keys, packing="inter"))
    (stage,) = profile.stages
    assert stage.label == "samples" and stage.items == 4
    assert stage.setup_seconds > 0  # the first sample built the runner and encoded the diagonals
    # Every second of the run counted once: the serial part is what the map did not take.
    assert profile.serial_seconds >= 0
    assert profile.serial_seconds + stage.compute_seconds + stage.setup_seconds == pytest.approx(profile.total_seconds)
