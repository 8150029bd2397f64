// A text/event-stream parser (the WHATWG event-stream interpretation rules)
// fed with decoded text chunks.

/** One dispatched event: its name ("message" when none), id (undefined when the event set none) and data. */
export interface RawEvent {
  event: string;
  id?: string;
  data: string;
}

/** Parses event-stream text incrementally; `lastEventId` follows the ids seen, `retry` the server's reconnect delay. */
export class SSEParser {
  lastEventId: string;
  retry?: number;
  private buf = "";
  private event = "";
  private data: string[] = [];
  private id: string | undefined;
  private sawCR = false;

  constructor(lastEventId = "") {
    this.lastEventId = lastEventId;
  }

  /** Starts a new connection: a half-received event is dropped. */
  resetConnection(): void {
    this.buf = "";
    this.event = "";
    this.data = [];
    this.id = undefined;
    this.sawCR = false;
  }

  /** Feeds decoded text and returns the events completed by it. */
  feed(text: string): RawEvent[] {
    const out: RawEvent[] = [];
    if (this.sawCR && text.startsWith("\n")) text = text.slice(1); // CRLF split across chunks
    this.sawCR = false;
    this.buf += text;
    let start = 0;
    for (let i = 0; i < this.buf.length; i++) {
      const ch = this.buf.charCodeAt(i);
      if (ch !== 10 && ch !== 13) continue;
      const line = this.buf.slice(start, i);
      if (ch === 13) {
        if (i + 1 < this.buf.length) {
          if (this.buf.charCodeAt(i + 1) === 10) i++;
        } else {
          this.sawCR = true;
        }
      }
      start = i + 1;
      const ev = this.line(line);
      if (ev) out.push(ev);
    }
    this.buf = this.buf.slice(start);
    return out;
  }

  private line(line: string): RawEvent | undefined {
    if (line === "") {
      if (this.data.length === 0) {
        this.event = "";
        this.id = undefined;
        return undefined;
      }
      const ev: RawEvent = { event: this.event || "message", data: this.data.join("\n") };
      if (this.id !== undefined) ev.id = this.id;
      this.event = "";
      this.data = [];
      this.id = undefined;
      return ev;
    }
    if (line.startsWith(":")) return undefined; // comment (heartbeat)
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "event":
        this.event = value;
        break;
      case "data":
        this.data.push(value);
        break;
      case "id":
        if (!value.includes("\0")) {
          this.id = value;
          this.lastEventId = value;
        }
        break;
      case "retry":
        if (/^\d+$/.test(value)) this.retry = Number(value);
        break;
    }
    return undefined;
  }
}
