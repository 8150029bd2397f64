// What the web UI sends for a person's gesture on the canvas: the planning
// of the canvas view (canvas.ts), pure (no Excalidraw, no DOM), unit-tested
// with node --test (plan.test.ts). Given the canvas as the server has it,
// what the page drew of it and the scene after the gesture, planGesture
// computes the commands that bring the server to what the person sees:
// creates, moves, resizes, rotations, deletes, text and style edits, groups,
// frames, z-order and arrows (planArrow), and the edits of shapes others
// deleted meanwhile (conflicts, not creates).

import type { CanvasModel, Commit, ConflictResult, Edge as CanvasEdge, Node as CanvasNode } from "@canvasd/client";
import { arrowParts, edgeDraft, edgePatch, edgePoints, elementId, newEdgeProps, nodeDraft, partOf, pointsDiffer, type El, type NodeDraft, type Props } from "./mapping";

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

// ------------------------------------------------------------ gestures

/** The canvas as the server has it (the page's CanvasModel). */
export type ServerCanvas = Pick<CanvasModel, "rev" | "nodes" | "edges" | "sorted">;

/** Excalidraw's image files by id (what the planner reads of them). */
export type Files = Readonly<Record<string, { dataURL?: string } | undefined>>;

/** What the page knows beside the server's canvas (CanvasView's bookkeeping). */
export interface PageState {
  /** Element id → the version the page put on stage (the server's version, shown). */
  rendered: ReadonlyMap<string, number>;
  /** Element id → the stamp (see stamp) of the version sent to the server, its commit pending. */
  sent: ReadonlyMap<string, string>;
  /** Parent node id → its child node ids. */
  children: ReadonlyMap<string, ReadonlySet<string>>;
  /** Nodes others deleted, by the commit that did: an edit of one on screen is a conflict, not a create. */
  deletedByOthers: ReadonlyMap<string, Commit>;
}

/** A gesture: the scene after it (Excalidraw's elements, deleted ones included), its files and the ids of the elements selected. */
export interface Gesture {
  els: readonly El[];
  files: Files;
  selected: ReadonlySet<string>;
}

/** An edit of a shape others deleted meanwhile: the create_shape that would bring it back, and the commit that deleted it. */
export interface Lost {
  cmd: Planned;
  by: Commit;
}

/** What planGesture plans. */
export interface GesturePlan {
  /** The commands to send, in order, as one batch. */
  cmds: Planned[];
  /** Edits of shapes others deleted: shown as a conflict (lostConflict), not sent. */
  lost: Lost[];
  /** The nodes and edges whose elements the gesture changed (the commands carry them). */
  dirty: ReadonlySet<string>;
}

/** The fields a create or delete of a shape conflicts on. */
export const GEOMETRY = ["x", "y", "w", "h", "rotation"];

/** A shape moved: by (dx, dy), to (x, y). */
interface Move { id: string; dx: number; dy: number; x: number; y: number }
/** A shape turned by deg degrees about (ox, oy). */
interface Turn { id: string; deg: number; ox: number; oy: number }

/**
 * What tells one version of an element from another: its version and its
 * nonce (a version number alone comes back: the server's version of a shape
 * may go on stage with a lower number than the person's edit had).
 */
export function stamp(el: El): string {
  return `${el.version}:${el.versionNonce}`;
}

/** The node (or edge) that element el shows: a bound label's is its container's. */
export function nodeOf(el: El): string {
  return partOf(el.containerId || el.id).node;
}

/**
 * A shape or arrow deleted on the page that the server has, although the
 * page never drew the server's version of it: one the person drew and
 * deleted before the page took their commit on stage. Its delete is sent
 * like any other (it came back after a reload otherwise).
 */
export function deletedFromServer(el: El, m: ServerCanvas | null): boolean {
  if (!el.isDeleted || partOf(el.id).part || !m) return false;
  const id = nodeOf(el);
  return m.nodes.has(id) || m.edges.has(id);
}

/** Whether element el is the person's version, not the one the page drew (rendered: element id → version drawn). */
export function isDirty(el: El, rendered: ReadonlyMap<string, number>, m: ServerCanvas | null): boolean {
  const r = rendered.get(el.id);
  return r === undefined ? !el.isDeleted || deletedFromServer(el, m) : r !== el.version;
}

