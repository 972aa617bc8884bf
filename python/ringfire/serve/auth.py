"""Bearer tokens per tenant. The tokens file holds one ``tenant sha256-of-token`` line per
token (``#`` comments allowed), never a token itself: ``ringfire serve --add-token
TENANT --tokens FILE`` makes a random token, appends its hash and prints the token once.
A request's ``Authorization: Bearer <token>`` is hashed and looked up in constant time;
everything a tenant stores or runs is filed under its name, and every lookup of a
session, an upload or a job is scoped by it.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from pathlib import Path

_TENANT = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def load_tokens(path: str | os.PathLike) -> dict[str, str]:
    """{token hash: tenant} from a tokens file; malformed lines are refused with their number."""
    out = {}
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2 or not _TENANT.match(parts[0]) or not re.fullmatch(r"[0-9a-f]{64}", parts[1]):
            raise ValueError(f"[serve] {path}:{number}: expected 'TENANT SHA256-HEX' (tenant: letters, digits, "
                             "'_', '.', '-'; a token's SHA-256, never the token)")
        out[parts[1]] = parts[0]
    if not out:
        raise ValueError(f"[serve] {path} holds no token: add one with ringfire serve --add-token TENANT --tokens "
                         f"{path}")
    return out


def add_token(path: str | os.PathLike, tenant: str) -> str:
    """A new random token for `tenant`, its hash appended to the file (made 0600); returns the token."""
    if not _TENANT.match(tenant):
        raise ValueError(f"[serve] tenant {tenant!r}: letters, digits, '_', '.', '-', at most 64")
    # 256 random bits; the prefix names the token in logs and scanners, and keeps it from
    # starting with '-', which a command line would read as an option (--token -x...).
    token = "rf_" + secrets.token_urlsafe(32)
    path = Path(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a") as f:
        f.write(f"{tenant} {token_hash(token)}\n")
    return token


def tenant_of(authorization: str | None, tokens: dict[str, str]) -> str | None:
    """The tenant a ``Bearer`` header authenticates, or None."""
    if not authorization or not authorization.startswith("Bearer "):
        return None
    digest = token_hash(authorization[7:].strip())
    found = None
    for known, tenant in tokens.items():  # every entry compared: the time does not depend on which matched
        if hmac.compare_digest(known, digest):
            found = tenant
    return found
