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

/**
 * The nodes and edges of one canvas at revision `rev`. It applies each
 * commit's effective diff (put / patch with a props merge patch / edit /
 * delete) as the server does, all-or-nothing, so a client follows the server
 * revision by revision without re-reading the snapshot.
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

  /** Nodes in z-order (index, then id), as the server sorts them. */
  sorted(): Node[] {
    if (!this.sortedCache) {
      this.sortedCache = [...this.nodes.values()].sort((a, b) =>
        a.index < b.index ? -1 : a.index > b.index ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
    }
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
    const nodes = new Map(this.nodes);
    const edges = new Map(this.edges);
    for (const ch of c.changes || []) {
      const map = (ch.kind === "edge" ? edges : nodes) as Map<string, any>;
      const old = map.get(ch.id);
      switch (ch.op) {
        case "put": {
          const v: any = Object.assign({}, ch.value);
          if (!old) {
            v.created_rev = c.rev;
            v.created_by = c.actor_id;
          }
          v.updated_rev = c.rev;
          if (ch.kind === "node") v.updated_by = c.actor_id;
          map.set(ch.id, v);
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
          map.set(ch.id, v);
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
          map.set(ch.id, v);
          break;
        }
        case "delete":
          map.delete(ch.id);
          break;
        default:
          throw new Error(`unknown change op ${(ch as { op: string }).op}`);
      }
    }
    this.nodes = nodes;
    this.edges = edges;
    this.sortedCache = null;
    this.rev = c.rev;
    this.eventId = c.event_id || "";
    return "applied";
  }
}
