"""canvas_client: the Python client of the canvasd HTTP API (standard library only).

    from canvas_client import CanvasAgentClient, ConflictError
    c = CanvasAgentClient("http://127.0.0.1:8080", token="...")
    state = c.get_state("c_123")
    rev = c.apply("c_123", "create_node", {"name": "Idea"}, base_rev=state["head_rev"])
    for event in c.stream("c_123", last_event_id=state["head_event_id"]):
        print(event.event, event.id, event.data)
"""

from ._version import __version__
from .client import ApplyResult, CanvasAgentClient, ConflictHandler
from .errors import (
    AuthError,
    CanvasConnectionError,
    CanvasError,
    ConflictError,
    NotFoundError,
    ServerError,
    ValidationError,
)
from .sse import Event, SSEParser

__all__ = [
    "__version__",
    "CanvasAgentClient",
    "ApplyResult",
    "ConflictHandler",
    "Event",
    "SSEParser",
    "CanvasError",
    "AuthError",
    "NotFoundError",
    "ConflictError",
    "ValidationError",
    "ServerError",
    "CanvasConnectionError",
]
