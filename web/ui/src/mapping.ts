// canvasd nodes and edges ⇄ Excalidraw elements.
//
// One node becomes one primary element with the node's id, plus parts whose
// ids are "<node id>::<part>": the bound text of a shape with a label, the
// extra strokes of a multi-stroke drawing (elementId() spells the few ids
// that would read as another's part). An edge (from → to) becomes an
// arrow bound at both ends, with the edge's id. Group nodes have no element:
// their descendants carry the group's id in groupIds, as Excalidraw groups.
// Frames are frames; their children carry frameId.
//
// Geometry: canvasd rotates a shape about its top-left corner (x, y),
// Excalidraw about its centre; both keep w and h unrotated. A line, arrow,
// drawing or polygon is a list of points: canvasd's are relative to the
// node's corner, Excalidraw's to the first point, turned about the middle
// of the points' box.

import type { Edge as CanvasEdge, Node as CanvasNode } from "@canvasd/client";

export type Props = Record<string, unknown>;

export type El = Record<string, any>;

// The tldraw palette by name: stroke, and the light tone used for fills and notes.
export const PALETTE: Record<string, [string, string]> = {
  black: ["#1e1e1e", "#e9ecef"], grey: ["#868e96", "#f1f3f5"], "light-violet": ["#be4bdb", "#f3d9fa"],
  violet: ["#6741d9", "#e5dbff"], blue: ["#1971c2", "#a5d8ff"], "light-blue": ["#4dabf7", "#d0ebff"],
  yellow: ["#f08c00", "#ffec99"], orange: ["#e8590c", "#ffd8a8"], green: ["#2f9e44", "#b2f2bb"],
  "light-green": ["#40c057", "#d3f9d8"], "light-red": ["#ff8787", "#ffe3e3"], red: ["#e03131", "#ffc9c9"],
  white: ["#ffffff", "#ffffff"],
};
const STROKE = { s: 1, m: 2, l: 4, xl: 6 } as Record<string, number>;
const FONT = { s: 16, m: 20, l: 28, xl: 36 } as Record<string, number>;
const FONT_FAMILY = { draw: 5, sans: 2, serif: 8, mono: 3 } as Record<string, number>; // Excalifont, Nunito, Lilita, Cascadia
const NATIVE_GEO = new Set(["rectangle", "ellipse", "diamond"]);
const GEO_ALIAS: Record<string, string> = { oval: "ellipse", cloud: "ellipse", rhombus: "diamond", "rhombus-2": "diamond" };

/** The managed props of each node type: the ones an element can express. */
const MANAGED: Record<string, string[]> = {
  geo: ["geo", "color", "fill", "dash", "size", "text", "font"],
  note: ["color", "text", "size", "font"],
  text: ["color", "text", "size", "font"],
  arrow: ["color", "dash", "size", "start", "end", "text", "start_binding", "end_binding"],
  line: ["color", "dash", "size", "points"],
  draw: ["color", "size", "segments"],
  frame: [],
  image: ["url"],
  doc: [],
};

const num = (v: unknown, d = 0) => (typeof v === "number" && isFinite(v) ? v : d);
const str = (v: unknown) => (typeof v === "string" ? v : v === undefined || v === null ? "" : String(v));

export function strokeOf(p: Props, def = "black"): string {
  return (PALETTE[str(p.color)] || PALETTE[def])[0];
}

/** The nearest palette name of a colour Excalidraw shows. */
export function colorName(hex: string, light = false): string {
  const rgb = (h: string) => {
    const m = /^#?([0-9a-f]{6})$/i.exec(h.length === 4 ? "#" + [...h.slice(1)].map((c) => c + c).join("") : h);
    const v = m ? parseInt(m[1], 16) : 0;
    return [v >> 16, (v >> 8) & 255, v & 255];
  };
  const want = rgb(hex);
  let best = "black", bestD = Infinity;
  for (const [name, tones] of Object.entries(PALETTE)) {
    const got = rgb(tones[light ? 1 : 0]);
    const d = (got[0] - want[0]) ** 2 + (got[1] - want[1]) ** 2 + (got[2] - want[2]) ** 2;
    if (d < bestD) { best = name; bestD = d; }
  }
  return best;
}

/** canvasd (x, y, rotation about the top-left) → Excalidraw (x, y, about the centre). */
export function toElementXY(x: number, y: number, w: number, h: number, r: number): [number, number] {
  if (!r) return [x, y];
  const s = Math.sin(r), c = Math.cos(r);
  const cx = x + (w / 2) * c - (h / 2) * s, cy = y + (w / 2) * s + (h / 2) * c;
  return [cx - w / 2, cy - h / 2];
}