/** An edit of the person's that no planned gesture has sent yet (sent: element id → stamp sent). */
export function isUnplanned(el: El, rendered: ReadonlyMap<string, number>, sent: ReadonlyMap<string, string>, m: ServerCanvas | null): boolean {
  return isDirty(el, rendered, m) && sent.get(el.id) !== stamp(el) && !(el.isDeleted && rendered.get(el.id) === undefined && !deletedFromServer(el, m));
}

/** Adds node id and its descendants (64 levels at most) to into. */
export function subtree(id: string, children: ReadonlyMap<string, ReadonlySet<string>>, into: Set<string>, depth = 0): void {
  into.add(id);
  if (depth < 64) for (const k of children.get(id) || []) subtree(k, children, into, depth + 1);
}

/** The groups a node is in, innermost first. */
export function groupChain(n: CanvasNode, nodes: ReadonlyMap<string, CanvasNode>): string[] {
  const out: string[] = [];
  let p = n.parent_id ? nodes.get(n.parent_id) : undefined;
  for (let d = 0; p && d < 64; d++) {
    if (p.type === "group") out.push(p.id);
    p = p.parent_id ? nodes.get(p.parent_id) : undefined;
  }
  return out;
}

/**
 * The commands that bring the server (m) to what the person sees after
 * gesture g: for each node and edge with an element the page has not sent
 * (isUnplanned), what changed of it. Shapes: a create_shape (in the
 * innermost group the server has, else in its frame); a delete_shape of
 * all deleted; reorders; one relative move for shapes dragged together
 * (absolute otherwise); resizes; one rotate for shapes turned together;
 * update_shape of props, name, points and parent (dragged into or out of a
 * frame); ungroup and group. Arrows: planArrow. A new element whose node
 * others deleted (page.deletedByOthers) is lost, not created.
 */
