"""What the kit's two OpenAI-compatible servers share (``codemode serve`` and ``codemode fake-openai``):
chat completions and errors in OpenAI's form, a bounded request body, and running a Starlette app on
uvicorn, in the foreground or on a thread (for tests and benchmarks).

Starlette and uvicorn are the servers of the ASGI world that are kept well and small: a real HTTP/1.1
server (h11), keep-alive, graceful shutdown, nothing to configure; the official ``openai`` client and
httpx speak to them as to any hosted API.
"""

from __future__ import annotations

import asyncio
import hashlib
import socket
import sys
import threading
import time
import uuid
from typing import Any

from reference import jsonio

MAX_REQUEST_BYTES = 8 << 20


class TooLarge(Exception):
    pass


async def read_json(request: Any) -> Any:
    """The request's JSON body, at most :data:`MAX_REQUEST_BYTES` (read bounded, never whole first);
    ``request.state.digest`` is set to the SHA-256 of its bytes."""
    size = 0
    chunks = []
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_REQUEST_BYTES:
            raise TooLarge
        chunks.append(chunk)
    data = b"".join(chunks)
    request.state.digest = hashlib.sha256(data).hexdigest()
    return jsonio.loads(data.decode("utf-8"))


def error(status: int, message: str, *, code: str | None = None, kind: str = "invalid_request_error",
          headers: dict[str, str] | None = None) -> Any:
    from starlette.responses import Response

    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return Response(jsonio.dumps(body), status_code=status, media_type="application/json", headers=headers)


def completion(model: str, content: str | None, *, finish_reason: str = "stop", refusal: str | None = None,
               prompt_chars: int = 0, request_id: str | None = None) -> dict[str, Any]:
    """A chat completion with one choice (token counts are characters / 4, rounded up). With
    ``request_id`` (a digest of the request) the id is derived from it and ``created`` is 0: a
    deterministic server gives byte-equal answers to equal requests, and recordings of it are stable."""
    completion_tokens = -(-len(content or "") // 4)
    prompt_tokens = -(-prompt_chars // 4)
    return {
        "id": "chatcmpl-" + (request_id[:24] if request_id else uuid.uuid4().hex[:24]),
        "object": "chat.completion",
        "created": 0 if request_id else int(time.time()),
        "model": model,
        "choices": [{"index": 0, "finish_reason": finish_reason, "logprobs": None,
                     "message": {"role": "assistant", "content": content, "refusal": refusal}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def json_response(value: Any, *, headers: dict[str, str] | None = None) -> Any:
    from starlette.responses import Response

    return Response(jsonio.dumps(value), media_type="application/json", headers=headers)


def missing() -> str | None:
    """What to install for the servers, or None when Starlette and uvicorn import."""
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        return "needs Starlette and uvicorn: pip install 'codemode-conformance-kit[serve]'"
    return None


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # no Nagle on the connections it accepts (Linux copies the option to them): a response's headers and
    # body are two writes, and with Nagle the body waits for the client's delayed ACK, 40 ms on a
    # kept-alive connection
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(256)
    sock.set_inheritable(True)
    return sock


def base_url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{port}/v1"


def _config(app: Any, graceful: float = 2.0) -> Any:
    import uvicorn

    return uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=graceful)


def serve_forever(app: Any, host: str, port: int, *, what: str) -> None:
    """Serve ``app`` until SIGINT or SIGTERM, then return (uvicorn would raise the signal again after its
    shutdown, and the caller could not say what it has to say); the first line on stdout is
    ``<what> on <url>`` (with the port the system chose for ``--port 0``)."""
    import contextlib
    import signal

    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Any:
            old = {s: signal.signal(s, self.handle_exit) for s in (signal.SIGINT, signal.SIGTERM)}
            try:
                yield
            finally:
                for s, handler in old.items():
                    signal.signal(s, handler)

    sock = bind(host, port)
    print(f"{what} on {base_url(sock)}", flush=True)
    Server(_config(app, graceful=1.0)).run(sockets=[sock])


class Background:
    """``app`` served on a thread of this process (tests, benchmarks): ``url``, then :meth:`stop`."""

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0) -> None:
        import uvicorn

        self.sock = bind(host, port)
        self.url = base_url(self.sock)
        self.server = uvicorn.Server(_config(app, graceful=0.2))
        self.thread = threading.Thread(target=lambda: asyncio.run(self.server.serve(sockets=[self.sock])),
                                       name="codemode-http", daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started and time.monotonic() < deadline and self.thread.is_alive():
            time.sleep(0.01)
        if not self.server.started:
            print("the server did not start", file=sys.stderr)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()

    def __enter__(self) -> Background:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
