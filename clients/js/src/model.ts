// CanvasModel: the nodes and edges of one canvas, following commits.

import type { Commit, Edge, Node, Snapshot, TextEdit } from "./types.js";

/** JSON merge patch (RFC 7396) of plain objects: null deletes a key. */
export function mergePatch(target: unknown, patch: Record<string, unknown> | null | undefined): Record<string, unknown> {
  const base = target && typeof target === "object" && !Array.isArray(target) ? (target as Record<string, unknown>) : {};
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(patch || {})) {
    if (v === null) delete out[k];
    else if (typeof v === "object" && !Array.isArray(v)) out[k] = mergePatch(out[k], v as Record<string, unknown>);
    else out[k] = v;
  }
  return out;
}

/** Splits text into lines keeping their terminators ("" has none, "a\n" one). */
export function splitLines(text: string): string[] {
  return text === "" ? [] : text.match(/[^\n]*\n|[^\n]+$/g) || [];
}

/** Applies a TextEdit's hunks (1-indexed lines of the old text, ascending, not overlapping). */
export function applyTextEdit(text: string, hunks: TextEdit["hunks"]): string {
  const lines = splitLines(text || "");
  const out: string[] = [];
  let next = 0;
  for (const h of hunks || []) {
    const at = h.line - 1;
    if (at < next || at > lines.length || h.del < 0 || at + h.del > lines.length) throw new Error("edit hunk out of range");
    while (next < at) out.push(lines[next++]!);
    out.push(h.ins || "");
    next = at + h.del;
  }
  while (next < lines.length) out.push(lines[next++]!);
  return out.join("");
}

const NODE_FIELDS = new Set(["type", "name", "parent_id", "index", "x", "y", "w", "h", "rotation"]);
const EDGE_FIELDS = new Set(["from", "to", "type"]);

/** What CanvasModel.apply did with a commit. */
export type ApplyOutcome = "applied" | "old" | "gap";

/** z-order of nodes: index, then id (as the server sorts them). */
function zOrder(a: Node, b: Node): number {
  return a.index < b.index ? -1 : a.index > b.index ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** The position of n in an array sorted by zOrder (where it is, or where it would go). */
function zSearch(list: Node[], n: Node): number {
  let lo = 0, hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (zOrder(list[mid]!, n) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

const GONE = Symbol("deleted");

/**
 * The nodes and edges of one canvas at revision `rev`. It applies each
 * commit's effective diff (put / patch with a props merge patch / edit /
 * delete) as the server does, all-or-nothing, so a client follows the server
 * revision by revision without re-reading the snapshot.
 *
 * A commit costs O(its changes): the maps are updated in place (a changed
 * node or edge is a new object, unchanged ones keep their identity), and the
 * z-ordered list of sorted() is kept by binary search rather than re-sorted.
 * Keep model.nodes and model.edges for reading: they change in place.
 */
export class CanvasModel {
  readonly canvasId: string;
  rev: number;
  /** The event id of the last commit applied (a valid Last-Event-ID). */
  eventId: string;
  nodes: Map<string, Node>;
  edges: Map<string, Edge>;
  private sortedCache: Node[] | null = null;

  constructor(snapshot: Snapshot) {
    this.canvasId = snapshot.canvas_id;
    this.rev = snapshot.head_rev || 0;
    this.eventId = snapshot.head_event_id || "";
    this.nodes = new Map((snapshot.state?.nodes || []).map((n) => [n.id, n]));
    this.edges = new Map((snapshot.state?.edges || []).map((e) => [e.id, e]));
  }

  /** The id to resume a stream after this model's revision. */
  resumeId(): string {
    return this.eventId || String(this.rev);
  }

  /** Nodes in z-order (index, then id), as the server sorts them. Do not modify the array. */
  sorted(): Node[] {
    if (!this.sortedCache) this.sortedCache = [...this.nodes.values()].sort(zOrder);
    return this.sortedCache;
  }

  /**
   * Applies one commit: "old" for a commit at or below rev (already applied),
   * "gap" when revisions were skipped (re-read the snapshot), "applied"
   * otherwise. A change that cannot apply throws and leaves the model as it was.
   */
  apply(c: Commit): ApplyOutcome {
    if (c.rev <= this.rev) return "old";
    if (c.rev !== this.rev + 1) return "gap";
    // Stage the commit's results (later changes of the same id see earlier
    // ones), then write them: nothing is written when a change throws.
    const staged = new Map<string, any>(); // "n:" / "e:" + id → new value or GONE
    for (const ch of c.changes || []) {
      const key = (ch.kind === "edge" ? "e:" : "n:") + ch.id;
      const map = (ch.kind === "edge" ? this.edges : this.nodes) as Map<string, any>;
      const had = staged.get(key);
      const old = had === GONE ? undefined : had ?? map.get(ch.id);
      switch (ch.op) {
        case "put": {
          const v: any = Object.assign({}, ch.value);
          if (!old) {
            v.created_rev = c.rev;
            v.created_by = c.actor_id;
          }
          v.updated_rev = c.rev;
          if (ch.kind === "node") v.updated_by = c.actor_id;
          staged.set(key, v);
          break;
        }
        case "patch": {
          if (!old) throw new Error(`patch of missing ${ch.kind} ${ch.id}`);
          const v: any = Object.assign({}, old);
          for (const [k, val] of Object.entries(ch.patch || {})) {
            if (k === "props") v.props = val === null ? {} : mergePatch(v.props, val as Record<string, unknown>);
            else if ((ch.kind === "node" ? NODE_FIELDS : EDGE_FIELDS).has(k)) v[k] = val;
          }
          v.updated_rev = c.rev;
          if (ch.kind === "node") v.updated_by = c.actor_id;
          staged.set(key, v);
          break;
        }
        case "edit": {
          if (!old) throw new Error(`edit of missing ${ch.kind} ${ch.id}`);
          const v: any = Object.assign({}, old);
          const e = ch.edit!;
          v.props = Object.assign({}, v.props);
          v.props[e.prop] = applyTextEdit(typeof v.props[e.prop] === "string" ? v.props[e.prop] : "", e.hunks);
          v.updated_rev = c.rev;
          v.updated_by = c.actor_id;
          staged.set(key, v);
          break;
        }
        case "delete":
          staged.set(key, GONE);
          break;
        default:
          throw new Error(`unknown change op ${(ch as { op: string }).op}`);
      }
    }
    const list = this.sortedCache;
    for (const [key, v] of staged) {
      const id = key.slice(2);
      if (key[0] === "e") {
        if (v === GONE) this.edges.delete(id);
        else this.edges.set(id, v);
        continue;
      }
      const old = this.nodes.get(id);
      if (v === GONE) this.nodes.delete(id);
      else this.nodes.set(id, v);
      if (!list) continue;
      // Keep the z-ordered list: replace in place when the order holds, else move.
      let at = old ? zSearch(list, old) : -1;
      if (old && list[at] !== old) at = list.indexOf(old); // not found by order: the cache is off, find it
      if (v !== GONE && old && at >= 0 && v.index === old.index) {
        list[at] = v;
        continue;
      }
      if (at >= 0) list.splice(at, 1);
      if (v !== GONE) list.splice(zSearch(list, v), 0, v);
    }
    this.rev = c.rev;
    this.eventId = c.event_id || "";
    return "applied";
  }
}