/** The inverse of toElementXY. */
export function toNodeXY(x: number, y: number, w: number, h: number, r: number): [number, number] {
  if (!r) return [x, y];
  const s = Math.sin(r), c = Math.cos(r);
  const cx = x + w / 2, cy = y + h / 2;
  return [cx - (w / 2) * c + (h / 2) * s, cy - (w / 2) * s - (h / 2) * c];
}

const round = (v: number) => Math.round(v * 100) / 100;

type Pt = { x: number; y: number };

/** The middle of the box of points. */
function middle(pts: readonly Pt[]): Pt {
  const xs = pts.map((q) => q.x), ys = pts.map((q) => q.y);
  return { x: (Math.min(...xs) + Math.max(...xs)) / 2, y: (Math.min(...ys) + Math.max(...ys)) / 2 };
}

/** q turned by r about the origin. */
function turn(q: Pt, r: number): Pt {
  const s = Math.sin(r), c = Math.cos(r);
  return { x: q.x * c - q.y * s, y: q.x * s + q.y * c };
}

/**
 * Points of a node at corner (x, y) turned by r, as a linear element places
 * them: its (x, y), its points relative to the first one and its size.
 */
function placePoints(x: number, y: number, r: number, pts: readonly Pt[]): { x: number; y: number; points: number[][]; width: number; height: number } {
  const m = middle(pts), tm = turn(m, r);
  const xs = pts.map((q) => q.x), ys = pts.map((q) => q.y);
  return {
    x: x + tm.x - m.x + pts[0].x, y: y + tm.y - m.y + pts[0].y,
    points: pts.map((q) => [q.x - pts[0].x, q.y - pts[0].y]),
    width: Math.max(...xs) - Math.min(...xs), height: Math.max(...ys) - Math.min(...ys),
  };
}

/** The page positions of the points of linear element el. */
function pagePoints(el: El): Pt[] {
  const pts = (el.points as number[][]).map(([x, y]) => ({ x, y }));
  const m = middle(pts), r = el.angle || 0;
  return pts.map((q) => {
    const t = turn({ x: q.x - m.x, y: q.y - m.y }, r);
    return { x: el.x + m.x + t.x, y: el.y + m.y + t.y };
  });
}

/** The points of linear element el in the coordinates of a node where its first point is at o. */
function localPoints(el: El, o: Pt): Pt[] {
  const pts = el.points as number[][];
  return pts.map(([px, py]) => ({ x: px - pts[0][0] + o.x, y: py - pts[0][1] + o.y }));
}

/**
 * The inverse of placePoints for linear element el whose first point is at
 * o in node coordinates: the node's corner.
 */
function cornerOf(el: El, o: Pt): Pt {
  const m = middle((el.points as number[][]).map(([x, y]) => ({ x, y })));
  const t = turn(middle(localPoints(el, o)), el.angle || 0);
  return { x: el.x + m.x - t.x, y: el.y + m.y - t.y };
}

/** Page point q in the coordinates of a node at corner at, turned by r. */
function toLocal(q: Pt, at: Pt, r: number): Pt {
  return turn({ x: q.x - at.x, y: q.y - at.y }, -r);
}

function seedOf(id: string): number {
  let x = 7;
  for (const ch of id) x = (x * 31 + ch.charCodeAt(0)) >>> 0;
  return (x % 2147483646) + 1;
}

/** What every element needs; restoreElements fills in the rest. */
function base(id: string, type: string, n: { x: number; y: number; w: number; h: number; rotation: number }, version: number, extra: El): El {
  const w = Math.max(1, num(n.w, 1)), h = Math.max(1, num(n.h, 1));
  const [x, y] = toElementXY(num(n.x), num(n.y), w, h, num(n.rotation));
  return {
    id, type, x, y, width: w, height: h, angle: num(n.rotation), seed: seedOf(id), version, versionNonce: seedOf(id + version),
    isDeleted: false, strokeColor: "#1e1e1e", backgroundColor: "transparent", fillStyle: "solid", strokeWidth: 2,
    strokeStyle: "solid", roughness: 1, opacity: 100, groupIds: [], frameId: null, boundElements: null, updated: 1,
    link: null, locked: false, roundness: null, ...extra,
  };
}

