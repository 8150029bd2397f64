// What the web UI sends for a person's edit of an arrow: the planning of
// the canvas view (canvas.ts) that needs no Excalidraw, unit-tested with
// node --test (plan.test.ts).

import type { Edge as CanvasEdge, Node as CanvasNode } from "@canvasd/client";
import { arrowParts, edgeDraft, edgePatch, edgePoints, newEdgeProps, pointsDiffer, type El, type Props } from "./mapping";

/** A command planned for a gesture: its type and args, the node and edge ids it is about, the fields it writes (for conflicts). */
export interface Planned {
  type: string;
  args: Record<string, unknown>;
  ids: string[];
  fields: string[];
}

/** What planArrow knows of the canvas and of the gesture. */
export interface ArrowContext {
  /** The canvas as the server has it. */
  nodes: ReadonlyMap<string, CanvasNode>;
  edges: ReadonlyMap<string, CanvasEdge>;
  /** Nodes the gesture deletes (with their edges). */
  gone: ReadonlySet<string>;
  /** Nodes the gesture creates (an arrow may join them: a copied pair and its edge). */
  created: ReadonlySet<string>;
  /** Nodes the gesture moves, resizes or turns (an arrow bound to them followed them). */
  moved: ReadonlySet<string>;
  /** The ids of the elements selected. */
  selected: ReadonlySet<string>;
}

/**
 * The command for arrow element el (edge id; its label among byId): a new
 * arrow is a create_edge, bound at the ends Excalidraw bound to a node and
 * free elsewhere, through its points (a copy of an edge, el.customData.edge,
 * keeps what its arrow cannot show); a deleted one a delete_edge; a changed
 * one an update_edge of what the person changed: its ends, its props (only
 * those that differ, see edgePatch) and its points when the person moved or
 * reshaped it (it is selected) or bound or freed an end. None for an edge
 * at a node the gesture deletes (it goes with it), nor for points that only
 * followed a shape being moved: the server keeps bound ends on their shapes.
 */
export function planArrow(id: string, el: El | undefined, byId: Map<string, El>, ctx: ArrowContext): Planned | null {
  const e = ctx.edges.get(id);
  if (!el || (e && (ctx.gone.has(e.from) || ctx.gone.has(e.to)))) return null;
  if (el.isDeleted) return e ? { type: "delete_edge", args: { id }, ids: [id], fields: ["from", "to", "props.points"] } : null;
  if (el.type !== "arrow") return null;
  const d = edgeDraft(el, (n) => (ctx.nodes.has(n) && !ctx.gone.has(n)) || ctx.created.has(n));
  const parts = arrowParts(el, byId);
  if (!e) {
    const base: Props = { ...(ctx.edges.get(String(el.customData?.edge ?? ""))?.props || {}) };
    for (const k of ["points", "fromSide", "toSide"]) delete base[k];
    return {
      type: "create_edge", args: { id, from: d.from, to: d.to, type: "arrow", props: newEdgeProps(parts, d.points, base) },
      ids: [id, ...[d.from, d.to].filter((n) => ctx.nodes.has(n))], fields: [],
    };
  }
  const props: Props = edgePatch(parts, e.props || {});
  const args: Record<string, unknown> = { id };
  const fields = Object.keys(props).map((k) => "props." + k);
  if (d.from !== e.from) { args.from = d.from; fields.push("from"); }
  if (d.to !== e.to) { args.to = d.to; fields.push("to"); }
  const followed = [e.from, e.to].some((n) => n && ctx.moved.has(n)) && !ctx.selected.has(el.id);
  const rebound = d.from !== e.from || d.to !== e.to;
  if (pointsDiffer(d.points, edgePoints(e, ctx.nodes as Map<string, CanvasNode>)) && (rebound || !followed)) {
    props.points = d.points;
    fields.push("props.points");
  }
  if (Object.keys(props).length) args.props = props;
  return fields.length ? { type: "update_edge", args, ids: [id], fields } : null;
}
