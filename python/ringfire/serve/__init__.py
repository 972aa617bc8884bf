"""Encrypted inference as a service (``ringfire serve``; the ``ringfire[serve]`` extra).

The server holds an ONNX model and, per client session, the client's evaluation keys
(stored on disk by their digest, uploaded once, resumable); clients submit encrypted inputs
as jobs, answer the client-aided rounds, and download encrypted results. The secret key
never leaves the client. Protocol, threat model and limits: docs/serving.md.

* :class:`Client` / :class:`Session` -- the client (``httpx``).
* :func:`create_app` / :class:`ServeConfig` -- the FastAPI application, for uvicorn.
"""

from .client import Client, ServerError, Session
from .config import ServeConfig


def create_app(config: ServeConfig):
    """The FastAPI application for `config` (imports FastAPI only when a server is made)."""
    from .app import create_app as make
    return make(config)


__all__ = ["Client", "ServeConfig", "ServerError", "Session", "create_app"]