/** The groups a node is in (innermost first), as Excalidraw groupIds. */
export function groupIdsOf(n: CanvasNode, nodes: Map<string, CanvasNode>): string[] {
  const out: string[] = [];
  let p = n.parent_id ? nodes.get(n.parent_id) : undefined;
  for (let depth = 0; p && depth < 64; depth++) {
    if (p.type === "group") out.push(elementId(p.id));
    p = p.parent_id ? nodes.get(p.parent_id) : undefined;
  }
  return out;
}

function frameOf(n: CanvasNode, nodes: Map<string, CanvasNode>): string | null {
  let p = n.parent_id ? nodes.get(n.parent_id) : undefined;
  for (let depth = 0; p && depth < 64; depth++) {
    if (p.type === "frame") return elementId(p.id);
    p = p.parent_id ? nodes.get(p.parent_id) : undefined;
  }
  return null;
}

function strokeStyle(p: Props): string {
  return p.dash === "dashed" ? "dashed" : p.dash === "dotted" ? "dotted" : "solid";
}

function fill(p: Props): El {
  const [stroke, light] = PALETTE[str(p.color)] || PALETTE.black;
  switch (p.fill) {
    case "solid": return { backgroundColor: light, fillStyle: "solid" };
    case "semi": return { backgroundColor: light, fillStyle: "solid", customFill: "semi" };
    case "pattern": return { backgroundColor: light, fillStyle: "hachure" };
    case "fill": return { backgroundColor: stroke, fillStyle: "solid" };
    default: return { backgroundColor: "transparent", fillStyle: "solid" };
  }
}

function textEl(id: string, text: string, container: El | null, p: Props, version: number, at: El, extra: El = {}): El {
  const fontSize = FONT[str(p.size)] || 20;
  return base(id, "text", { x: at.x, y: at.y, w: at.w, h: at.h, rotation: at.rotation || 0 }, version, {
    text, originalText: text, fontSize, fontFamily: FONT_FAMILY[str(p.font)] || 5, lineHeight: 1.25,
    textAlign: container ? "center" : p.align === "middle" ? "center" : p.align === "end" ? "right" : "left",
    verticalAlign: container ? "middle" : "top", containerId: container ? container.id : null,
    autoResize: !container, strokeColor: extra.strokeColor || "#1e1e1e", ...extra,
  });
}

/** Points of a line or arrow: an array, or tldraw's {id: {x, y, index}} map. */
function pointList(v: unknown): { x: number; y: number }[] {
  let pts: any[] = [];
  if (Array.isArray(v)) pts = v;
  else if (v && typeof v === "object") pts = Object.values(v).sort((a: any, b: any) => (str(a?.index) < str(b?.index) ? -1 : 1));
  return pts.filter((q) => q && isFinite(q.x) && isFinite(q.y)).map((q) => ({ x: +q.x, y: +q.y }));
}

function polygon(geo: string, w: number, h: number): number[][] | null {
  const reg = (k: number, start = -Math.PI / 2, inner = 1) => {
    const pts: number[][] = [];
    for (let i = 0; i < k; i++) {
      const r = i % 2 && inner !== 1 ? inner : 1, a = start + (i * 2 * Math.PI) / k;
      pts.push([w / 2 + (w / 2) * r * Math.cos(a), h / 2 + (h / 2) * r * Math.sin(a)]);
    }
    return pts;
  };
  switch (geo) {
    case "triangle": return [[w / 2, 0], [w, h], [0, h]];
    case "pentagon": return reg(5);
    case "hexagon": return [[w * 0.25, 0], [w * 0.75, 0], [w, h / 2], [w * 0.75, h], [w * 0.25, h], [0, h / 2]];
    case "octagon": return reg(8, -Math.PI / 2 + Math.PI / 8);
    case "star": return reg(10, -Math.PI / 2, 0.4);
    case "trapezoid": return [[w * 0.2, 0], [w * 0.8, 0], [w, h], [0, h]];
    case "heart": return [[w / 2, h * 0.25], [w * 0.8, 0], [w, h * 0.3], [w / 2, h], [0, h * 0.3], [w * 0.2, 0]];
    case "arrow-right": return [[0, h * 0.25], [w * 0.6, h * 0.25], [w * 0.6, 0], [w, h / 2], [w * 0.6, h], [w * 0.6, h * 0.75], [0, h * 0.75]];
    case "arrow-left": return [[w, h * 0.25], [w * 0.4, h * 0.25], [w * 0.4, 0], [0, h / 2], [w * 0.4, h], [w * 0.4, h * 0.75], [w, h * 0.75]];
    case "arrow-up": return [[w * 0.25, h], [w * 0.25, h * 0.4], [0, h * 0.4], [w / 2, 0], [w, h * 0.4], [w * 0.75, h * 0.4], [w * 0.75, h]];
    case "arrow-down": return [[w * 0.25, 0], [w * 0.25, h * 0.6], [0, h * 0.6], [w / 2, h], [w, h * 0.6], [w * 0.75, h * 0.6], [w * 0.75, 0]];
  }
  return null;
}

