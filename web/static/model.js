// canvasd web UI: the local model of one canvas. It holds the nodes and
// edges of a snapshot and applies each commit's effective diff
// (changes: put / patch with a props merge-patch / edit / delete) exactly as
// the server's reducer.Apply does, so the page follows the server revision
// by revision without re-reading the snapshot.

/** JSON merge patch (RFC 7396) of plain objects: null deletes a key. */
export function mergePatch(target, patch) {
  const out = Object.assign({}, target && typeof target === "object" && !Array.isArray(target) ? target : {});
  for (const [k, v] of Object.entries(patch || {})) {
    if (v === null) delete out[k];
    else if (typeof v === "object" && !Array.isArray(v)) out[k] = mergePatch(out[k], v);
    else out[k] = v;
  }
  return out;
}

/** Splits text into lines keeping their terminators ("" has none, "a\n" one). */
export function splitLines(text) {
  return text === "" ? [] : text.match(/[^\n]*\n|[^\n]+$/g) || [];
}

/** Applies a TextEdit's hunks (1-indexed lines of the old text, ascending). */
export function applyTextEdit(text, hunks) {
  const lines = splitLines(text || "");
  const out = [];
  let next = 0; // index of the next old line to copy
  for (const h of hunks || []) {
    const at = h.line - 1;
    if (at < next || at > lines.length || h.del < 0 || at + h.del > lines.length) {
      throw new Error("edit hunk out of range");
    }
    while (next < at) out.push(lines[next++]);
    out.push(h.ins || "");
    next = at + h.del;
  }
  while (next < lines.length) out.push(lines[next++]);
  return out.join("");
}

const NODE_FIELDS = new Set(["type", "name", "parent_id", "index", "x", "y", "w", "h", "rotation"]);

/** The nodes and edges of one canvas at revision rev. */
export class Model {
  constructor(snapshot) {
    this.canvasId = snapshot.canvas_id;
    this.rev = snapshot.head_rev || 0;
    this.eventId = snapshot.head_event_id || "";
    this.nodes = new Map();
    this.edges = new Map();
    for (const n of (snapshot.state && snapshot.state.nodes) || []) this.nodes.set(n.id, n);
    for (const e of (snapshot.state && snapshot.state.edges) || []) this.edges.set(e.id, e);
    this._sorted = null;
  }

  /** The id of the last event applied: a valid Last-Event-ID. */
  resumeId() {
    return this.eventId || String(this.rev);
  }

  /** Nodes in z-order (index, then id), as the server sorts them. */
  sorted() {
    if (!this._sorted) {
      this._sorted = [...this.nodes.values()].sort((a, b) =>
        a.index < b.index ? -1 : a.index > b.index ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
    }
    return this._sorted;
  }

  /**
   * Applies one commit. Returns "old" for a commit at or below rev (already
   * applied), "gap" when revisions were skipped (the caller re-reads the
   * snapshot), "applied" otherwise. Like the server, it is all-or-nothing: a
   * change that cannot apply throws and leaves the model as it was.
   */
  apply(c) {
    if (c.rev <= this.rev) return "old";
    if (c.rev !== this.rev + 1) return "gap";
    const nodes = new Map(this.nodes);
    const edges = new Map(this.edges);
    for (const ch of c.changes || []) {
      const map = ch.kind === "edge" ? edges : nodes;
      const old = map.get(ch.id);
      switch (ch.op) {
        case "put": {
          const v = Object.assign({}, ch.value);
          if (ch.kind === "edge") {
            if (!old) { v.created_rev = c.rev; v.created_by = c.actor_id; }
            v.updated_rev = c.rev;
          } else {
            if (!old) { v.created_rev = c.rev; v.created_by = c.actor_id; }
            v.updated_rev = c.rev; v.updated_by = c.actor_id;
          }
          map.set(ch.id, v);
          break;
        }
        case "patch": {
          if (!old) throw new Error(`patch of missing ${ch.kind} ${ch.id}`);
          const v = Object.assign({}, old);
          for (const [k, val] of Object.entries(ch.patch || {})) {
            if (k === "props") v.props = val === null ? {} : mergePatch(v.props, val);
            else if (ch.kind === "node" ? NODE_FIELDS.has(k) : ["from", "to", "type"].includes(k)) v[k] = val;
          }
          v.updated_rev = c.rev;
          if (ch.kind === "node") v.updated_by = c.actor_id;
          map.set(ch.id, v);
          break;
        }
        case "edit": {
          if (!old) throw new Error(`edit of missing ${ch.kind} ${ch.id}`);
          const v = Object.assign({}, old);
          const e = ch.edit || {};
          v.props = Object.assign({}, v.props);
          v.props[e.prop] = applyTextEdit(typeof v.props[e.prop] === "string" ? v.props[e.prop] : "", e.hunks);
          v.updated_rev = c.rev; v.updated_by = c.actor_id;
          map.set(ch.id, v);
          break;
        }
        case "delete":
          map.delete(ch.id);
          break;
        default:
          throw new Error(`unknown change op ${ch.op}`);
      }
    }
    this.nodes = nodes;
    this.edges = edges;
    this._sorted = null;
    this.rev = c.rev;
    this.eventId = c.event_id || "";
    return "applied";
  }
}

/** The centre of a node in page coordinates (rotation is about x, y, as in TLDraw). */
export function nodeCenter(n) {
  const r = n.rotation || 0, c = Math.cos(r), s = Math.sin(r);
  const hw = (n.w || 0) / 2, hh = (n.h || 0) / 2;
  return { x: n.x + hw * c - hh * s, y: n.y + hw * s + hh * c };
}

/** The axis-aligned bounds of a node in page coordinates. */
export function nodeBounds(n) {
  const r = n.rotation || 0, c = Math.cos(r), s = Math.sin(r);
  const pts = [[0, 0], [n.w || 0, 0], [0, n.h || 0], [n.w || 0, n.h || 0]]
    .map(([px, py]) => [n.x + px * c - py * s, n.y + px * s + py * c]);
  const xs = pts.map((p) => p[0]), ys = pts.map((p) => p[1]);
  return { minX: Math.min(...xs), minY: Math.min(...ys), maxX: Math.max(...xs), maxY: Math.max(...ys) };
}

/**
 * Where the segment from the centre of box b towards point p leaves b
 * (b: {minX, minY, maxX, maxY}); p itself when p is inside b.
 */
export function exitPoint(b, p) {
  const cx = (b.minX + b.maxX) / 2, cy = (b.minY + b.maxY) / 2;
  const dx = p.x - cx, dy = p.y - cy;
  const hw = (b.maxX - b.minX) / 2, hh = (b.maxY - b.minY) / 2;
  if (dx === 0 && dy === 0) return { x: cx, y: cy };
  const t = Math.min(dx ? hw / Math.abs(dx) : Infinity, dy ? hh / Math.abs(dy) : Infinity);
  if (t >= 1) return { x: p.x, y: p.y };
  return { x: cx + dx * t, y: cy + dy * t };
}