export function planGesture(m: ServerCanvas, page: PageState, g: Gesture): GesturePlan {
  const { els, files, selected } = g;
  const byId = new Map<string, El>();
  const labels = new Map<string, El>();
  for (const el of els) {
    byId.set(el.id, el);
    if (el.type === "text" && el.containerId && !el.isDeleted) labels.set(el.containerId, el);
  }
  for (const [cid, t] of labels) byId.set(cid + "::text", t);
  const dirtyNodes = new Set<string>();
  const dirtyEdges = new Set<string>();
  for (const el of els) {
    if (!isUnplanned(el, page.rendered, page.sent, m)) continue;
    const node = nodeOf(el);
    // Every arrow is an edge (its label too).
    if (m.edges.has(node) || (!m.nodes.has(node) && byId.get(elementId(node))?.type === "arrow")) dirtyEdges.add(node);
    else dirtyNodes.add(node);
  }
  const dirty = new Set([...dirtyNodes, ...dirtyEdges]);
  const cmds: Planned[] = [];
  const lost: Lost[] = [];
  if (!dirty.size) return { cmds, lost, dirty };
  const cmd = (type: string, args: Record<string, unknown>, ids: string[], fields: string[]) => cmds.push({ type, args, ids, fields });
  const deleted: string[] = [];
  const moves: Move[] = [];
  const turns: Turn[] = [];
  const groups = new Map<string, { members: Set<string>; depth: number }>(); // new group id → what it holds (ids may start with "-": Excalidraw's nanoids)
  const ungroups = new Set<string>();
  // Frames first: a new shape in a new frame is created after it.
  const order = [...dirtyNodes].sort((a, b) => +(byId.get(elementId(b))?.type === "frame") - +(byId.get(elementId(a))?.type === "frame"));
  const created = new Set<string>();
  const reframed = new Set<string>();
  for (const id of order) {
    const el = byId.get(elementId(id));
    const prev = m.nodes.get(id);
    if (!el) continue;
    if (el.isDeleted) {
      if (prev) deleted.push(id);
      else if (partOf(el.id).part === "text" || el.containerId) { /* a label removed: handled with its node */ }
      continue;
    }
    if (prev?.type === "doc" && partOf(el.id).part) continue;
    const d = nodeDraft(el, byId, prev, files, prev ? undefined : m.nodes.get(String(el.customData?.node ?? "")));
    if (!d) continue;
    // A dropped or picked image is on stage before its file is read: it is
    // created once its data URL is there (the next change), not empty first.
    if (!prev && d.type === "image" && !d.props.url) continue;
    // Excalidraw's groupIds run from the innermost group out; the ones the server lacks are new.
    const want: string[] = ((el.groupIds || []) as string[]).filter((gid) => !gid.includes("::")).map((gid) => partOf(gid).node);
    if (!prev) {
      const args: Record<string, unknown> = { id, type: d.type, x: d.x, y: d.y, w: d.w, h: d.h, props: d.props };
      if (d.rotation) args.rotation = d.rotation;
      if (d.name) args.name = d.name;
      // In the innermost group the server has (new inner ones are made below), else in its frame.
      const frame = el.frameId ? partOf(el.frameId).node : "";
      const parent = want.find((gid) => m.nodes.has(gid)) || (m.nodes.has(frame) || created.has(frame) ? frame : "");
      if (parent) args.parent_id = parent;
      if (d.type === "draw" || d.type === "line") { args.w = Math.max(1, d.w); args.h = Math.max(1, d.h); }
      for (const k of Object.keys(d.props)) if (d.props[k] === null) delete d.props[k];
      const by = page.deletedByOthers.get(id);
      if (by) { // someone deleted it while the user changed it: a conflict, not a new shape
        lost.push({ cmd: { type: "create_shape", args, ids: [id], fields: GEOMETRY }, by });
        continue;
      }
      cmd("create_shape", args, [id], []);
      created.add(id);
    } else {
      planUpdate(id, d, prev, page.children, cmd, moves, turns);
      const chain = groupChain(prev, m.nodes);
      for (const gid of chain) if (!want.includes(gid)) ungroups.add(gid);
      // Dragged into or out of a frame: the shape, or the outermost group
      // it stays in, changes parent (frames do not nest on screen).
      const frame = el.frameId ? partOf(el.frameId).node : "";
      let top = prev;
      for (let p = m.nodes.get(top.parent_id || ""), k = 0; p?.type === "group" && k < 64; p = m.nodes.get(p.parent_id || ""), k++) top = p;
      if (prev.type !== "frame" && chain.every((gid) => want.includes(gid)) && (top.parent_id || "") !== frame &&
        (!frame || m.nodes.has(frame) || created.has(frame)) && !reframed.has(top.id)) {
        reframed.add(top.id);
        cmd("update_shape", { id: top.id, parent_id: frame }, [top.id], ["parent_id"]);
      }
    }
    // A new group holds the next inner group, or the shape.
    want.forEach((gid, k) => {
      if (m.nodes.has(gid)) return;
      const gr = groups.get(gid) || { members: new Set<string>(), depth: k };
      gr.members.add(k ? want[k - 1] : id);
      groups.set(gid, gr);
    });
  }
  if (deleted.length) cmd("delete_shape", { ids: deleted }, deleted, GEOMETRY);
  for (const [op, ids] of planOrder(m, els, dirtyNodes)) cmd("reorder", { ids, op }, ids, ["index"]);
  // One relative move for shapes dragged together, absolute otherwise.
  const byDelta = new Map<string, Move[]>();
  for (const mv of moves) {
    const k = `${mv.dx},${mv.dy}`;
    byDelta.set(k, [...(byDelta.get(k) || []), mv]);
  }
  for (const group of byDelta.values()) {
    if (group.length > 1) cmd("move", { ids: group.map((mv) => mv.id), dx: group[0].dx, dy: group[0].dy }, group.map((mv) => mv.id), ["x", "y"]);
    else cmd("move", { id: group[0].id, x: group[0].x, y: group[0].y }, [group[0].id], ["x", "y"]);
  }
  // One rotate for shapes turned together (about the same point).
  const byTurn = new Map<string, Turn[]>();
  for (const tu of turns) {
    const k = `${tu.deg},${Math.round(tu.ox)},${Math.round(tu.oy)}`;
    byTurn.set(k, [...(byTurn.get(k) || []), tu]);
  }
  for (const group of byTurn.values()) {
    const ids = group.map((tu) => tu.id);
    cmd("rotate", { ids, degrees: group[0].deg, origin_x: group[0].ox, origin_y: group[0].oy }, ids, ["rotation", "x", "y"]);
  }
  for (const gid of ungroups) cmd("ungroup", { id: gid }, [gid], ["parent_id"]);
  for (const [gid, gr] of [...groups].sort((a, b) => a[1].depth - b[1].depth)) {
    const ids = [...gr.members];
    if (ids.length > 1) cmd("group", { ids, group_id: gid }, ids, ["parent_id"]);
  }
  // An edge at a deleted shape goes with it.
  const gone = new Set<string>();
  for (const id of deleted) subtree(id, page.children, gone);
  // Arrows (edges): what the person changed of them.
  const arrows: ArrowContext = { nodes: m.nodes, edges: m.edges, gone, created, moved: dirtyNodes, selected };
  for (const id of dirtyEdges) {
    const c = planArrow(id, byId.get(elementId(id)), byId, arrows);
    if (c) cmds.push(c);
  }
  // (An arrow that only followed a shape sends nothing: it settles with that shape's command.)
  return { cmds, lost, dirty };
}