/** The first lines of a document, for its card. */
function docPreview(n: CanvasNode): string {
  const lines = str(n.props?.text).split("\n");
  const max = Math.max(1, Math.floor((num(n.h, 150) - 40) / 17));
  const shown = lines.slice(0, max).map((l) => {
    l = l.replace(/\t/g, "    "); // as the editor shows a tab; a canvas draws it as one space
    return l.length > 60 ? l.slice(0, 59) + "…" : l;
  });
  const lang = str(n.props?.language);
  return `≡ ${str(n.name) || "document"}${lang ? " · " + lang : ""}\n${shown.join("\n")}${lines.length > max ? "\n…" : ""}`;
}

/**
 * The elements of one node (primary first), given all nodes for its groups
 * and frame. version must grow with every change of the node.
 */
export function nodeElements(n: CanvasNode, nodes: Map<string, CanvasNode>, version: number): El[] {
  const p = n.props || {};
  const id = elementId(n.id);
  const groupIds = groupIdsOf(n, nodes);
  const frameId = frameOf(n, nodes);
  // customData.node names the node: a copy (duplicate, paste) keeps it, and
  // becomes a node of the same kind with the original's other props (draftOf).
  const common = { groupIds, frameId, customData: { kind: n.type, node: n.id } as Record<string, unknown> };
  const color = strokeOf(p);
  const sw = STROKE[str(p.size)] || 2;
  const geom = { x: n.x, y: n.y, w: n.w, h: n.h, rotation: n.rotation };
  const withLabel = (el: El, text: string, tp: Props = p): El[] => {
    if (!text) return [el];
    const t = textEl(id + "::text", text, el, tp, version, geom, { groupIds, frameId, customData: { part: "text" } });
    el.boundElements = [{ id: t.id, type: "text" }];
    return [el, t];
  };
  switch (n.type) {
    case "note": {
      const bg = (PALETTE[str(p.color)] || PALETTE.yellow)[1];
      const el = base(id, "rectangle", geom, version, { ...common, backgroundColor: bg, fillStyle: "solid", strokeColor: "transparent",
        roundness: { type: 3 }, roughness: 0 });
      return withLabel(el, str(p.text) || " ");
    }
    case "text": {
      const text = str(p.text) || str(n.name) || " ";
      const fs = FONT[str(p.size)] || 20;
      const lines = text.split("\n");
      const w = num(n.w) > 1 ? n.w : Math.max(...lines.map((l) => l.length)) * fs * 0.6 + 4;
      const h = num(n.h) > 1 ? n.h : lines.length * fs * 1.25;
      const el = textEl(id, text, null, p, version, { ...geom, w, h }, { ...common, strokeColor: color });
      return [el];
    }
    case "frame":
      return [base(id, "frame", geom, version, { ...common, frameId: null, name: str(n.name) || "Frame", roughness: 0 })];
    case "group":
      return [];
    case "doc": {
      const el = base(id, "rectangle", geom, version, { ...common, backgroundColor: "#f8f9fa", fillStyle: "solid",
        strokeColor: "#495057", roughness: 0, strokeWidth: 1, roundness: { type: 3 } });
      const t = textEl(id + "::text", docPreview(n), el, { font: "mono", size: "s" }, version, geom,
        { groupIds, frameId, customData: { part: "text", readOnly: true }, textAlign: "left", verticalAlign: "top", fontSize: 13 });
      el.boundElements = [{ id: t.id, type: "text" }];
      return [el, t];
    }
    case "image": {
      const url = str(p.url || p.src);
      if (/^data:image\/(png|jpeg|gif|webp);base64,/.test(url)) {
        return [base(id, "image", geom, version, { ...common, fileId: imageFileId(url), status: "saved", scale: [1, 1], crop: null, strokeColor: "transparent" })];
      }
      const el = base(id, "rectangle", geom, version, { ...common, backgroundColor: "#eef0f3", strokeColor: "#adb5bd", strokeStyle: "dashed", roughness: 0 });
      return withLabel(el, "🖼 " + (str(n.name) || url || "image"));
    }
    case "arrow":
    case "line": {
      const el = linear(id, n.type, n, linePoints(n), version, { ...common, strokeColor: color, strokeWidth: sw, strokeStyle: strokeStyle(p) });
      if (n.type === "arrow") {
        el.endArrowhead = "arrow";
        el.startArrowhead = null;
        if (p.start_binding) el.startBinding = { elementId: elementId(str(p.start_binding)), focus: 0, gap: 6 };
        if (p.end_binding) el.endBinding = { elementId: elementId(str(p.end_binding)), focus: 0, gap: 6 };
        return withLabel(el, str(p.text));
      }
      return [el];
    }
    case "draw": {
      const segs = strokesOf(n);
      return segs.map((pts, i) => {
        const el = linear(i === 0 ? id : `${id}::s${i}`, "freedraw", n, pts, version,
          { ...common, strokeColor: color, strokeWidth: sw, customData: i === 0 ? common.customData : { part: "segment" } });
        el.pressures = [];
        el.simulatePressure = true;
        if (segs.length > 1) el.groupIds = [id + "::strokes", ...groupIds];
        return el;
      });
    }
    default: {
      // geo and anything unknown: a rectangle with the node's name as label.
      const geo = str(p.geo) || "rectangle";
      const kind = NATIVE_GEO.has(geo) ? geo : GEO_ALIAS[geo];
      const style = { ...common, strokeColor: color, strokeWidth: sw, strokeStyle: strokeStyle(p), ...fill(p) };
      delete (style as El).customFill;
      const label = str(p.text) || (n.type !== "geo" ? str(n.name) : "");
      if (kind || !polygon(geo, 1, 1)) {
        const el = base(id, kind || "rectangle", geom, version, { ...style, roundness: kind === "rectangle" || !kind ? { type: 3 } : { type: 2 } });
        return withLabel(el, label);
      }
      const w = Math.max(1, num(n.w)), h = Math.max(1, num(n.h)), r = num(n.rotation);
      const pts = polygon(geo, w, h)!;
      pts.push(pts[0]);
      // Placed as restoreElements would leave it (first point at (0, 0), size of the points' box).
      const at = placePoints(num(n.x), num(n.y), r, pts.map(([x, y]) => ({ x, y })));
      const el = base(id, "line", geom, version, { ...style, customData: { ...common.customData, geo }, polygon: true, lastCommittedPoint: null,
        startBinding: null, endBinding: null, startArrowhead: null, endArrowhead: null, ...at });
      if (!label) return [el];
      const t = textEl(id + "::text", label, null, p, version, { x: 0, y: 0, w: n.w, h: n.h },
        { groupIds: [id + "::label", ...groupIds], frameId, customData: { part: "text" }, textAlign: "center" });
      el.groupIds = [id + "::label", ...groupIds];
      const fs = t.fontSize as number, lines = label.split("\n");
      t.width = Math.max(...lines.map((l) => l.length)) * fs * 0.6;
      t.height = lines.length * fs * 1.25;
      const mid = turn({ x: w / 2, y: h / 2 }, r);
      t.x = num(n.x) + mid.x - t.width / 2;
      t.y = num(n.y) + mid.y - t.height / 2;
      t.angle = r;
      return [el, t];
    }
  }
}

