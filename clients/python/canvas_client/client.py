"""CanvasAgentClient: a small, dependency-free client of the canvasd HTTP API."""

import http.client
import json
import random
import socket
import ssl
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union
from urllib.parse import quote, urlencode, urlsplit

from ._version import __version__
from .errors import CanvasConnectionError, CanvasError, ConflictError, error_for_status
from .sse import Event, SSEParser

__all__ = ["CanvasAgentClient", "ApplyResult", "ConflictHandler"]


#: on_conflict(conflict, fresh_state) -> (action, args), or None to give up.
ConflictHandler = Callable[[ConflictError, Dict[str, Any]], Optional[Tuple[str, Dict[str, Any]]]]

# Answers that mean "not processed, try again later" for a request that is safe to repeat.
_RETRY_STATUSES = frozenset({502, 503, 504})
# Errors of a kept-alive connection that the server closed while it was idle.
_STALE_ERRORS = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ConnectionAbortedError)
_TRANSPORT_ERRORS = (OSError, http.client.HTTPException)


@dataclass
class ApplyResult:
    """The outcome of an applied command (HTTP 200).

    Attributes:
        rev: the revision the command committed as (``current_rev``).
        cmd_id, event_id: the command id and the commit's event id.
        created_ids: ids the command created, in order.
        rebased: True when base_rev was stale but nothing the command touched had changed.
        result: the command-specific result (document verbs), or None.
        replayed: True when the server answered from its idempotency store
            (``Idempotent-Replayed: true``): an earlier attempt had already applied.
        idempotency_key: the key of the command that applied.
        replans: how many times on_conflict was called before it applied.
        body: the whole response body.
    """

    rev: int
    cmd_id: Optional[str] = None
    event_id: Optional[str] = None
    created_ids: List[str] = field(default_factory=list)
    rebased: bool = False
    result: Any = None
    replayed: bool = False
    idempotency_key: Optional[str] = None
    replans: int = 0
    body: Dict[str, Any] = field(default_factory=dict, repr=False)


class _Response:
    __slots__ = ("status", "reason", "headers", "body", "data")

    def __init__(self, status: int, reason: str, headers: Dict[str, str], body: bytes) -> None:
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body
        self.data: Any = None
        if body:
            try:
                self.data = json.loads(body.decode("utf-8"))
            except ValueError:
                self.data = None


def _new_key() -> str:
    return "py-" + uuid.uuid4().hex


# Characters a path segment may hold as they are (RFC 3986 pchar): an id
# such as "team:alpha" or "alice@example.com" is sent unescaped; "/", "?",
# "#", "%", spaces and non-ASCII are percent-encoded (UTF-8).
_SEGMENT_SAFE = "!$&'()*+,;=:@"


def _seg(s: str) -> str:
    if not isinstance(s, str) or s == "":
        raise ValueError("path parameter must be a non-empty string, got %r" % (s,))
    return quote(s, safe=_SEGMENT_SAFE)


