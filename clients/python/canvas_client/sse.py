"""An incremental parser for ``text/event-stream`` (the WHATWG HTML "server-sent
events" interpretation rules), independent of any transport."""

import codecs
import json
import re
from dataclasses import dataclass, field
from typing import Any, List, Optional

__all__ = ["Event", "SSEParser"]


_EOL = re.compile(r"\r\n|\r|\n")


@dataclass
class Event:
    """One dispatched server-sent event.

    Attributes:
        event: the event type (``canvas_commit``, ``caught_up``, ``reset``,
            ``gesture``, ...); ``message`` when the server named none.
        id: the ``id`` field sent with this event, or None when the event had
            none (gestures). Resumption uses the last id seen on the stream.
        data: the data parsed as JSON (a dict for every canvasd event); the raw
            string when it is not valid JSON.
        raw: the data exactly as received (multi-line data joined with "\\n").
        retry: the reconnection delay in milliseconds the server asked for in
            this event's block, if any.
    """

    event: str
    id: Optional[str]
    data: Any
    raw: str = field(default="", repr=False)
    retry: Optional[int] = field(default=None, repr=False)


class SSEParser:
    """Feeds bytes in, gets complete :class:`Event` objects out.

    Lines may end in CRLF, LF or CR (also split across feeds); a leading UTF-8
    BOM is dropped; comment lines (``:``) are ignored; ``data`` lines are joined
    with ``\\n``; a block without data dispatches nothing; an ``id`` containing
    NUL is ignored; ``retry`` with only ASCII digits sets :attr:`retry`.

    Attributes:
        last_event_id: the id of the last complete block (what a reconnect
            sends as ``Last-Event-ID``); it persists across events, as in the
            spec, and an id in a block cut off by a dropped connection does not
            count.
        retry: the last reconnection time (ms) the server sent, or None.
    """

    def __init__(self, last_event_id: Optional[str] = None) -> None:
        self.last_event_id = last_event_id
        self._id_buffer = last_event_id
        self.retry: Optional[int] = None
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._tail: List[str] = []  # the pieces of the unfinished line
        self._started = False
        self._pending_cr = False
        self._reset_block()

    def _reset_block(self) -> None:
        self._data: List[str] = []
        self._event = ""
        self._id: Optional[str] = None
        self._block_retry: Optional[int] = None

    def set_last_event_id(self, value: Optional[str]) -> None:
        """Sets the id to resume from (for example after a reset event)."""
        self.last_event_id = value
        self._id_buffer = value

    def reset_connection(self) -> None:
        """Forgets partial input (call when a connection ends); keeps last_event_id and retry."""
        self._decoder.reset()
        self._id_buffer = self.last_event_id  # an id of an undispatched block does not count
        self._tail = []
        self._started = False
        self._pending_cr = False
        self._reset_block()

    def feed(self, chunk: bytes) -> List[Event]:
        """Parses chunk and returns the events it completed, in order."""
        text = self._decoder.decode(chunk)
        if not self._started and text:
            self._started = True
            if text.startswith("\ufeff"):
                text = text[1:]
        if self._pending_cr and text:
            if text.startswith("\n"):
                text = text[1:]  # the LF of a CRLF split across chunks
            self._pending_cr = False
        out: List[Event] = []
        pos = 0
        # Only the new text is scanned; an unfinished line waits in pieces
        # (joined once it ends), so a long line costs time linear in its size.
        for m in _EOL.finditer(text):
            line = text[pos:m.start()]
            if self._tail:
                self._tail.append(line)
                line = "".join(self._tail)
                self._tail = []
            if m.end() == len(text) and m.group() == "\r":
                self._pending_cr = True  # its LF may start the next chunk
            ev = self._line(line)
            if ev is not None:
                out.append(ev)
            pos = m.end()
        if pos < len(text):
            self._tail.append(text[pos:])
        return out

    def _line(self, line: str) -> Optional[Event]:
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None  # comment / heartbeat
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\x00" not in value:
                self._id = value
                self._id_buffer = value
        elif name == "retry":
            if value.isdigit() and value.isascii():
                self.retry = int(value)
                self._block_retry = self.retry
        return None

    def _dispatch(self) -> Optional[Event]:
        data, etype, eid, retry = self._data, self._event, self._id, self._block_retry
        self._reset_block()
        self.last_event_id = self._id_buffer
        if not data:
            return None
        raw = "\n".join(data)
        try:
            parsed: Any = json.loads(raw)
        except ValueError:
            parsed = raw
        return Event(event=etype or "message", id=eid, data=parsed, raw=raw, retry=retry)