/** The points of a line or arrow node, relative to its corner. */
function linePoints(n: CanvasNode): Pt[] {
  const p = n.props || {};
  const pts = pointList(n.type === "line" ? p.points : null);
  if (n.type === "line" && pts.length >= 2) return pts;
  const a = p.start as any, b = p.end as any;
  return [{ x: num(a?.x, 0), y: num(a?.y, 0) }, { x: num(b?.x, num(n.w, 100)), y: num(b?.y, num(n.h, 0)) }];
}

/** The strokes of a drawing node, relative to its corner. */
function strokesOf(n: CanvasNode): Pt[][] {
  const p = n.props || {};
  const segs = (Array.isArray(p.segments) ? p.segments : []).map((s: any) => pointList(s?.points)).filter((s) => s.length);
  if (!segs.length) segs.push([{ x: 0, y: 0 }, { x: num(n.w, 1), y: num(n.h, 1) }]);
  return segs;
}

/** A line, arrow or freedraw of points relative to the corner of node n (turned as n). */
function linear(id: string, type: string, n: { x: number; y: number; rotation?: number }, pts: Pt[], version: number, extra: El): El {
  const at = placePoints(num(n.x), num(n.y), num(n.rotation), pts);
  return base(id, type, { x: 0, y: 0, w: at.width, h: at.height, rotation: num(n.rotation) }, version, {
    lastCommittedPoint: null, startBinding: null, endBinding: null, startArrowhead: null, endArrowhead: null,
    roundness: type === "arrow" ? { type: 2 } : null, ...extra, ...at,
  });
}

