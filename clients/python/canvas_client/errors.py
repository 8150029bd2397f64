"""Typed exceptions raised by :mod:`canvas_client`.

Every error the client raises is a :class:`CanvasError`. HTTP errors carry the
status code, the response headers and, when the server sent one, the RFC 9457
problem document (``problem``), whose ``detail`` says what was wrong and what
to do about it.
"""

from typing import Any, Dict, List, Mapping, Optional

__all__ = [
    "CanvasError",
    "AuthError",
    "NotFoundError",
    "ConflictError",
    "ValidationError",
    "ServerError",
    "CanvasConnectionError",
    "error_for_status",
]


class CanvasError(Exception):
    """Base class of every error raised by the client.

    Attributes:
        status: the HTTP status code, or None when no response was received.
        problem: the decoded JSON body (an RFC 9457 problem document for
            errors, the conflict result for a command conflict), or None.
        body: the raw response body (bytes), or None.
        headers: the response headers as a plain dict (lower-case names).
        method, url: the request that failed.
    """

    def __init__(
        self,
        message: str,
        *,
        status: Optional[int] = None,
        problem: Optional[Dict[str, Any]] = None,
        body: Optional[bytes] = None,
        headers: Optional[Mapping[str, str]] = None,
        method: Optional[str] = None,
        url: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.problem = problem
        self.body = body
        self.headers = dict(headers or {})
        self.method = method
        self.url = url

    def _field(self, name: str) -> Any:
        if isinstance(self.problem, dict):
            return self.problem.get(name)
        return None

    @property
    def type(self) -> Optional[str]:
        """The problem document's ``type`` URI, if any."""
        return self._field("type")

    @property
    def title(self) -> Optional[str]:
        """The problem document's ``title``, if any."""
        return self._field("title")

    @property
    def detail(self) -> Optional[str]:
        """The problem document's ``detail`` (what was wrong, what to do), if any."""
        return self._field("detail")

    @property
    def retry_after(self) -> Optional[float]:
        """The answer's ``Retry-After`` in seconds, if it gave a number: how
        long a 429 or 503 asks the caller to wait before trying again."""
        try:
            v = float(self.headers.get("retry-after", ""))
        except ValueError:
            return None
        return v if v >= 0 else None


class AuthError(CanvasError):
    """401 (no valid token) or 403 (the token's actor lacks the role)."""


class NotFoundError(CanvasError):
    """404: the canvas (or other resource) does not exist or is not visible."""


class ValidationError(CanvasError):
    """400 (malformed request), 413 (body too large), 415 or 422 (a well-formed
    command that cannot apply). Nothing was written. ``problem`` holds the RFC
    9457 problem document; ``detail`` says what is wrong and what to do."""

    @property
    def field(self) -> Optional[str]:
        """The offending field's JSON path (e.g. ``args.ids[1]``) when the server named one."""
        return self._field("field")


class ServerError(CanvasError):
    """A 5xx answer that the client did not (or could no longer) retry."""

    @property
    def outcome(self) -> Optional[str]:
        """On a 503 to a write: ``"not_written"`` (nothing was written) or
        ``"unknown"`` (problem type ``outcome-unknown``: the write reached the
        database but was not confirmed, so it may have committed; retry it
        with the same idempotency key, which returns the original result if it
        did). None when the server did not say."""
        return self._field("outcome")


class CanvasConnectionError(CanvasError, ConnectionError):
    """The server could not be reached (or the connection broke) and the
    request was not retried or every retry failed. ``__cause__`` holds the last
    underlying OSError."""


class ConflictError(CanvasError):
    """409. For a command: its ``base_rev`` is stale and something it touches
    changed since (or ``strict`` was set, or ``base_rev`` is ahead of head).

    Attributes:
        current_rev: the canvas head revision when the server answered
            (None for a 409 that is not a command conflict, e.g. creating a
            canvas whose id exists).
        base_rev: the base revision the command was sent with.
        conflicting_ids: ids of the nodes/edges that changed after base_rev.
        recovery_ops: the commits after base_rev that touched those ids.
        recovery_ops_incomplete: True when recovery_ops could not list them
            all (base_rev too far behind): re-read the snapshot instead.
        suggestion: the server's advice on how to recover.
        problem: the whole 409 body (conflict result or problem document).
        idempotency_key: the key the rejected command was sent with (commands only).
    """

    def __init__(self, message: str, **kw: Any) -> None:
        self.idempotency_key: Optional[str] = kw.pop("idempotency_key", None)
        super().__init__(message, **kw)
        body = self.problem if isinstance(self.problem, dict) else {}
        cur = body.get("current_rev")
        self.current_rev: Optional[int] = cur if isinstance(cur, int) else None
        base = body.get("base_rev")
        self.base_rev: Optional[int] = base if isinstance(base, int) else None
        self.conflicting_ids: List[str] = list(body.get("conflicting_ids") or [])
        self.recovery_ops: List[Dict[str, Any]] = list(body.get("recovery_ops") or [])
        self.recovery_ops_incomplete: bool = body.get("recovery_ops_incomplete") is True
        self.suggestion: Optional[str] = body.get("suggestion")


def _message(status: int, reason: str, problem: Optional[Dict[str, Any]], method: str, url: str) -> str:
    text = "%s %s: %d %s" % (method, url, status, reason)
    if isinstance(problem, dict):
        title = problem.get("title")
        detail = problem.get("detail") or problem.get("suggestion")
        if title and title != reason:
            text += " (%s)" % title
        if detail:
            text += ": %s" % detail
    return text


def error_for_status(
    status: int,
    reason: str,
    *,
    problem: Optional[Dict[str, Any]],
    body: Optional[bytes],
    headers: Mapping[str, str],
    method: str,
    url: str,
    idempotency_key: Optional[str] = None,
) -> CanvasError:
    """Returns the typed exception for a non-2xx HTTP answer."""
    kw: Dict[str, Any] = dict(status=status, problem=problem, body=body, headers=headers, method=method, url=url)
    msg = _message(status, reason, problem, method, url)
    if status in (401, 403):
        return AuthError(msg, **kw)
    if status == 404:
        return NotFoundError(msg, **kw)
    if status == 409:
        return ConflictError(msg, idempotency_key=idempotency_key, **kw)
    if status in (400, 413, 415, 422):
        return ValidationError(msg, **kw)
    if status >= 500:
        return ServerError(msg, **kw)
    return CanvasError(msg, **kw)