/**
 * The 409 a command that met the deletes of lost would have had (m: the
 * canvas now): shown like one, held, with Keep mine (recreate) or Take theirs.
 */
export function lostConflict(lost: readonly Lost[], m: Pick<ServerCanvas, "rev">): ConflictResult {
  return {
    status: "conflict", current_rev: m.rev, base_rev: Math.min(...lost.map((l) => l.by.rev)) - 1,
    conflicting_ids: lost.map((l) => l.cmd.ids[0]!), recovery_ops: [...new Set(lost.map((l) => l.by))], suggestion: "",
  } as unknown as ConflictResult;
}

/** What the planner reads of Excalidraw's app state (fields of its AppState). */
export interface GestureApp {
  cursorButton?: string;
  newElement?: unknown;
  resizingElement?: unknown;
  editingTextElement?: unknown;
  multiElement?: unknown;
  selectedElementsAreBeingDragged?: boolean;
  isResizing?: boolean;
  isRotating?: boolean;
  selectedElementIds?: Readonly<Record<string, boolean>>;
}

/**
 * Whether the person is in the middle of a gesture (a button down, a shape
 * being drawn, resized, turned or dragged, a text being typed, a line's
 * points being placed): its commands are planned when it ends.
 */
export function gestureUnderWay(app: GestureApp): boolean {
  return !!(app.cursorButton === "down" || app.newElement || app.resizingElement || app.editingTextElement || app.multiElement ||
    app.selectedElementsAreBeingDragged || app.isResizing || app.isRotating);
}

/** The ids of the elements selected. */
export function selectedIds(app: GestureApp): Set<string> {
  const sel = app.selectedElementIds || {};
  return new Set(Object.keys(sel).filter((k) => sel[k]));
}

/** How the others' commits of a 409 met a gesture's commands (clashOf). */
export interface Clash {
  /** The actors whose commits touched the commands' nodes. */
  who: string[];
  /** One of them deleted one of those nodes. */
  deleted: boolean;
  /** The person must choose: the others deleted a node, changed a field the commands write, or the commands write none (a create). */
  overlap: boolean;
  /** The fields both wrote. */
  both: string[];
}

/**
 * How the 409 body met commands that write fields of nodes ids: the fields
 * the others' commits since base_rev (its recovery_ops) changed of the
 * conflicting nodes (body.conflicting_ids, else ids) against the
 * commands' own. Without overlap the same intent can be sent again at the
 * new head.
 */
export function clashOf(fields: readonly string[], ids: readonly string[], body: ConflictResult | undefined): Clash {
  const mine = new Set(fields);
  const at = new Set<string>(body?.conflicting_ids || ids);
  const theirs = new Set<string>();
  const who = new Set<string>();
  let deleted = false;
  for (const op of (body?.recovery_ops || []) as Commit[]) {
    for (const ch of op.changes || []) {
      if (!at.has(ch.id)) continue;
      who.add(op.actor_id);
      if (ch.op === "delete") deleted = true;
      if (ch.op === "put") GEOMETRY.forEach((f) => theirs.add(f));
      const patch: { props?: Record<string, unknown> } = ch.patch || {};
      for (const k of Object.keys(patch)) {
        if (k === "props") for (const p of Object.keys(patch.props || {})) theirs.add("props." + p);
        else theirs.add(k);
      }
      if (ch.op === "edit") theirs.add("props." + ch.edit?.prop);
    }
  }
  return { who: [...who], deleted, overlap: deleted || mine.size === 0 || [...mine].some((f) => theirs.has(f)), both: [...mine].filter((f) => theirs.has(f)) };
}

/**
 * The z-order changes among dirty (existing) nodes: each one whose rank
 * among the nodes on screen differs from its rank on the server, as the
 * reorder op that makes it (to the front or back when it is there now,
 * else one step forward or backward), by op.
 */