/** Where a ray from the centre of box b towards p leaves b. */
function exitPoint(b: { x: number; y: number; w: number; h: number }, p: { x: number; y: number }) {
  const cx = b.x + b.w / 2, cy = b.y + b.h / 2;
  const dx = p.x - cx, dy = p.y - cy;
  if (!dx && !dy) return { x: cx, y: cy };
  const t = Math.min(dx ? b.w / 2 / Math.abs(dx) : Infinity, dy ? b.h / 2 / Math.abs(dy) : Infinity);
  return { x: cx + dx * t, y: cy + dy * t };
}

/** The arrow of an edge, bound to both of its nodes, and its label (props.text); none when it cannot be drawn. */
export function edgeElements(e: CanvasEdge, nodes: Map<string, CanvasNode>, version: number): El[] {
  const a = nodes.get(e.from), b = nodes.get(e.to);
  if (!a || !b || a.type === "group" || b.type === "group") return [];
  const ba = { x: a.x, y: a.y, w: a.w, h: a.h }, bb = { x: b.x, y: b.y, w: b.w, h: b.h };
  const p1 = exitPoint(ba, { x: bb.x + bb.w / 2, y: bb.y + bb.h / 2 });
  const p2 = exitPoint(bb, { x: ba.x + ba.w / 2, y: ba.y + ba.h / 2 });
  const p = e.props || {};
  const el = linear(elementId(e.id), "arrow", { x: 0, y: 0 }, [p1, p2], version, {
    strokeColor: strokeOf(p, "grey"), strokeWidth: STROKE[str(p.size)] || 2, strokeStyle: strokeStyle(p),
    customData: { kind: "edge" },
  });
  el.endArrowhead = "arrow";
  el.startBinding = { elementId: elementId(e.from), focus: 0, gap: 6 };
  el.endBinding = { elementId: elementId(e.to), focus: 0, gap: 6 };
  const text = str(p.text);
  if (!text) return [el];
  const box = { x: Math.min(p1.x, p2.x), y: Math.min(p1.y, p2.y), w: Math.abs(p2.x - p1.x), h: Math.abs(p2.y - p1.y), rotation: 0 };
  const t = textEl(el.id + "::text", text, el, p, version, box as El, { customData: { part: "text" } });
  el.boundElements = [{ id: t.id, type: "text" }];
  return [el, t];
}

/**
 * The edge props p (an edge's, or {} for a new one) that its arrow el (with
 * its label among byId) shows otherwise: colour, stroke width, dash and
 * label, as a merge patch (null removes the label), or null when they agree.
 */
export function edgePatch(el: El, byId: Map<string, El>, p: Props): Props | null {
  const out: Props = {};
  const color = colorName(str(el.strokeColor));
  if (color !== colorName(strokeOf(p, "grey"))) out.color = color;
  if (el.strokeWidth !== (STROKE[str(p.size)] || 2)) out.size = sizeName(el.strokeWidth);
  if (el.strokeStyle !== strokeStyle(p)) out.dash = el.strokeStyle === "dashed" ? "dashed" : el.strokeStyle === "dotted" ? "dotted" : "draw";
  const label = byId.get(el.id + "::text");
  const text = label && !label.isDeleted ? str(label.originalText ?? label.text) : "";
  if (text.trim() !== str(p.text).trim()) out.text = text.trim() ? text : null;
  return Object.keys(out).length ? out : null;
}

/** The font name (props.font) of an Excalidraw font family, or undefined for one canvasd has no name for. */
function fontName(family: unknown): string | undefined {
  return Object.keys(FONT_FAMILY).find((k) => FONT_FAMILY[k] === family);
}

/** The size name of a stroke width. */
function sizeName(w: number): string {
  return w <= 1 ? "s" : w <= 2 ? "m" : w <= 4 ? "l" : "xl";
}

/** A stable file id for an image's data URL. */
export function imageFileId(url: string): string {
  let x = 5381, y = 52711;
  for (let i = 0; i < url.length; i += Math.max(1, Math.floor(url.length / 4096))) {
    const c = url.charCodeAt(i);
    x = (x * 33) ^ c;
    y = (y * 31) ^ c;
  }
  return `img-${url.length}-${(x >>> 0).toString(36)}${(y >>> 0).toString(36)}`;
}