class CanvasAgentClient:
    """A client of one canvasd server. Safe to share between threads.

    Args:
        base_url: e.g. ``"http://127.0.0.1:8080"`` (a path prefix is kept).
        token: the bearer token (``Authorization: Bearer <token>``), or None.
        timeout: seconds to connect and to wait for each answer.
        retries: how many times a request that is safe to repeat (reads, and
            commands and batches, which always carry an idempotency key) is
            retried after a connection error or a 502/503/504, with exponential
            backoff and jitter. Other writes (creating or deleting a canvas or
            a token) carry no key and are never retried: after a 503 whose
            outcome is unknown they may have happened (``ServerError.outcome``).
        backoff: the first retry delay in seconds (doubled each retry).
        max_backoff: the cap on one retry delay in seconds.
        ssl_context: for https URLs; the default context when None.
    """

    def __init__(
        self,
        base_url: str,
        token: Optional[str] = None,
        timeout: float = 10.0,
        *,
        retries: int = 3,
        backoff: float = 0.1,
        max_backoff: float = 5.0,
        ssl_context: Optional[ssl.SSLContext] = None,
        user_agent: Optional[str] = None,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("base_url must be an http(s) URL like http://127.0.0.1:8080, got %r" % base_url)
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.retries = max(0, int(retries))
        self.backoff = backoff
        self.max_backoff = max_backoff
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._https else 80)
        self._prefix = parts.path.rstrip("/")
        self._ssl = ssl_context
        self._ua = user_agent or "canvas-client-python/" + __version__
        self._lock = threading.Lock()
        self._idle: List[http.client.HTTPConnection] = []
        # Overridable for tests and for callers with their own clock.
        self._sleep: Callable[[float], None] = time.sleep
        self._rand: Callable[[], float] = random.random

    # ------------------------------------------------------------------ plumbing

    def close(self) -> None:
        """Closes idle keep-alive connections. The client stays usable."""
        with self._lock:
            idle, self._idle = self._idle, []
        for c in idle:
            c.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self) -> "CanvasAgentClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _connect(self, timeout: Optional[float]) -> http.client.HTTPConnection:
        if self._https:
            return http.client.HTTPSConnection(self._host, self._port, timeout=timeout, context=self._ssl)
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def _acquire(self, fresh: bool) -> Tuple[http.client.HTTPConnection, bool]:
        if not fresh:
            with self._lock:
                if self._idle:
                    return self._idle.pop(), True
        return self._connect(self.timeout), False

    def _release(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < 8:
                self._idle.append(conn)
                return
        conn.close()

    def _headers(self, extra: Optional[Mapping[str, str]] = None, has_body: bool = False) -> Dict[str, str]:
        h = {"Accept": "application/json", "User-Agent": self._ua}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        if has_body:
            h["Content-Type"] = "application/json"
        if extra:
            h.update(extra)
        return h

    def _path(self, path: str, query: Optional[Mapping[str, Any]] = None) -> str:
        p = self._prefix + path
        if query:
            q = {k: v for k, v in query.items() if v is not None}
            if q:
                p += "?" + urlencode(q)
        return p

    def _send_once(self, method: str, path: str, payload: Optional[bytes], headers: Dict[str, str], fresh: bool) -> _Response:
        conn, reused = self._acquire(fresh)
        for attempt in (0, 1):
            try:
                conn.request(method, path, body=payload, headers=headers)
                r = conn.getresponse()
                body = r.read()
            except _STALE_ERRORS:
                conn.close()
                if reused and attempt == 0:
                    # A kept-alive connection the server had closed: the request
                    # never reached it. Try once more on a new connection.
                    conn, reused = self._connect(self.timeout), False
                    continue
                raise
            except BaseException:
                conn.close()
                raise
            hdrs = {k.lower(): v for k, v in r.getheaders()}
            if r.will_close:
                conn.close()
            else:
                self._release(conn)
            return _Response(r.status, r.reason, hdrs, body)
        raise AssertionError("unreachable")

    def _delay(self, attempt: int, retry_after: Optional[str] = None) -> float:
        d = min(self.max_backoff, self.backoff * (2 ** min(attempt, 30)))
        d = d * (0.5 + 0.5 * self._rand())  # jitter: [d/2, d)
        if retry_after:
            try:
                d = max(d, min(float(retry_after), self.max_backoff * 4))
            except ValueError:
                pass
        return d

    def _request(
        self,
        method: str,
        path: str,
        *,
        query: Optional[Mapping[str, Any]] = None,
        body: Any = None,
        retry: bool = False,
        raw: Optional[bytes] = None,
        content_type: Optional[str] = None,
    ) -> _Response:
        """Sends one request. With retry=True (only for requests safe to repeat)
        connection errors and 502/503/504 are retried up to self.retries times.
        raw sends bytes as they are (a file), with content_type."""
        payload = raw
        if body is not None:
            payload = json.dumps(body, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
        p = self._path(path, query)
        headers = self._headers(has_body=payload is not None)
        if raw is not None and content_type:
            headers["Content-Type"] = content_type
        attempt = 0
        while True:
            try:
                resp = self._send_once(method, p, payload, headers, fresh=not retry)
            except _TRANSPORT_ERRORS as e:
                if not retry or attempt >= self.retries:
                    raise CanvasConnectionError(
                        "%s %s: %s: %s" % (method, self.base_url + p, type(e).__name__, e),
                        method=method, url=self.base_url + p,
                    ) from e
                self._sleep(self._delay(attempt))
                attempt += 1
                continue
            if retry and resp.status in _RETRY_STATUSES and attempt < self.retries:
                self._sleep(self._delay(attempt, resp.headers.get("retry-after")))
                attempt += 1
                continue
            return resp

    def _error(self, method: str, path: str, resp: _Response, idempotency_key: Optional[str] = None) -> CanvasError:
        problem = resp.data if isinstance(resp.data, dict) else None
        return error_for_status(
            resp.status, resp.reason, problem=problem, body=resp.body, headers=resp.headers,
            method=method, url=self.base_url + self._prefix + path, idempotency_key=idempotency_key,
        )

    def _call(self, method: str, path: str, *, query: Optional[Mapping[str, Any]] = None, body: Any = None, retry: bool = False) -> Any:
        resp = self._request(method, path, query=query, body=body, retry=retry)
        if 200 <= resp.status < 300:
            return resp.data
        raise self._error(method, path, resp)

    # ------------------------------------------------------------------ canvases

    def create_canvas(self, canvas_id: Optional[str] = None, title: Optional[str] = None) -> Dict[str, Any]:
        """Creates a canvas (``POST /api/canvases``) and returns
        ``{canvas_id, title, head_rev: 0, created_at}``. Without canvas_id the
        server mints an unguessable one. An existing id raises ConflictError.
        Not retried (a retry could create a second canvas)."""
        body: Dict[str, Any] = {}
        if canvas_id is not None:
            body["canvas_id"] = canvas_id
        if title is not None:
            body["title"] = title
        return self._call("POST", "/api/canvases", body=body)

    def list_canvases(self) -> List[Dict[str, Any]]:
        """Returns the canvases the token's actor may see (``GET /api/canvases``)."""
        data = self._call("GET", "/api/canvases", retry=True)
        if isinstance(data, dict):
            for key in ("canvases", "items"):
                if isinstance(data.get(key), list):
                    return data[key]
        return data

    def get_canvas(self, canvas_id: str) -> Dict[str, Any]:
        """Returns one canvas's metadata (``GET /api/canvases/{id}``); NotFoundError if absent."""
        return self._call("GET", "/api/canvases/" + _seg(canvas_id), retry=True)

    def delete_canvas(self, canvas_id: str) -> None:
        """Deletes a canvas with its history (admin role)."""
        self._call("DELETE", "/api/canvases/" + _seg(canvas_id))

    def create_token(
        self,
        role: str,
        actor_type: str = "agent",
        *,
        actor_id: Optional[str] = None,
        canvases: Optional[Sequence[str]] = None,
        name: Optional[str] = None,
    ) -> Dict[str, Any]:
        """Creates an API token (admin role; ``POST /api/tokens``) and returns
        ``{token, actor_id, actor_type, role, canvases}``. Without canvases the
        role holds on every canvas."""
        body: Dict[str, Any] = {"role": role, "actor_type": actor_type}
        if actor_id is not None:
            body["actor_id"] = actor_id
        if canvases is not None:
            body["canvases"] = list(canvases)
        if name is not None:
            body["name"] = name
        return self._call("POST", "/api/tokens", body=body)

    def revoke_token(self, actor_id: str) -> None:
        """Revokes the token of an actor (admin role)."""
        self._call("DELETE", "/api/tokens/" + _seg(actor_id))

    # ------------------------------------------------------------------ state

    def get_state(self, canvas_id: str, at_rev: Optional[int] = None) -> Dict[str, Any]:
        """Returns the snapshot ``{canvas_id, head_rev, head_event_id, state:
        {nodes, edges}}``; with at_rev, the state as it was at that revision.
        ``head_event_id`` is a valid ``last_event_id`` for :meth:`stream`."""
        return self._call("GET", "/canvas_commands/snapshot/" + _seg(canvas_id), query={"at_rev": at_rev}, retry=True)

    def events(self, canvas_id: str, after_rev: int = 0, limit: Optional[int] = None) -> Dict[str, Any]:
        """Returns one page of the event log: ``{head_rev, commits}`` with the
        commits whose rev > after_rev, ascending, at most limit of them."""
        return self._call(
            "GET", "/canvas_commands/%s/events" % _seg(canvas_id),
            query={"after_rev": after_rev, "limit": limit}, retry=True,
        )

    def iter_events(self, canvas_id: str, after_rev: int = 0, page_size: int = 500) -> Iterator[Dict[str, Any]]:
        """Yields every commit with rev > after_rev in order, fetching pages of
        page_size, until it reaches the head revision read on the last page."""
        while True:
            page = self.events(canvas_id, after_rev=after_rev, limit=page_size)
            commits = page.get("commits") or []
            for c in commits:
                yield c
            if not commits:
                return
            after_rev = commits[-1]["rev"]
            if after_rev >= page.get("head_rev", after_rev):
                return

    # ------------------------------------------------------------------ files

    def export(
        self,
        canvas_id: str,
        format: str = "png",
        *,
        at_rev: Optional[int] = None,
        ids: Optional[List[str]] = None,
        bounds: Optional[Tuple[float, float, float, float]] = None,
        scale: Optional[float] = None,
        background: Optional[str] = None,
    ) -> bytes:
        """Returns the canvas drawn by the server (``png``, ``svg``) or written
        as a file (``jsoncanvas``, ``excalidraw``), as bytes
        (``GET /api/canvases/{id}/export``): optionally at a past revision,
        only some node and edge ids (a frame or group brings its children), a
        page region ``bounds=(x, y, w, h)``, a PNG scale and a ``transparent``
        background. A refused option raises ValidationError naming it."""
        query: Dict[str, Any] = {"format": format, "at_rev": at_rev, "scale": scale, "background": background}
        if ids is not None:
            query["ids"] = ",".join(ids)
        if bounds is not None:
            query["bounds"] = ",".join("%g" % v for v in bounds)
        path = "/api/canvases/%s/export" % _seg(canvas_id)
        resp = self._request("GET", path, query=query, retry=True)
        if resp.status != 200:
            raise self._error("GET", path, resp)
        return resp.body

    def import_file(
        self,
        canvas_id: str,
        data: Any,
        format: str,
        *,
        mode: str = "merge",
        base_rev: Optional[int] = None,
        idempotency_key: Optional[str] = None,
    ) -> ApplyResult:
        """Reads a file (``jsoncanvas``, ``excalidraw`` or a ``mermaid``
        flowchart; bytes or str) into the canvas as one commit
        (``POST /api/canvases/{id}/import``) and returns its ApplyResult
        (rev, created_ids: every id the file put on the canvas). ``mode``
        ``merge`` adds the file's nodes and edges, each replacing one with
        the same id; ``replace`` deletes everything else. The request carries
        idempotency_key (or a fresh key) and is resent after a connection
        error or 502/503/504, so it never applies twice. A file the server
        cannot read raises ValidationError whose ``field`` names the place in
        it (``body.nodes[3].color``, ``body line 12``); a stale base_rev that
        conflicts raises ConflictError."""
        raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        key = idempotency_key or _new_key()
        query = {"format": format, "mode": mode, "base_rev": base_rev, "idempotency_key": key}
        ctype = "text/plain; charset=utf-8" if format == "mermaid" else "application/json"
        path = "/api/canvases/%s/import" % _seg(canvas_id)
        resp = self._request("POST", path, query=query, raw=raw, content_type=ctype, retry=True)
        if resp.status != 200:
            raise self._error("POST", path, resp, idempotency_key=key)
        d = resp.data or {}
        return ApplyResult(
            rev=d.get("current_rev", 0), created_ids=list(d.get("created_ids") or []),
            replayed=resp.headers.get("idempotent-replayed") == "true", idempotency_key=key, body=d,
        )

    # ------------------------------------------------------------------ commands

    def apply(
        self,
        canvas_id: str,
        action: str,
        args: Optional[Dict[str, Any]],
        base_rev: int,
        *,
        idempotency_key: Optional[str] = None,
        strict: bool = False,
        on_conflict: Optional[ConflictHandler] = None,
        max_retries: int = 3,
    ) -> int:
        """Applies one command and returns the new revision.

        The command carries idempotency_key, or a fresh key of the client's own,
        and the very same envelope is resent after a connection error or a
        502/503/504 (up to ``retries`` times, with backoff), so a retry never
        applies twice: the server answers it from its idempotency store.

        On a 409 without on_conflict, raises :class:`ConflictError` (with
        current_rev, conflicting_ids, recovery_ops). With on_conflict, re-reads
        the state and calls ``on_conflict(conflict, fresh_state)``, which
        returns the next ``(action, args)`` (or None to give up and raise); the
        new command is sent with ``base_rev = fresh_state["head_rev"]`` and a
        new idempotency key (``<key>.r<n>``), at most max_retries times, after
        which the last ConflictError is raised. Other errors raise their typed
        exception (ValidationError for 400/413/422, AuthError, NotFoundError, ...).

        A 409 writes nothing and stores nothing, so calling again with the same
        idempotency_key decides the command again. Once a call has committed,
        calling again with its key replays the stored answer for the same
        envelope; if the call had been replanned and the replan now produces a
        different command, the server refuses its reused derived key with a
        ValidationError (422, problem field ``idempotency_key``): the call
        never applies twice.
        """
        return self.apply_result(
            canvas_id, action, args, base_rev, idempotency_key=idempotency_key,
            strict=strict, on_conflict=on_conflict, max_retries=max_retries,
        ).rev

    def apply_result(
        self,
        canvas_id: str,
        action: str,
        args: Optional[Dict[str, Any]],
        base_rev: int,
        *,
        idempotency_key: Optional[str] = None,
        strict: bool = False,
        on_conflict: Optional[ConflictHandler] = None,
        max_retries: int = 3,
        cmd_id: Optional[str] = None,
    ) -> ApplyResult:
        """Like :meth:`apply` but returns the whole :class:`ApplyResult`
        (created_ids, event_id, replayed, ...). cmd_id sets the envelope id."""
        path = "/canvas_commands/%s/command" % _seg(canvas_id)
        base_key = idempotency_key or _new_key()
        key = base_key
        replans = 0
        while True:
            env: Dict[str, Any] = {"type": action, "base_rev": base_rev, "idempotency_key": key, "args": args or {}}
            if cmd_id:
                env["id"] = cmd_id if replans == 0 else "%s.r%d" % (cmd_id, replans)
            if strict:
                env["strict"] = True
            resp = self._request("POST", path, body=env, retry=True)
            if 200 <= resp.status < 300 and isinstance(resp.data, dict):
                d = resp.data
                return ApplyResult(
                    rev=d.get("current_rev"), cmd_id=d.get("cmd_id"), event_id=d.get("event_id"),
                    created_ids=list(d.get("created_ids") or []), rebased=bool(d.get("rebased", False)),
                    result=d.get("result"), replayed=resp.headers.get("idempotent-replayed", "").lower() == "true",
                    idempotency_key=key, replans=replans, body=d,
                )
            err = self._error("POST", path, resp, idempotency_key=key)
            if not isinstance(err, ConflictError) or on_conflict is None or replans >= max_retries:
                raise err
            fresh = self.get_state(canvas_id)
            nxt = on_conflict(err, fresh)
            if nxt is None:
                raise err
            action, args = nxt
            base_rev = fresh["head_rev"]
            replans += 1
            key = "%s.r%d" % (base_key, replans)

    def apply_batch(
        self,
        canvas_id: str,
        commands: Sequence[Union[Mapping[str, Any], Tuple[str, Dict[str, Any]]]],
        base_rev: int,
        *,
        idempotency_key: Optional[str] = None,
    ) -> Dict[str, Any]:
        """Applies several commands all-or-nothing (one revision each, in
        order) and returns ``{status, current_rev, results}``.

        Each command is ``(action, args)`` or an envelope dict ``{type, args,
        id?, strict?}``. The batch carries idempotency_key, or a fresh key of
        the client's own, and the same body is resent after a connection error
        or a 502/503/504, so a retry never applies twice. Raises ConflictError
        on a 409 and ValidationError when any command cannot apply (then
        nothing is written)."""
        envs: List[Dict[str, Any]] = []
        for c in commands:
            if isinstance(c, Mapping):
                env = dict(c)
            else:
                action, args = c
                env = {"type": action, "args": args}
            if env.get("args") is None:
                env["args"] = {}
            envs.append(env)
        key = idempotency_key or _new_key()
        path = "/canvas_commands/%s/commands" % _seg(canvas_id)
        resp = self._request("POST", path, body={"base_rev": base_rev, "idempotency_key": key, "commands": envs}, retry=True)
        if 200 <= resp.status < 300:
            return resp.data
        raise self._error("POST", path, resp, idempotency_key=key)

    def gesture(
        self,
        canvas_id: str,
        x: float,
        y: float,
        *,
        selection: Optional[Sequence[str]] = None,
        viewport: Optional[Mapping[str, Any]] = None,
    ) -> Any:
        """Broadcasts the caller's cursor (and optional selection/viewport) as
        an ephemeral ``gesture`` event on the canvas stream; nothing is stored."""
        body: Dict[str, Any] = {"cursor": {"x": x, "y": y}}
        if selection is not None:
            body["selection"] = list(selection)
        if viewport is not None:
            body["viewport"] = dict(viewport)
        return self._call("POST", "/canvas_commands/%s/gesture" % _seg(canvas_id), body=body)

    # ------------------------------------------------------------------ agent

    def run_agent(
        self,
        canvas_id: str,
        message: str,
        *,
        model: Optional[str] = None,
        viewport: Optional[Mapping[str, Any]] = None,
        selection: Optional[Sequence[str]] = None,
        document: Optional[str] = None,
        document_selection: Optional[Tuple[int, int]] = None,
    ) -> str:
        """Starts the server's agent on a canvas (``POST
        /api/canvas-agent/run``) and returns the session id; the run goes on
        on the server (follow it with :meth:`agent_session`,
        :meth:`wait_agent` or the canvas's :meth:`stream`).

        document is the node id of a document (a ``doc`` node) to edit with
        the line verbs, document_selection the ``(start_line, end_line)`` of
        it (from 1, inclusive) the message is about. viewport ``{x, y, w,
        h}`` and selection (node ids) tell the agent what the person is
        looking at. Not retried (a retry would start a second run)."""
        body: Dict[str, Any] = {"roomId": canvas_id, "message": message}
        if model is not None:
            body["model"] = model
        if viewport is not None:
            body["viewport"] = dict(viewport)
        if selection is not None:
            body["selection"] = list(selection)
        if document is not None:
            body["document"] = document
        if document_selection is not None:
            start, end = document_selection
            body["document_selection"] = {"start_line": start, "end_line": end}
        return self._call("POST", "/api/canvas-agent/run", body=body)["session_id"]

    def agent_session(self, session_id: str) -> Dict[str, Any]:
        """Returns an agent session: ``state``, ``transcript``, ``todos``,
        ``turns``, ``stats`` (``GET /api/canvas-agent/sessions/{id}``)."""
        return self._call("GET", "/api/canvas-agent/sessions/%s" % _seg(session_id), retry=True)

    def agent_sessions(self, canvas_id: str, limit: Optional[int] = None) -> List[Dict[str, Any]]:
        """Returns a canvas's last ``limit`` (1 to 100, default 20) agent
        sessions, newest first, whoever started them, each as
        :meth:`agent_session` returns it."""
        query = {"limit": limit} if limit is not None else None
        return self._call("GET", "/api/canvases/%s/agent-sessions" % _seg(canvas_id), query=query, retry=True)["sessions"]

    def wait_agent(self, session_id: str, timeout: float = 120.0, poll: float = 0.2) -> Dict[str, Any]:
        """Polls the session until its state is final (``done``, ``error``
        or ``canceled``) and returns it; raises TimeoutError after timeout
        seconds."""
        deadline = time.monotonic() + timeout
        while True:
            s = self.agent_session(session_id)
            if s.get("state") in ("done", "error", "canceled"):
                return s
            if time.monotonic() >= deadline:
                raise TimeoutError("agent session %s still %s after %.0fs" % (session_id, s.get("state"), timeout))
            self._sleep(poll)

    def cancel_agent(self, session_id: str) -> None:
        """Cancels a session: its model stream stops and nothing more of it is applied."""
        self._call("POST", "/api/canvas-agent/sessions/%s/cancel" % _seg(session_id), body={})

    def revert_agent_turns(self, session_id: str, turns: Optional[Sequence[int]] = None) -> Dict[str, Any]:
        """Reverts the commits of the given turns of a session (None: every
        turn not reverted yet) as one ``revert_commits`` command by the
        caller and returns ``{current_rev, ...}``. Raises ConflictError (with
        recovery_ops) when later commits touched the same shapes."""
        body: Dict[str, Any] = {}
        if turns is not None:
            body["turns"] = list(turns)
        return self._call("POST", "/api/canvas-agent/sessions/%s/revert" % _seg(session_id), body=body)

    def agent_catalog(self) -> Dict[str, Any]:
        """Returns the agent's action catalog with each action's JSON Schema."""
        return self._call("GET", "/api/canvas-agent/catalog", retry=True)

    # ------------------------------------------------------------------ stream

    def stream(
        self,
        canvas_id: str,
        last_event_id: Optional[str] = None,
        *,
        read_timeout: Optional[float] = 45.0,
        reconnect_delay: float = 0.5,
        max_reconnect_delay: float = 30.0,
        max_reconnects: Optional[int] = None,
    ) -> Iterator[Event]:
        """Yields the canvas's live events as :class:`Event` objects (``event``,
        ``id``, ``data`` parsed as JSON): replayed commits after last_event_id
        (a snapshot's ``head_event_id`` or an integer revision), then
        ``caught_up``, then live ``canvas_commit``, ``gesture``, agent topics...

        When the connection drops (or nothing, not even a heartbeat, arrives for
        read_timeout seconds) it reconnects with ``Last-Event-ID`` set to the
        last id received, waiting reconnect_delay (or the server's ``retry``
        other than 0) doubled after each consecutive failure up to
        max_reconnect_delay, with jitter; after max_reconnects consecutive
        failures (None: never gives up) it raises CanvasConnectionError or the
        last ServerError. 400/401/403/404 raise at once.

        A ``reset`` event is yielded too: the caller must re-read the snapshot
        (get_state) and ignore commits with rev ≤ its head_rev; the stream goes
        on from the reset's head_rev. Closing the generator (or leaving a for
        loop over it and dropping it) closes the connection.
        """
        path = self._path("/sse/canvas/" + _seg(canvas_id))
        parser = SSEParser(last_event_id)
        failures = 0
        conn: Optional[http.client.HTTPConnection] = None
        try:
            while True:
                error: Optional[BaseException] = None
                retry_after: Optional[str] = None
                headers = self._headers({"Accept": "text/event-stream", "Cache-Control": "no-cache"})
                if parser.last_event_id:
                    headers["Last-Event-ID"] = parser.last_event_id
                try:
                    conn = self._connect(self.timeout)
                    conn.connect()
                    conn.sock.settimeout(read_timeout)  # a silent stream (no heartbeat) counts as dropped
                    conn.request("GET", path, headers=headers)
                    resp = conn.getresponse()
                except _TRANSPORT_ERRORS as e:
                    error = e
                    resp = None
                    if conn is not None:
                        conn.close()
                        conn = None
                if resp is not None and resp.status != 200:
                    body = resp.read()
                    hdrs = {k.lower(): v for k, v in resp.getheaders()}
                    r = _Response(resp.status, resp.reason, hdrs, body)
                    conn.close()
                    conn = None
                    err = error_for_status(
                        r.status, r.reason, problem=r.data if isinstance(r.data, dict) else None, body=body,
                        headers=hdrs, method="GET", url=self.base_url + path,
                    )
                    if r.status in (400, 401, 403, 404):
                        raise err  # a refusal retrying cannot change; any other reconnects
                    error, retry_after = err, hdrs.get("retry-after")
                elif resp is not None:
                    parser.reset_connection()
                    try:
                        while True:
                            chunk = resp.read1(65536)
                            if not chunk:
                                break  # the server ended the stream
                            for ev in parser.feed(chunk):
                                failures = 0
                                if ev.event == "reset" and ev.id is None and isinstance(ev.data, dict):
                                    hr = ev.data.get("head_rev")
                                    if isinstance(hr, int) and not isinstance(hr, bool):
                                        parser.set_last_event_id(str(hr))
                                yield ev
                    except (_TRANSPORT_ERRORS + (socket.timeout,)) as e:
                        error = e
                    finally:
                        if conn is not None:
                            conn.close()
                            conn = None
                failures += 1
                if max_reconnects is not None and failures > max_reconnects:
                    if isinstance(error, CanvasError):
                        raise error
                    raise CanvasConnectionError(
                        "GET %s: stream lost and %d reconnects failed: %s" % (self.base_url + path, max_reconnects, error),
                        method="GET", url=self.base_url + path,
                    ) from error
                # "retry: 0" would remove the backoff altogether (0 * 2**n): keep reconnect_delay.
                base = parser.retry / 1000.0 if parser.retry else reconnect_delay
                delay = min(max_reconnect_delay, base * (2 ** min(failures - 1, 30)))
                delay *= 0.5 + 0.5 * self._rand()
                if retry_after:
                    try:
                        delay = max(delay, min(float(retry_after), max_reconnect_delay))
                    except ValueError:
                        pass
                self._sleep(delay)
        finally:
            if conn is not None:
                conn.close()
