"""A command-line client's keys kept between runs (``ringfire infer --server URL --keys DIR``).

Each run of a client that makes its keys afresh sends them again (N16_BOOT's key sets are
3.1 GB) and leaves the server one more key set to store. Kept in a directory, the keys are made
once; later runs load them, and the server, which stores the evaluation keys by their digest,
links its copy instead of receiving them again. The directory holds one folder per set of keys
a model needs: its parameters (the context's fingerprint) and what its keys cover (the
rotations of its Galois keys or master keys in their place, bootstrapping keys and their
options), so that models served with the same parameters share keys where theirs are the same,
and never get keys that lack what they need. In each: ``secret.key``, written readable by this
user alone and sealed with ``$RINGFIRE_KEY_PASSWORD`` where that is set, and the evaluation
keys (``evaluation.keys``), streamed (``keys.save_to``), never held whole as bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import warnings
from pathlib import Path

from ..io import write_atomically

PASSWORD_VARIABLE = "RINGFIRE_KEY_PASSWORD"


def kept_keys(client, name: str, ctx, directory, *, master_rotations: bool = False):
    """(secret key, evaluation keys, "loaded" or "made") for model `name` in `ctx`: read from
    `directory` where a run before kept them, else made now and kept there."""
    folder = Path(directory) / key_folder(client.description(name)["parameters"], ctx, master_rotations)
    secret, evaluation = folder / "secret.key", folder / "evaluation.keys"
    password = os.environ.get(PASSWORD_VARIABLE) or None
    if secret.is_file() and evaluation.is_file():
        try:
            sk = ctx.load(secret.read_bytes(), password=password)
        except ValueError as e:
            if password is None and "password" in str(e):
                raise ValueError(f"[infer] the secret key in {secret} is sealed: set ${PASSWORD_VARIABLE} to the "
                                 "password it was kept with") from None
            raise ValueError(f"[infer] the secret key in {secret} does not load ({e}): a wrong "
                             f"${PASSWORD_VARIABLE}, or a damaged file (remove {folder} to make new keys)") from None
        return sk, ctx.load_keys(evaluation), "loaded"
    sk, keys = client.keygen(name, ctx, master_rotations=master_rotations)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    with warnings.catch_warnings():  # the file's mode and the note below say what the warning would
        warnings.simplefilter("ignore")
        data = sk.to_bytes(password=password)
    write_atomically(secret, data, mode=0o600)  # this user's alone from its first byte
    keys.save_to(evaluation)
    if password is None:
        print(f"[infer] keys kept in {folder}; the secret key in the clear, readable by this user only "
              f"(set ${PASSWORD_VARIABLE} to seal it)", file=sys.stderr)
    return sk, keys, "made"


def key_folder(params: dict, ctx, master_rotations: bool) -> str:
    """The folder of the keys a model with these parameters (its description's) needs: the
    context's fingerprint and a digest of what the keys must cover."""
    needs = {"rotations": None if master_rotations else sorted(params.get("rotations") or []),
             "master": master_rotations, "bootstrap": bool(params.get("bootstrap")),
             "bootstrap_options": params.get("bootstrap_options") if params.get("bootstrap") else None}
    covered = hashlib.sha256(json.dumps(needs, sort_keys=True).encode()).hexdigest()[:12]
    return f"{ctx.fingerprint:016x}-{covered}"