/**
 * The element id of node or edge id. An id that would read as another's
 * part ("a::text" is a's label, and so would "a:" + "::text" be) is spelt
 * "!" and the id with "!" for ":" (ids hold no "!").
 */
export function elementId(id: string): string {
  return id.includes("::") || id.endsWith(":") ? "!" + id.replaceAll(":", "!") : id;
}

/** The node (or edge) id and part of an element id. */
export function partOf(id: string): { node: string; part: string } {
  const i = id.indexOf("::");
  const head = i < 0 ? id : id.slice(0, i);
  return { node: head.startsWith("!") ? head.slice(1).replaceAll("!", ":") : head, part: i < 0 ? "" : id.slice(i + 2) };
}

/** A node as an element shows it: the fields a user can change in the editor. */
export interface NodeDraft {
  type: string;
  x: number;
  y: number;
  w: number;
  h: number;
  rotation: number;
  name?: string;
  props: Props;
}

/**
 * The node that element el (with its parts among byId) describes, in
 * canvasd terms, or null for an element that is not a node (a part, an
 * edge's arrow). prev is the node as the server has it (undefined for a
 * new element): its unmanaged props are kept. source is the node a new
 * element is a copy of (its customData.node): the copy is of its kind, and
 * takes what the element does not show (a document's text, an image's URL).
 */
export function draftOf(el: El, byId: Map<string, El>, prev: CanvasNode | undefined, files: Record<string, any>, source?: CanvasNode): NodeDraft | null {
  if (partOf(el.id).part || el.customData?.kind === "edge") return null;
  if (source && source.type !== el.customData?.kind) source = undefined;
  // Without its source (cut, or pasted from another canvas) a copy is what
  // its element shows: a note's says all of it; a document's only its preview.
  const kind = prev?.type || source?.type || (el.customData?.kind === "note" ? "note" : el.customData?.geo ? "geo" : kindOfNew(el));
  const props: Props = {};
  const w = round(el.width), h = round(el.height);
  const [x, y] = toNodeXY(el.x, el.y, el.width, el.height, el.angle || 0);
  const d: NodeDraft = { type: kind, x: round(x), y: round(y), w, h, rotation: el.angle || 0, props };
  const label = byId.get(el.id + "::text");
  const labelText = label && !label.isDeleted ? str(label.originalText ?? label.text) : "";
  const stroke = colorName(str(el.strokeColor));
  const size = sizeName(el.strokeWidth);
  const dash = el.strokeStyle === "dashed" ? "dashed" : el.strokeStyle === "dotted" ? "dotted" : "draw";
  switch (kind) {
    case "note":
      props.color = colorName(str(el.backgroundColor), true);
      props.text = labelText.trim() ? labelText : "";
      if (labelText && fontName(label!.fontFamily)) props.font = fontName(label!.fontFamily);
      break;
    case "text": {
      props.color = stroke;
      props.text = str(el.originalText ?? el.text);
      if (fontName(el.fontFamily)) props.font = fontName(el.fontFamily);
      const fs = el.fontSize as number;
      props.size = fs <= 16 ? "s" : fs <= 20 ? "m" : fs <= 28 ? "l" : "xl";
      break;
    }
    case "frame":
      d.name = str(el.name);
      break;
    case "doc":
      if (!prev && source) { // a copy: the same document
        d.name = str(source.name);
        for (const k of ["language", "text"]) if (source.props?.[k] !== undefined) props[k] = source.props[k];
      }
      break;
    case "image": {
      const f = files[el.fileId];
      if (f?.dataURL) props.url = f.dataURL;
      else if (prev || source) props.url = (prev || source)!.props?.url;
      break;
    }
    case "arrow":
    case "line": {
      const o = prev ? linePoints(prev)[0] : { x: 0, y: 0 };
      const at = cornerOf(el, o);
      const pts = localPoints(el, o).map((q) => ({ x: round(q.x), y: round(q.y) }));
      d.x = round(at.x); d.y = round(at.y);
      props.color = stroke; props.size = size; props.dash = dash;
      if (kind === "arrow") {
        props.start = pts[0];
        props.end = pts[pts.length - 1];
        if (labelText) props.text = labelText;
        props.start_binding = el.startBinding ? partOf(el.startBinding.elementId).node : null;
        props.end_binding = el.endBinding ? partOf(el.endBinding.elementId).node : null;
      } else {
        props.points = pts;
      }
      break;
    }
    case "draw": {
      const node = partOf(el.id).node;
      const strokes = [el, ...[...byId.values()].filter((o) => { const p = partOf(o.id); return p.node === node && p.part.startsWith("s") && !o.isDeleted; })];
      props.color = stroke; props.size = size;
      // The node is where the first stroke puts it; the others' points come
      // from the page, so a stroke at another angle keeps its look.
      const at = cornerOf(el, prev ? strokesOf(prev)[0][0] : { x: 0, y: 0 });
      const segs = strokes.map((s) => pagePoints(s).map((q) => toLocal(q, at, d.rotation)));
      const all = segs.flat(), xs = all.map((q) => q.x), ys = all.map((q) => q.y);
      d.x = round(at.x); d.y = round(at.y);
      d.w = round(Math.max(...xs) - Math.min(...xs)); d.h = round(Math.max(...ys) - Math.min(...ys));
      props.segments = segs.map((pts) => ({ type: "free", points: pts.map((q) => ({ x: round(q.x), y: round(q.y) })) }));
      break;
    }
    default: {
      props.geo = el.customData?.geo || (prev?.props?.geo as string) || (el.type === "line" ? "rectangle" : el.type);
      if (prev && !NATIVE_GEO.has(str(prev.props?.geo)) && (el.type === "rectangle" || el.type === "ellipse" || el.type === "diamond")) {
        props.geo = GEO_ALIAS[str(prev.props?.geo)] === el.type || el.type === "rectangle" ? prev.props?.geo : el.type;
      }
      props.color = stroke; props.size = size; props.dash = dash;
      if (el.backgroundColor === "transparent") props.fill = "none";
      else if (el.fillStyle !== "solid") props.fill = "pattern";
      else if (colorName(str(el.backgroundColor)) === stroke && PALETTE[stroke][0].toLowerCase() === str(el.backgroundColor).toLowerCase()) props.fill = "fill";
      else props.fill = prev?.props?.fill === "semi" ? "semi" : "solid";
      if (labelText || (prev && prev.props?.text)) props.text = labelText;
      if (labelText && fontName(label!.fontFamily)) props.font = fontName(label!.fontFamily);
      if (el.type === "line") {
        const unit = polygon(str(props.geo), 1, 1);
        if (unit) {
          const b = polygonBox(el, unit);
          d.x = round(b.x); d.y = round(b.y); d.w = round(b.w); d.h = round(b.h);
        }
        const polyLabel = byId.get(el.id + "::text");
        props.text = polyLabel && !polyLabel.isDeleted ? str(polyLabel.originalText ?? polyLabel.text) : str(prev?.props?.text);
        if (!props.text) delete props.text;
      }
    }
  }
  return d;
}

