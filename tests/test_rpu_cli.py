"""``ringfire rpu ...``: each subcommand's --json output (called through the module's own parser)."""

import json

import pytest

from ringfire.rpu import cli


def run(capsys, *argv):
    code = cli._standalone(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_ntt_json_fields(capsys):
    code, out, _ = run(capsys, "ntt", "--n", "1024", "--hples", "128", "--banks", "128", "--json")
    data = json.loads(out)
    assert code == 0
    for key in ("cycles", "seconds", "frequency_hz", "verified", "utilization", "stalls", "instruction_counts"):
        assert key in data
    assert data["verified"] is True and data["frequency_hz"] == 1.68e9 and data["q_bits"] == 128
    assert data["seconds"] == pytest.approx(data["cycles"] / 1.68e9)


def test_ntt_naive_inverse_and_text(capsys):
    code, out, _ = run(capsys, "ntt", "--n", "2048", "--naive", "--inverse", "--bits", "61", "--json")
    data = json.loads(out)
    assert code == 0 and data["verified"] is True and data["inverse"] and not data["optimized"]
    assert data["oracle"] == "ringfire.ring.intt"
    code, out, _ = run(capsys, "ntt", "--n", "1024", "--banks", "32")
    assert code == 0 and "1.29 GHz" in out and "verified    True" in out


def test_asm_disasm_run_round_trip(tmp_path, capsys):
    src = tmp_path / "k.s"
    src.write_text("mload m0, 0\nvaddmods v1, v0, s0, m0   ; v1 = v0 + s0\nunpklo v2, v1, v1\n")
    code, out, _ = run(capsys, "asm", str(src), "--json")
    data = json.loads(out)
    assert code == 0 and data["instructions"] == 3 and data["bytes"] == 24 and len(data["words"]) == 3
    code, out, _ = run(capsys, "disasm", data["output"], "--json")
    assert code == 0 and json.loads(out)["assembly"][1].split() == ["vaddmods", "v1,", "v0,", "s0,", "m0"]
    code, out, _ = run(capsys, "disasm", data["output"], "--listing")
    assert out.splitlines()[0].startswith("00000  ")
    code, out, _ = run(capsys, "run", data["output"], "--sdm", "97", "--vreg", "2", "--json")
    result = json.loads(out)
    assert code == 0 and result["cycles"] > 0 and result["counts"]["shuffle"] == 1
    assert result["vreg"]["values"][:2] == ["0", "0"]


def test_errors_exit_2_with_a_message(tmp_path, capsys):
    bad = tmp_path / "bad.s"
    bad.write_text("vaddmod v1, v2, v99, m0\n")
    code, _, err = run(capsys, "asm", str(bad))
    assert code == 2 and "line 1" in err and "v99" in err
    code, _, err = run(capsys, "run", str(tmp_path / "missing.s"))
    assert code == 2


def test_sweep_json(capsys):
    code, out, _ = run(capsys, "sweep", "--n", "1024", "--sweep-hples", "32,128", "--sweep-banks", "32,128",
                       "--json")
    rows = json.loads(out)["results"]
    assert code == 0 and len(rows) == 4
    by = {(r["hples"], r["banks"]): r for r in rows}
    assert by[(128, 128)]["seconds"] <= by[(32, 32)]["seconds"]


def test_register_adds_the_rpu_command():
    import argparse
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["rpu", "ntt", "--n", "1024", "--json"])
    assert args.func is cli.cmd_ntt and args.n == 1024 and args.json