export function planOrder(m: ServerCanvas, els: readonly El[], dirty: ReadonlySet<string>): Map<string, string[]> {
  const out = new Map<string, string[]>();
  if (![...dirty].some((n) => m.nodes.has(n))) return out;
  const scene = els.filter((el) => !el.isDeleted && !partOf(el.id).part && m.nodes.has(nodeOf(el))).map(nodeOf);
  const shown = new Set(scene);
  const server = m.sorted().map((n) => n.id).filter((id) => shown.has(id));
  const rank = new Map(server.map((id, i) => [id, i]));
  scene.forEach((id, i) => {
    const was = rank.get(id);
    if (!dirty.has(id) || was === undefined || was === i) return;
    const op = i === scene.length - 1 ? "bring_to_front" : i === 0 ? "send_to_back" : i > was ? "bring_forward" : "send_backward";
    out.set(op, [...(out.get(op) || []), id]);
  });
  return out;
}

/**
 * Plans bringing node prev to draft d: props and size as commands (cmd), a
 * move or a turn into moves or turns (planGesture sends those of shapes that
 * went together as one command). children: parent id → child ids (a frame's
 * resize leaves its children where they are).
 */
function planUpdate(id: string, d: NodeDraft, prev: CanvasNode, children: ReadonlyMap<string, ReadonlySet<string>>,
  cmd: (type: string, args: Record<string, unknown>, ids: string[], fields: string[]) => void, moves: Move[], turns: Turn[]): void {
  const near = (a: number, b: number) => Math.abs(a - b) < 0.01;
  // A text whose width follows its text is drawn at its lines' size (fitText): no resize of the person's.
  const autoSize = prev.type === "text" && (d.props.autoSize === undefined ? prev.props?.autoSize !== false : d.props.autoSize !== false);
  const sized = !autoSize && (!near(d.w, prev.w) || !near(d.h, prev.h));
  // The turn in degrees, in [-180, 180), rounded as sent (a smaller one is none).
  const raw = ((d.rotation - (prev.rotation || 0)) * 180) / Math.PI;
  const deg = Math.round((((raw % 360) + 540) % 360 - 180) * 1000) / 1000;
  const moved = !near(d.x, prev.x) || !near(d.y, prev.y);
  const linear = prev.type === "line" || prev.type === "draw";
  if (deg) {
    // About the point that takes the corner where the user sees it: the
    // centre Excalidraw turned the selection about (not the server's default, the nodes' centre).
    const a = (deg * Math.PI) / 180, s = Math.sin(a), c = Math.cos(a);
    const vx = d.x - (prev.x * c - prev.y * s), vy = d.y - (prev.x * s + prev.y * c), det = 2 - 2 * c;
    turns.push({ id, deg, ox: ((1 - c) * vx - s * vy) / det, oy: (s * vx + (1 - c) * vy) / det });
  }
  if (sized && !linear) cmd("resize", { id, w: d.w, h: d.h }, [id], ["w", "h"]);
  if (moved && !deg) { // (a turned shape is placed by its rotate's origin)
    if (sized && !linear) {
      cmd("move", { id, x: d.x, y: d.y }, [id], ["x", "y"]);
      // A frame's move moves its children; Excalidraw's resize leaves them where they are.
      const kids = prev.type === "frame" ? [...(children.get(id) || [])] : [];
      if (kids.length) cmd("move", { ids: kids, dx: prev.x - d.x, dy: prev.y - d.y }, kids, ["x", "y"]);
    } else {
      moves.push({ id, dx: Math.round((d.x - prev.x) * 100) / 100, dy: Math.round((d.y - prev.y) * 100) / 100, x: d.x, y: d.y });
    }
  }
  const patch = Object.keys(d.props).length ? d.props : null; // only what the person changed
  const nameChanged = d.name !== undefined && d.name !== (prev.name || "");
  if (linear && (sized || patch)) {
    // Points and their box change together.
    const args: Record<string, unknown> = { id, w: Math.max(1, d.w), h: Math.max(1, d.h) };
    if (patch) args.props = patch;
    cmd("update_shape", args, [id], ["w", "h", ...Object.keys(patch || {}).map((k) => "props." + k)]);
  } else if (patch || nameChanged) {
    const args: Record<string, unknown> = { id };
    if (patch) args.props = patch;
    if (nameChanged) args.name = d.name;
    cmd("update_shape", args, [id], [...Object.keys(patch || {}).map((k) => "props." + k), ...(nameChanged ? ["name"] : [])]);
  }
}