/** The box (corner and size) of the polygon of unit-box points unit that line element el draws. */
function polygonBox(el: El, unit: number[][]): { x: number; y: number; w: number; h: number } {
  const span = (v: number[]) => Math.max(...v) - Math.min(...v);
  const pts = el.points as number[][];
  const w = span(pts.map((q) => q[0])) / span(unit.map((q) => q[0])), h = span(pts.map((q) => q[1])) / span(unit.map((q) => q[1]));
  const at = cornerOf(el, { x: unit[0][0] * w, y: unit[0][1] * h });
  return { x: at.x, y: at.y, w, h };
}

/** The canvasd type of an element a user just drew. */
function kindOfNew(el: El): string {
  switch (el.type) {
    case "text": return "text";
    case "arrow": return "arrow";
    case "line": return "line";
    case "freedraw": return "draw";
    case "frame": case "magicframe": return "frame";
    case "image": return "image";
    default: return "geo";
  }
}

/** The managed props that differ between a draft and the node it came from. */
export function propsPatch(d: NodeDraft, prev: CanvasNode): Props | null {
  const out: Props = {};
  let any = false;
  for (const k of MANAGED[prev.type] || MANAGED.geo) {
    if (!(k in d.props)) continue;
    const a = d.props[k], b = prev.props?.[k];
    if (JSON.stringify(a ?? null) !== JSON.stringify(b ?? null)) {
      if ((a === null || a === undefined) && (b === null || b === undefined)) continue;
      if (k === "fill" && a === "none" && b === undefined) continue;
      if (k === "dash" && a === "draw" && b === undefined) continue;
      if (k === "size" && a === "m" && b === undefined) continue;
      if (k === "font" && a === "draw" && b === undefined) continue;
      if (k === "color" && b === undefined && a === (prev.type === "note" ? "yellow" : "black")) continue;
      out[k] = a ?? null;
      any = true;
    }
  }
  return any ? out : null;
}
