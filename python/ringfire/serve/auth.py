"""Bearer tokens per tenant. The tokens file holds one ``tenant sha256-of-token`` line per
token (``#`` comments allowed), never a token itself: ``ringfire serve --add-token
TENANT --tokens FILE`` makes a random token, appends its hash and prints the token once
(a running server reads the file again when it changes: :class:`TokenBook`; a tenant may
hold several tokens, one line each, to rotate them).
A request's ``Authorization: Bearer <token>`` is hashed and looked up in constant time;
everything a tenant stores or runs is filed under its name, and every lookup of a
session, an upload or a job is scoped by it.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
import secrets
import threading
import time
from pathlib import Path

log = logging.getLogger("ringfire.serve")

_TENANT = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def load_tokens(path: str | os.PathLike) -> dict[str, str]:
    """{token hash: tenant} from a tokens file; malformed lines are refused with their number."""
    out = {}
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        raise ValueError(f"[serve] no tokens file {path}: make it with ringfire serve --add-token TENANT --tokens "
                         f"{path} (or name another with --tokens FILE)") from None
    for number, line in enumerate(text.splitlines(), 1):
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


class TokenBook:
    """The tokens of a tokens file, read again when the file changes (looked at most once every
    ``LOOK_SECONDS``): a token added with ``--add-token``, or a line removed to revoke one,
    counts without a restart. A file that stops parsing keeps the tokens read last (logged)."""

    LOOK_SECONDS = 1.0

    def __init__(self, path):
        self.path = Path(path)
        self.tokens = load_tokens(self.path)
        self._seen = self._stamp()
        self._next_look = time.monotonic() + self.LOOK_SECONDS
        self._lock = threading.Lock()

    def _stamp(self):
        try:
            st = self.path.stat()
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size, st.st_ino

    def current(self) -> dict[str, str]:
        now = time.monotonic()
        if now < self._next_look:
            return self.tokens
        with self._lock:
            self._next_look = now + self.LOOK_SECONDS
            stamp = self._stamp()
            if stamp != self._seen:
                self._seen = stamp
                try:
                    self.tokens = load_tokens(self.path)
                    log.info("tokens file %s read again: %d tokens", self.path, len(self.tokens))
                except (OSError, ValueError) as e:
                    log.warning("tokens file %s not read again (%s): the %d tokens read before still count",
                                self.path, e, len(self.tokens))
        return self.tokens


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
