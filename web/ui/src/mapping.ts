// canvasd nodes and edges (the canvas model 2, docs/model.md) ⇄ Excalidraw
// elements. Pure: no DOM, no Excalidraw; unit-tested with node --test
// (mapping.test.ts), and against the fixtures of the .excalidraw codec.
//
// One node becomes one primary element with the node's id, plus parts whose
// ids are "<node id>::<part>": the label of a shape, the extra strokes of a
// multi-stroke drawing (elementId() spells the few ids that would read as
// another's part). An edge becomes an arrow with the edge's id, bound at the
// ends the edge binds and drawn through its points. Group nodes have no
// element: their descendants carry the group's id in groupIds, as Excalidraw
// groups. Frames are frames; their children carry frameId.
//
// Properties: every one an element shows is a prop (colours, fill, stroke,
// opacity, roughness, roundness, fonts, alignment, link, lock, arrowheads,
// routing, ...). Reading an element back never re-derives the props: each
// property ("aspect") of the edited element is compared with the element the
// node itself maps to, and only the aspects that differ are written, as the
// props that draw them given the props the node has (nodePatch). So a value
// Excalidraw cannot draw (a square arrowhead, a semi fill, a cloud) stays as
// it is until the person changes that very property.
//
// Geometry: canvasd rotates a shape about its top-left corner (x, y),
// Excalidraw about its centre; both keep w and h unrotated. A line, drawing
// or polygon is a list of points: canvasd's are relative to the node's
// corner, Excalidraw's to the first point, turned about the middle of the
// points' box. An edge's points are page coordinates.

import type { Edge as CanvasEdge, Node as CanvasNode } from "@canvasd/client";

export type Props = Record<string, unknown>;

export type El = Record<string, any>;

type Pt = { x: number; y: number; z?: number };

// ------------------------------------------------------------ vocabulary

/** The palette by name: stroke, and the light tone of fills and notes. */
export const PALETTE: Record<string, [string, string]> = {
  black: ["#1e1e1e", "#e9ecef"], grey: ["#868e96", "#f1f3f5"], "light-violet": ["#be4bdb", "#f3d9fa"],
  violet: ["#6741d9", "#e5dbff"], blue: ["#1971c2", "#a5d8ff"], "light-blue": ["#4dabf7", "#d0ebff"],
  yellow: ["#f08c00", "#ffec99"], orange: ["#e8590c", "#ffd8a8"], green: ["#2f9e44", "#b2f2bb"],
  "light-green": ["#40c057", "#d3f9d8"], "light-red": ["#ff8787", "#ffe3e3"], red: ["#e03131", "#ffc9c9"],
  white: ["#ffffff", "#ffffff"],
};
/** A semi fill's colour. */
const SEMI = "#f8f9fa";
/** Stroke width and font size of each size. */
export const SIZE_STROKE: Record<string, number> = { s: 1, m: 2, l: 4, xl: 6 };
export const SIZE_FONT: Record<string, number> = { s: 16, m: 20, l: 28, xl: 36 };
/** Excalidraw's font families by canvasd font name. */
export const FONTS: Record<string, number> = { draw: 5, sans: 6, serif: 7, mono: 3, virgil: 1, helvetica: 2, comic: 8, liberation: 9 };
const ALIGN: Record<string, string> = { start: "left", middle: "center", end: "right" };
const VALIGN: Record<string, string> = { start: "top", middle: "middle", end: "bottom" };
/** Excalidraw's arrowhead of each canvasd arrowhead (those it lacks as the closest it draws). */
export const HEADS: Record<string, string | null> = {
  none: null, arrow: "arrow", triangle: "triangle", "triangle-outline": "triangle_outline", dot: "circle",
  "circle-outline": "circle_outline", diamond: "diamond", "diamond-outline": "diamond_outline", bar: "bar",
  square: "bar", pipe: "bar", inverted: "triangle_outline", "crowfoot-one": "crowfoot_one",
  "crowfoot-many": "crowfoot_many", "crowfoot-one-or-many": "crowfoot_one_or_many",
};
/** canvasd's arrowhead of each Excalidraw arrowhead ("dot" is Excalidraw's old name of "circle"). */
const HEAD_NAMES: Record<string, string> = {
  arrow: "arrow", triangle: "triangle", triangle_outline: "triangle-outline", circle: "dot", dot: "dot",
  circle_outline: "circle-outline", diamond: "diamond", diamond_outline: "diamond-outline", bar: "bar",
  crowfoot_one: "crowfoot-one", crowfoot_many: "crowfoot-many", crowfoot_one_or_many: "crowfoot-one-or-many",
};
const NATIVE_GEO = new Set(["rectangle", "ellipse", "diamond"]);
/** Geometries Excalidraw lacks drawn as one it has (the others as polygons, or rectangles). */
const GEO_ALIAS: Record<string, string> = { oval: "ellipse", cloud: "ellipse", rhombus: "diamond", "rhombus-2": "diamond" };

const num = (v: unknown, d = 0) => (typeof v === "number" && isFinite(v) ? v : d);
const str = (v: unknown) => (typeof v === "string" ? v : v === undefined || v === null ? "" : String(v));
const round = (v: number) => Math.round(v * 100) / 100;
const COLOR = /^(#[0-9a-fA-F]{3}|#[0-9a-fA-F]{6}|#[0-9a-fA-F]{8}|transparent)$/;

/** The hex of colour c (a palette name, a hex colour or "transparent"); tone 1 is a palette name's light tone. */
export function hexOf(c: unknown, tone: 0 | 1 = 0): string | undefined {
  if (typeof c !== "string" || !c) return undefined;
  const p = PALETTE[c];
  return p ? p[tone] : c;
}

/** The colour prop of an element's colour: a palette hex as its name, any other hex as it is; null for what canvasd cannot keep. */
export function colorOf(hex: unknown, tone: 0 | 1 = 0): string | null {
  if (typeof hex !== "string") return null;
  for (const [name, t] of Object.entries(PALETTE)) if (t[tone] === hex) return name;
  return COLOR.test(hex) ? hex : null;
}

/** The stroke hex of props p (def: the kind's default colour name). */
export function strokeOf(p: Props, def = "black"): string {
  return hexOf(p.color) ?? hexOf(def)!;
}

/** Excalidraw's fill style of a canvasd fill. */
function fillStyleOf(fill: unknown): string {
  switch (fill) {
    case "hachure": case "cross-hatch": case "zigzag": return fill;
    case "pattern": case "lined-fill": return "hachure";
    default: return "solid";
  }
}

/** The background colour of props p: fillColor, else what fill and color give. */
function backgroundOf(p: Props): string {
  const fill = str(p.fill) || "none";
  if (fill === "none") return "transparent";
  if (p.fillColor !== undefined && p.fillColor !== null) return hexOf(p.fillColor, 1) ?? "transparent";
  if (fill === "semi") return SEMI;
  const c = str(p.color) || "black";
  return hexOf(c, fill === "fill" ? 0 : 1) ?? "transparent";
}

/** The plain text of a tldraw rich-text document: paragraphs, headings and list items on lines of their own. */
export function plainText(doc: unknown): string {
  const lines: string[] = [];
  let line = "";
  const walk = (n: any, depth: number) => {
    if (!n || typeof n !== "object" || depth > 64) return;
    if (n.type === "text") { line += str(n.text); return; }
    if (n.type === "hardBreak") { lines.push(line); line = ""; return; }
    const block = ["paragraph", "heading", "codeBlock"].includes(n.type);
    if (Array.isArray(n.content)) for (const k of n.content) walk(k, depth + 1);
    if (block) { lines.push(line); line = ""; }
  };
  walk(doc, 0);
  if (line) lines.push(line);
  return lines.join("\n");
}

/** The text a node or edge shows: text, else its rich text's plain text (never blank for rich text). */
export function textOf(p: Props): string {
  const t = str(p.text);
  return t || (p.richText ? plainText(p.richText) : "");
}

// ------------------------------------------------------------ geometry

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
export function pagePoints(el: El): Pt[] {
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

/** Points of a line or arrow: an array, or tldraw's {id: {x, y, index}} map. */
function pointList(v: unknown): Pt[] {
  let pts: any[] = [];
  if (Array.isArray(v)) pts = v;
  else if (v && typeof v === "object") pts = Object.values(v).sort((a: any, b: any) => (str(a?.index) < str(b?.index) ? -1 : 1));
  return pts.filter((q) => q && isFinite(q.x) && isFinite(q.y)).map((q) => (typeof q.z === "number" ? { x: +q.x, y: +q.y, z: q.z } : { x: +q.x, y: +q.y }));
}

/** The outline of a geometry Excalidraw lacks, in a w × h box (null: drawn as a rectangle or one it has). */
export function polygon(geo: string, w: number, h: number): number[][] | null {
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

/** The Excalidraw element type a geometry is drawn as: rectangle, ellipse, diamond, or line (a polygon). */
function geoElementType(geo: string): string {
  if (NATIVE_GEO.has(geo)) return geo;
  if (GEO_ALIAS[geo]) return GEO_ALIAS[geo];
  return polygon(geo, 1, 1) ? "line" : "rectangle";
}

// ------------------------------------------------------------ styles: props → element properties

/**
 * The element properties props p of a node of kind (or "edge") draw: those
 * of its primary element (el) and of its label (label, also when it has no
 * text, for its style). type is the primary element's Excalidraw type.
 */
export function styleOf(kind: string, p: Props, type = elementTypeOf(kind, p)): { el: El; label: El } {
  const el: El = {
    strokeColor: strokeOf(p), backgroundColor: backgroundOf(p), fillStyle: fillStyleOf(p.fill),
    strokeWidth: num(p.strokeWidth, SIZE_STROKE[str(p.size)] || 2),
    strokeStyle: p.dash === "dashed" || p.dash === "dotted" ? p.dash : "solid",
    roughness: num(p.roughness, 1), opacity: p.opacity === undefined ? 100 : Math.round(num(p.opacity, 1) * 100),
    link: typeof p.link === "string" && p.link ? p.link : null, locked: p.locked === true, roundness: null,
  };
  const fontSize = num(p.fontSize, SIZE_FONT[str(p.size)] || 20);
  const label: El = {
    strokeColor: hexOf(p.labelColor) ?? el.strokeColor, fontFamily: FONTS[str(p.font)] || 5, fontSize,
    textAlign: ALIGN[str(p.align)] || "center", verticalAlign: VALIGN[str(p.verticalAlign)] || "middle",
    text: textOf(p), opacity: el.opacity, locked: el.locked,
  };
  const round = p.roundness !== "sharp";
  switch (kind) {
    case "geo":
      if (type === "rectangle") el.roundness = round ? { type: 3 } : null;
      else if (type === "ellipse" || type === "diamond") el.roundness = round ? { type: 2 } : null;
      break;
    case "note":
      el.strokeColor = "transparent";
      el.backgroundColor = hexOf(p.fillColor, 1) ?? hexOf(str(p.color) || "yellow", 1)!;
      el.fillStyle = "solid";
      el.roughness = 0;
      el.roundness = { type: 3 };
      label.strokeColor = hexOf(p.labelColor) ?? PALETTE.black[0];
      break;
    case "text":
      Object.assign(el, { fontFamily: label.fontFamily, fontSize, textAlign: ALIGN[str(p.align)] || "left",
        verticalAlign: VALIGN[str(p.verticalAlign)] || "top", text: label.text, autoResize: p.autoSize !== false });
      break;
    case "line":
      el.roundness = p.routing === "curved" ? { type: 2 } : null;
      break;
    case "edge":
      el.roundness = p.routing === "curved" ? { type: 2 } : null;
      el.elbowed = p.routing === "elbow";
      el.startArrowhead = HEADS[str(p.arrowheadStart) || "none"] ?? null;
      el.endArrowhead = p.arrowheadEnd === undefined ? "arrow" : HEADS[str(p.arrowheadEnd)] ?? null;
      break;
    case "image":
      el.strokeColor = "transparent";
      el.roundness = p.roundness === "round" ? { type: 3 } : null;
      el.scale = [p.flipX === true ? -1 : 1, p.flipY === true ? -1 : 1];
      break;
    case "embed":
      el.link = str(p.url) || null;
      el.roundness = p.roundness === "round" ? { type: 3 } : null;
      break;
    case "doc":
      Object.assign(el, { backgroundColor: "#f8f9fa", fillStyle: "solid", strokeColor: "#495057", roughness: 0, strokeWidth: 1, roundness: { type: 3 } });
      break;
  }
  return { el, label };
}

/** The Excalidraw type of the primary element of a node of kind with props p. */
function elementTypeOf(kind: string, p: Props): string {
  switch (kind) {
    case "geo": return geoElementType(str(p.geo) || "rectangle");
    case "note": case "doc": return "rectangle";
    case "text": return "text";
    case "line": return "line";
    case "edge": return "arrow";
    case "draw": return "freedraw";
    case "frame": return "frame";
    case "image": return "image";
    case "embed": return "embeddable";
    default: return "rectangle";
  }
}

// ------------------------------------------------------------ aspects: element properties → props

/** An element (el) with its label (a bound text, or a polygon's text; null without one). */
export interface Parts { el: El; label: El | null }

/**
 * One property of an element as a person changes it: read gives its value
 * on parts (undefined: the element does not show it), write the props that
 * draw that value given the props p the node has.
 */
interface Aspect {
  name: string;
  read(x: Parts, kind: string): unknown;
  write(x: Parts, p: Props, kind: string): Props | null;
}

const headOf = (h: unknown) => (h === "dot" ? "circle" : h ?? null);
const hasLabel = (x: Parts) => !!x.label && !x.label.isDeleted;
/** A label's text as compared: blank is none. */
const labelText = (x: Parts) => {
  const t = hasLabel(x) ? str(x.label!.originalText ?? x.label!.text) : "";
  return t.trim() ? t : "";
};

const ASPECTS: Record<string, Aspect> = {
  color: {
    name: "color", read: (x) => x.el.strokeColor,
    write: (x) => { const c = colorOf(x.el.strokeColor); return c === null ? null : { color: c }; },
  },
  fill: {
    name: "fill", read: (x) => [x.el.backgroundColor, x.el.fillStyle],
    write: (x, p) => fillProps(str(x.el.backgroundColor), str(x.el.fillStyle), p),
  },
  strokeWidth: {
    name: "strokeWidth", read: (x) => x.el.strokeWidth,
    write: (x) => (typeof x.el.strokeWidth === "number" && x.el.strokeWidth >= 0 && x.el.strokeWidth <= 64 ? { strokeWidth: x.el.strokeWidth } : null),
  },
  dash: {
    name: "dash", read: (x) => x.el.strokeStyle,
    write: (x) => ({ dash: x.el.strokeStyle === "dashed" || x.el.strokeStyle === "dotted" ? x.el.strokeStyle : num(x.el.roughness, 1) > 0 ? "draw" : "solid" }),
  },
  roughness: {
    name: "roughness", read: (x) => x.el.roughness,
    write: (x) => (typeof x.el.roughness === "number" && x.el.roughness >= 0 && x.el.roughness <= 5 ? { roughness: x.el.roughness } : null),
  },
  opacity: {
    name: "opacity", read: (x) => x.el.opacity,
    write: (x) => (typeof x.el.opacity === "number" ? { opacity: Math.min(1, Math.max(0, x.el.opacity / 100)) } : null),
  },
  roundness: {
    name: "roundness", read: (x) => (x.el.type === "line" ? undefined : x.el.roundness ? "round" : "sharp"),
    write: (x) => ({ roundness: x.el.roundness ? "round" : "sharp" }),
  },
  routing: {
    name: "routing", read: (x) => (x.el.elbowed ? "elbow" : x.el.roundness ? "curved" : "straight"),
    write: (x) => ({ routing: x.el.elbowed ? "elbow" : x.el.roundness ? "curved" : "straight" }),
  },
  link: {
    name: "link", read: (x) => x.el.link || null,
    write: (x) => ({ link: x.el.link || null }),
  },
  locked: {
    name: "locked", read: (x) => !!x.el.locked,
    write: (x) => ({ locked: x.el.locked ? true : null }),
  },
  arrowheadStart: {
    name: "arrowheadStart", read: (x) => headOf(x.el.startArrowhead),
    write: (x) => ({ arrowheadStart: x.el.startArrowhead ? HEAD_NAMES[x.el.startArrowhead] ?? "arrow" : "none" }),
  },
  arrowheadEnd: {
    name: "arrowheadEnd", read: (x) => headOf(x.el.endArrowhead),
    write: (x) => ({ arrowheadEnd: x.el.endArrowhead ? HEAD_NAMES[x.el.endArrowhead] ?? "arrow" : "none" }),
  },
  flip: {
    name: "flip", read: (x) => JSON.stringify(x.el.scale || [1, 1]),
    write: (x) => ({ flipX: (x.el.scale?.[0] ?? 1) < 0 ? true : null, flipY: (x.el.scale?.[1] ?? 1) < 0 ? true : null }),
  },
  url: { // an embed's address is its element's link
    name: "url", read: (x) => x.el.link || null,
    write: (x) => (x.el.link ? { url: x.el.link } : null),
  },
  // The label: of a shape, a note or an edge.
  text: {
    name: "text", read: (x) => labelText(x),
    write: (x) => ({ text: labelText(x) || null, richText: null }),
  },
  labelFont: {
    name: "font", read: (x) => (hasLabel(x) ? x.label!.fontFamily : undefined),
    write: (x) => fontProps(x.label!.fontFamily),
  },
  labelFontSize: {
    name: "fontSize", read: (x) => (hasLabel(x) ? x.label!.fontSize : undefined),
    write: (x, p, kind) => fontSizeProps(x.label!.fontSize, p, kind),
  },
  labelAlign: {
    name: "align", read: (x) => (hasLabel(x) ? x.label!.textAlign : undefined),
    write: (x) => alignProps("align", ALIGN, x.label!.textAlign),
  },
  labelVerticalAlign: {
    name: "verticalAlign", read: (x) => (hasLabel(x) ? x.label!.verticalAlign : undefined),
    write: (x) => alignProps("verticalAlign", VALIGN, x.label!.verticalAlign),
  },
  labelColor: {
    name: "labelColor", read: (x) => (hasLabel(x) ? x.label!.strokeColor : undefined),
    write: (x, p, kind) => {
      const own = kind === "note" ? PALETTE.black[0] : strokeOf(p);
      if (x.label!.strokeColor === own) return { labelColor: null };
      const c = colorOf(x.label!.strokeColor);
      return c === null ? null : { labelColor: c };
    },
  },
  // A note: its colour is its background.
  noteColor: {
    name: "color", read: (x) => x.el.backgroundColor,
    write: (x) => {
      const bg = str(x.el.backgroundColor);
      const name = Object.keys(PALETTE).find((k) => PALETTE[k][1] === bg);
      if (name) return { color: name, fillColor: null };
      const c = colorOf(bg, 1);
      return c === null ? null : { fillColor: c };
    },
  },
  // A text: the element is the text.
  textText: {
    name: "text", read: (x) => { const t = str(x.el.originalText ?? x.el.text); return t.trim() ? t : ""; },
    write: (x) => ({ text: str(x.el.originalText ?? x.el.text), richText: null }),
  },
  textFont: { name: "font", read: (x) => x.el.fontFamily, write: (x) => fontProps(x.el.fontFamily) },
  textFontSize: { name: "fontSize", read: (x) => x.el.fontSize, write: (x, p, kind) => fontSizeProps(x.el.fontSize, p, kind) },
  textAlign: { name: "align", read: (x) => x.el.textAlign, write: (x) => alignProps("align", ALIGN, x.el.textAlign) },
  textVerticalAlign: { name: "verticalAlign", read: (x) => x.el.verticalAlign, write: (x) => alignProps("verticalAlign", VALIGN, x.el.verticalAlign) },
  autoSize: { name: "autoSize", read: (x) => x.el.autoResize !== false, write: (x) => ({ autoSize: x.el.autoResize === false ? false : null }) },
};

const LABEL = ["text", "labelFont", "labelFontSize", "labelAlign", "labelVerticalAlign", "labelColor"];
const STROKE = ["color", "strokeWidth", "dash", "roughness", "opacity"];
/** The aspects of each kind, in the order they are written (a colour before the fill it tints). */
const KIND_ASPECTS: Record<string, string[]> = {
  geo: [...STROKE, "fill", "roundness", ...LABEL, "link", "locked"],
  note: ["noteColor", "opacity", ...LABEL, "link", "locked"],
  text: ["color", "opacity", "textText", "textFont", "textFontSize", "textAlign", "textVerticalAlign", "autoSize", "link", "locked"],
  line: [...STROKE, "fill", "routing", "link", "locked"],
  draw: ["color", "strokeWidth", "opacity", "fill", "link", "locked"],
  edge: [...STROKE, "arrowheadStart", "arrowheadEnd", "routing", "text", "labelFont", "labelFontSize", "labelColor", "link", "locked"],
  image: ["opacity", "roundness", "flip", "link", "locked"],
  embed: ["url", "color", "strokeWidth", "opacity", "roundness", "locked"], // (no roughness: canvasd's embeds have none)
  frame: ["locked"],
  doc: ["locked"],
  group: [],
};

function fontProps(family: unknown): Props | null {
  const name = Object.keys(FONTS).find((k) => FONTS[k] === family);
  return name ? { font: name } : null;
}

/** A font size: a text's or note's as its size when it is one (and no exact size is set), else exact. */
function fontSizeProps(size: unknown, p: Props, kind: string): Props | null {
  if (typeof size !== "number" || !(size >= 1 && size <= 1000)) return null;
  const name = Object.keys(SIZE_FONT).find((k) => SIZE_FONT[k] === size);
  if (name && (kind === "text" || kind === "note") && p.fontSize === undefined) return { size: name };
  return { fontSize: size };
}

function alignProps(key: string, table: Record<string, string>, v: unknown): Props | null {
  const name = Object.keys(table).find((k) => table[k] === v);
  return name ? { [key]: name } : null;
}

/**
 * The fill props that draw background bg in fill style style given props p:
 * p's own fill when it draws that style, else the style's name; fillColor
 * only when the fill and colour do not give bg.
 */
function fillProps(bg: string, style: string, p: Props): Props | null {
  if (!COLOR.test(bg)) return null;
  if (bg === "transparent" && style === "solid") return { fill: "none", fillColor: null };
  const fills = [p.fill, style === "solid" ? "solid" : style, ...(style === "solid" ? ["fill", "semi"] : [])]
    .filter((f): f is string => typeof f === "string" && f !== "none" && fillStyleOf(f) === style);
  for (const fill of fills) if (backgroundOf({ ...p, fill, fillColor: undefined }) === bg) return { fill, fillColor: null };
  return { fill: fills[0], fillColor: bg };
}

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/** p with patch merged in (null deletes). */
export function merged(p: Props, patch: Props): Props {
  const out: Props = { ...p };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = v;
  }
  return out;
}

/**
 * The props patch (null deletes a key) that makes a node of kind with props
 * p draw as parts x: for each aspect where x differs from what p draws,
 * the props of that aspect (given the props so far: a new colour is taken
 * before the fill it tints); nothing for the aspects that agree. Values
 * canvasd cannot hold (an unknown font family, a colour that is no colour)
 * are left out. Empty when x is what p draws.
 */
export function nodePatch(kind: string, p: Props, x: Parts): Props {
  const names = KIND_ASPECTS[kind] || KIND_ASPECTS.geo;
  const type = x.el.type;
  let patch: Props = {};
  const styleNow = () => { const s = styleOf(kind, merged(p, patch), type); return { el: { ...s.el, type }, label: s.label } as Parts; };
  for (let pass = 0; pass < 3; pass++) {
    let changed = false;
    for (const name of names) {
      const a = ASPECTS[name];
      const want = a.read(x, kind);
      if (want === undefined) continue;
      if (same(want, a.read(styleNow(), kind))) continue;
      const w = a.write(x, merged(p, patch), kind);
      if (!w) continue;
      const next = { ...patch, ...w };
      if (same(next, patch)) continue;
      patch = next;
      changed = true;
    }
    if (!changed) break;
  }
  // Nothing that p already has, no deletion of what it lacks.
  for (const [k, v] of Object.entries(patch)) if (v === null ? p[k] === undefined : same(v, p[k])) delete patch[k];
  return patch;
}

/** The aspect names where parts a and b differ, for a node of kind: for tests and for telling a person what differs. */
export function differences(kind: string, a: Parts, b: Parts): string[] {
  return (KIND_ASPECTS[kind] || []).filter((n) => {
    const va = ASPECTS[n].read(a, kind), vb = ASPECTS[n].read(b, kind);
    return va !== undefined && vb !== undefined && !same(va, vb);
  });
}

// ------------------------------------------------------------ nodes → elements

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

function textEl(id: string, text: string, container: El | null, style: El, version: number, at: { x: number; y: number; w: number; h: number; rotation?: number }, extra: El = {}): El {
  return base(id, "text", { x: at.x, y: at.y, w: at.w, h: at.h, rotation: at.rotation || 0 }, version, {
    text, originalText: text, fontSize: style.fontSize, fontFamily: style.fontFamily, lineHeight: 1.25,
    textAlign: style.textAlign, verticalAlign: style.verticalAlign, containerId: container ? container.id : null,
    autoResize: !container, strokeColor: style.strokeColor, opacity: style.opacity, locked: style.locked, ...extra,
  });
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

/** Image data URLs Excalidraw shows from a file (the others get a placeholder). */
export const IMAGE_DATA_URL = /^data:image\/(png|jpeg|gif|webp|svg\+xml);base64,/;

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
  // becomes a node of the same kind with the original's other props (nodeDraft).
  const common = { groupIds, frameId, customData: { kind: n.type, node: n.id } as Record<string, unknown> };
  const geom = { x: n.x, y: n.y, w: n.w, h: n.h, rotation: n.rotation };
  const { el: style, label } = styleOf(n.type, p);
  const withLabel = (el: El, text: string): El[] => {
    if (!text) return [el];
    const t = textEl(id + "::text", text, el, label, version, geom, { groupIds, frameId, customData: { part: "text" } });
    el.boundElements = [{ id: t.id, type: "text" }];
    return [el, t];
  };
  switch (n.type as string) {
    case "note": {
      const el = base(id, "rectangle", geom, version, { ...common, ...style });
      return withLabel(el, textOf(p) || " ");
    }
    case "text": {
      const text = textOf(p) || str(n.name) || " ";
      const fs = style.fontSize as number;
      const lines = text.split("\n");
      const w = num(n.w) > 1 ? n.w : Math.max(...lines.map((l) => l.length)) * fs * 0.6 + 4;
      const h = num(n.h) > 1 ? n.h : lines.length * fs * 1.25;
      return [textEl(id, text, null, style, version, { ...geom, w, h }, { ...common, link: style.link, autoResize: style.autoResize })];
    }
    case "frame":
      return [base(id, "frame", geom, version, { ...common, ...style, frameId: null, name: str(n.name) || "Frame" })];
    case "group":
      return [];
    case "doc": {
      const el = base(id, "rectangle", geom, version, { ...common, ...style });
      const t = textEl(id + "::text", docPreview(n), el, { fontFamily: FONTS.mono, fontSize: 13, textAlign: "left", verticalAlign: "top", strokeColor: "#1e1e1e", opacity: 100, locked: style.locked }, version, geom,
        { groupIds, frameId, customData: { part: "text", readOnly: true } });
      el.boundElements = [{ id: t.id, type: "text" }];
      return [el, t];
    }
    case "image": {
      const url = str(p.url || p.src);
      if (IMAGE_DATA_URL.test(url)) {
        return [base(id, "image", geom, version, { ...common, ...style, fileId: imageFileId(url), status: "saved", crop: cropOf(p.crop, url) })];
      }
      const el = base(id, "rectangle", geom, version, { ...common, opacity: style.opacity, locked: style.locked, link: style.link,
        backgroundColor: "#eef0f3", strokeColor: "#adb5bd", strokeStyle: "dashed", roughness: 0 });
      return withLabel(el, "🖼 " + (str(n.name) || url || "image"));
    }
    case "embed":
      return [base(id, "embeddable", geom, version, { ...common, ...style })];
    case "line": {
      // A closed line ends where it starts (its points may say so already), an Excalidraw polygon.
      const pts = linePoints(n);
      const a = pts[0], z = pts[pts.length - 1];
      if (p.closed === true && pts.length > 2 && (a.x !== z.x || a.y !== z.y)) pts.push(a);
      return [linear(id, "line", n, pts, version, { ...common, ...style, polygon: p.closed === true })];
    }
    case "draw": {
      const segs = strokesOf(n);
      return segs.map((pts, i) => {
        const el = linear(i === 0 ? id : `${id}::s${i}`, "freedraw", n, pts, version,
          { ...common, ...style, customData: i === 0 ? common.customData : { part: "segment" } });
        // Pen pressure (z) when every point has it; else Excalidraw simulates it.
        const z = pts.map((q) => q.z);
        const pressed = z.every((v) => typeof v === "number");
        el.pressures = pressed ? z : [];
        el.simulatePressure = !pressed;
        if (segs.length > 1) el.groupIds = [id + "::strokes", ...groupIds];
        return el;
      });
    }
    default: {
      // geo, and a kind this page does not know: a rectangle with the node's name as label.
      const geo = str(p.geo) || "rectangle";
      const type = n.type === "geo" ? geoElementType(geo) : "rectangle";
      const text = n.type === "geo" ? textOf(p) : textOf(p) || str(n.name);
      const sty = n.type === "geo" ? style : styleOf("geo", {}, "rectangle").el;
      if (type !== "line") return withLabel(base(id, type, geom, version, { ...common, ...sty }), text);
      const w = Math.max(1, num(n.w)), h = Math.max(1, num(n.h)), r = num(n.rotation);
      const pts = polygon(geo, w, h)!;
      pts.push(pts[0]);
      // Placed as restoreElements would leave it (first point at (0, 0), size of the points' box).
      const at = placePoints(num(n.x), num(n.y), r, pts.map(([x, y]) => ({ x, y })));
      const el = base(id, "line", geom, version, { ...common, ...sty, customData: { ...common.customData, geo }, polygon: true, lastCommittedPoint: null,
        startBinding: null, endBinding: null, startArrowhead: null, endArrowhead: null, ...at });
      if (!text) return [el];
      const t = textEl(id + "::text", text, null, label, version, { x: 0, y: 0, w: n.w, h: n.h },
        { groupIds: [id + "::label", ...groupIds], frameId, customData: { part: "text" } });
      el.groupIds = [id + "::label", ...groupIds];
      const fs = t.fontSize as number, lines = text.split("\n");
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

/** The points of a line node, relative to its corner. */
function linePoints(n: CanvasNode): Pt[] {
  const pts = pointList(n.props?.points);
  return pts.length >= 2 ? pts : [{ x: 0, y: 0 }, { x: num(n.w, 100), y: num(n.h, 0) }];
}

/** The strokes of a drawing node, relative to its corner. */
function strokesOf(n: CanvasNode): Pt[][] {
  const p = n.props || {};
  const segs = (Array.isArray(p.segments) ? p.segments : []).map((s: any) => pointList(s?.points)).filter((s) => s.length);
  if (!segs.length) segs.push([{ x: 0, y: 0 }, { x: num(n.w, 1), y: num(n.h, 1) }]);
  return segs;
}

/** A line or freedraw of points relative to the corner of node n (turned as n). */
function linear(id: string, type: string, n: { x: number; y: number; rotation?: number }, pts: Pt[], version: number, extra: El): El {
  const at = placePoints(num(n.x), num(n.y), num(n.rotation), pts);
  return base(id, type, { x: 0, y: 0, w: at.width, h: at.height, rotation: num(n.rotation) }, version, {
    lastCommittedPoint: null, startBinding: null, endBinding: null, startArrowhead: null, endArrowhead: null,
    ...extra, ...at,
  });
}

// ------------------------------------------------------------ edges → arrows

/** Where a ray from the centre of box b (turned by r about its corner) towards p leaves b. */
function exitPoint(b: { x: number; y: number; w: number; h: number; rotation?: number }, p: Pt): Pt {
  const r = num(b.rotation);
  const c = turn({ x: b.w / 2, y: b.h / 2 }, r);
  const cx = b.x + c.x, cy = b.y + c.y;
  const d = turn({ x: p.x - cx, y: p.y - cy }, -r);
  if (!d.x && !d.y) return { x: cx, y: cy };
  const t = Math.min(d.x ? b.w / 2 / Math.abs(d.x) : Infinity, d.y ? b.h / 2 / Math.abs(d.y) : Infinity);
  const o = turn({ x: d.x * t, y: d.y * t }, r);
  return { x: cx + o.x, y: cy + o.y };
}

/** The middle of node n's box on the page. */
function centreOf(n: CanvasNode): Pt {
  const c = turn({ x: num(n.w) / 2, y: num(n.h) / 2 }, num(n.rotation));
  return { x: num(n.x) + c.x, y: num(n.y) + c.y };
}

/**
 * The page points of edge e: its props.points, else (an edge written
 * without them) from the middle of its from node towards the middle of its
 * to node, each end where that line leaves its node. Empty when neither
 * says where it is.
 */
export function edgePoints(e: CanvasEdge, nodes: Map<string, CanvasNode>): Pt[] {
  const pts = pointList(e.props?.points);
  if (pts.length >= 2) return pts;
  const a = nodes.get(e.from), b = nodes.get(e.to);
  if (!a || !b) return [];
  return [exitPoint(a, centreOf(b)), exitPoint(b, centreOf(a))];
}

/** A binding of an arrow's end at page point q to node n (a ratio of its box for an elbow arrow). */
function bindingTo(n: CanvasNode, q: Pt, elbow: boolean): El {
  const out: El = { elementId: elementId(n.id), focus: 0, gap: 1 };
  if (elbow) {
    const l = toLocal(q, { x: n.x, y: n.y }, num(n.rotation));
    out.fixedPoint = [n.w ? l.x / n.w : 0.5, n.h ? l.y / n.h : 0.5];
  }
  return out;
}

/**
 * The arrow of an edge, bound at the ends it binds, through its points, and
 * its label; none when it cannot be drawn (no points, or an end at a node
 * that is not drawn).
 */
export function edgeElements(e: CanvasEdge, nodes: Map<string, CanvasNode>, version: number): El[] {
  const a = e.from ? nodes.get(e.from) : undefined, b = e.to ? nodes.get(e.to) : undefined;
  if ((e.from && (!a || a.type === "group")) || (e.to && (!b || b.type === "group"))) return [];
  const pts = edgePoints(e, nodes);
  if (pts.length < 2) return [];
  const p = e.props || {};
  const { el: style, label } = styleOf("edge", p);
  const id = elementId(e.id);
  const xs = pts.map((q) => q.x), ys = pts.map((q) => q.y);
  const el = base(id, "arrow", { x: 0, y: 0, w: 1, h: 1, rotation: 0 }, version, {
    ...style, customData: { kind: "edge", edge: e.id }, lastCommittedPoint: null,
    x: pts[0].x, y: pts[0].y, points: pts.map((q) => [q.x - pts[0].x, q.y - pts[0].y]),
    width: Math.max(...xs) - Math.min(...xs), height: Math.max(...ys) - Math.min(...ys),
    startBinding: a ? bindingTo(a, pts[0], style.elbowed) : null,
    endBinding: b ? bindingTo(b, pts[pts.length - 1], style.elbowed) : null,
  });
  if (style.elbowed) Object.assign(el, { fixedSegments: null, startIsSpecial: null, endIsSpecial: null });
  const text = textOf(p);
  if (!text) return [el];
  const box = { x: Math.min(...xs), y: Math.min(...ys), w: el.width, h: el.height, rotation: 0 };
  const t = textEl(el.id + "::text", text, el, label, version, box, { customData: { part: "text" } });
  el.boundElements = [{ id: t.id, type: "text" }];
  return [el, t];
}

/** What an arrow says of its edge: its ends (node ids, "" for a free end) and its points on the page. */
export interface EdgeDraft { from: string; to: string; points: Pt[] }

/**
 * The ends and points of arrow el: an end is bound to the node its binding
 * names when isNode says that node exists (else free).
 */
export function edgeDraft(el: El, isNode: (id: string) => boolean): EdgeDraft {
  const end = (b: El | null | undefined) => {
    const n = b?.elementId ? partOf(b.elementId) : null;
    return n && !n.part && isNode(n.node) ? n.node : "";
  };
  return { from: end(el.startBinding), to: end(el.endBinding), points: pagePoints(el).map((q) => ({ x: round(q.x), y: round(q.y) })) };
}

/** Whether two lists of points differ by more than a hundredth. */
export function pointsDiffer(a: readonly Pt[], b: readonly Pt[]): boolean {
  return a.length !== b.length || a.some((q, i) => Math.abs(q.x - b[i].x) > 0.011 || Math.abs(q.y - b[i].y) > 0.011);
}

/** An arrow's parts: the arrow and its bound label among byId. */
export function arrowParts(el: El, byId: Map<string, El>): Parts {
  const t = byId.get(el.id + "::text");
  return { el, label: t && !t.isDeleted ? t : null };
}

/** The props patch of edge props p that its arrow (parts x) shows otherwise (see nodePatch). */
export function edgePatch(x: Parts, p: Props): Props {
  return nodePatch("edge", p, x);
}

/** The props of a new edge drawn as arrow parts x (its points included). */
export function newEdgeProps(x: Parts, points: Pt[], source?: Props): Props {
  const p: Props = merged(source || {}, nodePatch("edge", source || {}, x));
  p.points = points;
  return p;
}

// ------------------------------------------------------------ images

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

/** The bytes at the start of a base64 data URL (at most n). */
function headBytes(url: string, n: number): Uint8Array {
  const b64 = url.slice(url.indexOf(",") + 1, url.indexOf(",") + 1 + Math.ceil(n / 3) * 4);
  const bin = typeof atob === "function" ? atob(b64.replace(/[^A-Za-z0-9+/=]/g, "")) : "";
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

/** The natural size of the image of a data URL (PNG, GIF, JPEG, WebP, SVG), or null when it cannot tell. */
export function imageSize(url: string): { w: number; h: number } | null {
  try {
    if (url.startsWith("data:image/svg+xml;base64,")) {
      const svg = atob(url.slice(url.indexOf(",") + 1)).slice(0, 4096);
      const tag = /<svg\b[^>]*>/i.exec(svg)?.[0] || "";
      const attr = (k: string) => parseFloat(new RegExp(`\\b${k}\\s*=\\s*["']\\s*([0-9.]+)`, "i").exec(tag)?.[1] || "");
      const vb = /viewBox\s*=\s*["']\s*[-0-9.]+[ ,]+[-0-9.]+[ ,]+([0-9.]+)[ ,]+([0-9.]+)/i.exec(tag);
      const w = attr("width") || (vb ? +vb[1] : 0), h = attr("height") || (vb ? +vb[2] : 0);
      return w > 0 && h > 0 ? { w, h } : null;
    }
    const b = headBytes(url, 65536);
    const u16 = (i: number) => (b[i] << 8) | b[i + 1], u16le = (i: number) => b[i] | (b[i + 1] << 8);
    const u32 = (i: number) => ((b[i] << 24) | (b[i + 1] << 16) | (b[i + 2] << 8) | b[i + 3]) >>> 0;
    if (b[0] === 0x89 && b[1] === 0x50) return { w: u32(16), h: u32(20) }; // PNG: IHDR
    if (b[0] === 0x47 && b[1] === 0x49) return { w: u16le(6), h: u16le(8) }; // GIF
    if (b[0] === 0xff && b[1] === 0xd8) { // JPEG: the first start-of-frame
      for (let i = 2; i + 9 < b.length;) {
        if (b[i] !== 0xff) { i++; continue; }
        const m = b[i + 1];
        if (m >= 0xc0 && m <= 0xcf && m !== 0xc4 && m !== 0xc8 && m !== 0xcc) return { w: u16(i + 7), h: u16(i + 5) };
        i += 2 + u16(i + 2);
      }
      return null;
    }
    if (b[8] === 0x57 && b[9] === 0x45 && b[10] === 0x42 && b[11] === 0x50) { // WebP
      const kind = String.fromCharCode(b[12], b[13], b[14], b[15]);
      if (kind === "VP8 ") return { w: u16le(26) & 0x3fff, h: u16le(28) & 0x3fff };
      if (kind === "VP8L") { const v = b[21] | (b[22] << 8) | (b[23] << 16) | (b[24] << 24); return { w: (v & 0x3fff) + 1, h: ((v >> 14) & 0x3fff) + 1 }; }
      if (kind === "VP8X") return { w: 1 + (b[24] | (b[25] << 8) | (b[26] << 16)), h: 1 + (b[27] | (b[28] << 8) | (b[29] << 16)) };
    }
  } catch { /* not an image we can read */ }
  return null;
}

/** Excalidraw's crop (natural pixels) of a crop prop (fractions of the image), or null. */
function cropOf(c: unknown, url: string): El | null {
  const k = c as { x?: unknown; y?: unknown; w?: unknown; h?: unknown } | null;
  if (!k || typeof k !== "object") return null;
  const size = imageSize(url);
  if (!size) return null;
  return { x: num(k.x) * size.w, y: num(k.y) * size.h, width: num(k.w, 1) * size.w, height: num(k.h, 1) * size.h, naturalWidth: size.w, naturalHeight: size.h };
}

/** The crop prop of an Excalidraw crop. */
function cropProp(c: El | null | undefined): Props | null {
  if (!c || !(c.naturalWidth > 0) || !(c.naturalHeight > 0)) return null;
  const f = (v: number, d: number) => Math.round((v / d) * 1e6) / 1e6;
  return { x: f(c.x, c.naturalWidth), y: f(c.y, c.naturalHeight), w: f(c.width, c.naturalWidth), h: f(c.height, c.naturalHeight) };
}

// ------------------------------------------------------------ ids

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/**
 * The i-th fractional index (Excalidraw's z-order key) of a scene built from
 * nothing: the same key as generateNKeysBetween(null, null, n)[i] of the
 * fractional-indexing package ("a0" … "az", "b00" … "bzz", "c000" …), in
 * O(log i) instead of n steps of string arithmetic. Elements handed to
 * Excalidraw with increasing keys keep them (its check of the order is one
 * pass); without keys, it generates them one after another and sets each
 * through mutateElement (a version bump and a scene lookup per element).
 */
export function orderKey(i: number): string {
  let head = 0;
  for (let span = 62; i >= span; span *= 62) {
    i -= span;
    head++;
  }
  let digits = "";
  for (let k = 0; k <= head; k++) {
    digits = BASE62[i % 62] + digits;
    i = Math.floor(i / 62);
  }
  return String.fromCharCode(97 + head) + digits;
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

// ------------------------------------------------------------ elements → nodes

/** A node as an element shows it: its box, and its props (new node) or the patch of them (existing node). */
export interface NodeDraft {
  type: string;
  x: number;
  y: number;
  w: number;
  h: number;
  rotation: number;
  name?: string;
  /** For a new node, its props; for an existing one, the patch of its props (null deletes). */
  props: Props;
}

/** The canvasd kind of an element a person just drew or pasted (edge: an arrow). */
export function kindOfNew(el: El): string {
  if (el.customData?.kind === "note") return "note";
  if (el.customData?.geo) return "geo";
  switch (el.type) {
    case "text": return "text";
    case "arrow": return "edge";
    case "line": return "line";
    case "freedraw": return "draw";
    case "frame": case "magicframe": return "frame";
    case "image": return "image";
    case "embeddable": return "embed";
    // (an iframe, Excalidraw's generated HTML, has no address to keep: a rectangle)
    default: return "geo";
  }
}

/** The parts of element el among byId: its label (bound, or a polygon's grouped text). */
export function partsOf(el: El, byId: Map<string, El>): Parts {
  const t = byId.get(el.id + "::text");
  return { el, label: t && !t.isDeleted ? t : null };
}

/**
 * The node that element el (with its parts among byId) describes, in
 * canvasd terms, or null for an element that is not a node (a part, an
 * arrow). prev is the node as the server has it (undefined for a new
 * element): the draft's props are then the patch of prev's props that the
 * element shows otherwise, aspect by aspect (nodePatch). source is the node
 * a new element is a copy of (its customData.node): the copy is of its kind
 * and starts from its props (a document's text, an image's URL, values
 * Excalidraw cannot draw).
 */
export function nodeDraft(el: El, byId: Map<string, El>, prev: CanvasNode | undefined, files: Record<string, any>, source?: CanvasNode): NodeDraft | null {
  if (partOf(el.id).part || (!prev && el.type === "arrow")) return null;
  if (source && source.type !== el.customData?.kind) source = undefined;
  const kind = prev?.type || source?.type || kindOfNew(el);
  if (kind === "edge") return null;
  const was: Props = prev?.props || source?.props || (kind === "geo" ? { geo: el.customData?.geo || (NATIVE_GEO.has(el.type) ? el.type : "rectangle") } : {});
  const w = round(el.width), h = round(el.height);
  const [x, y] = toNodeXY(el.x, el.y, el.width, el.height, el.angle || 0);
  const d: NodeDraft = { type: kind, x: round(x), y: round(y), w, h, rotation: el.angle || 0, props: {} };
  const patch: Props = nodePatch(kind, was, partsOf(el, byId));
  const geometry: Props = {};
  switch (kind as string) {
    case "frame":
      d.name = str(el.name);
      break;
    case "geo": {
      // A shape drawn as another of Excalidraw's kinds keeps its geometry (a cloud stays a cloud as an ellipse).
      const geo = str(was.geo) || "rectangle";
      if (el.type !== "line" && geoElementType(geo) !== el.type && NATIVE_GEO.has(el.type)) geometry.geo = el.type;
      if (el.type === "line") {
        const unit = polygon(geo, 1, 1);
        if (unit) {
          const b = polygonBox(el, unit);
          d.x = round(b.x); d.y = round(b.y); d.w = round(b.w); d.h = round(b.h);
        }
      }
      break;
    }
    case "image": {
      const f = files[el.fileId];
      // (Excalidraw may rewrite an SVG's data URL: the node's own file is its URL.)
      if (f?.dataURL && f.dataURL !== was.url && el.fileId !== imageFileId(str(was.url))) geometry.url = f.dataURL;
      const crop = cropProp(el.crop);
      if (!same(crop, was.crop ?? null)) geometry.crop = crop;
      break;
    }
    case "line": {
      const o = prev ? linePoints(prev)[0] : { x: 0, y: 0 };
      const at = cornerOf(el, o);
      const pts = localPoints(el, o).map((q) => ({ x: round(q.x), y: round(q.y) }));
      d.x = round(at.x); d.y = round(at.y);
      const a = pts[0], z = pts[pts.length - 1];
      const closed = el.polygon === true || (pts.length > 3 && Math.abs(a.x - z.x) < 0.011 && Math.abs(a.y - z.y) < 0.011);
      // The points as drawn (a closed line's last is its first); unchanged when the node's close the same way.
      const old = pointList(was.points).map((q) => ({ x: round(q.x), y: round(q.y) }));
      if (!same(pts, old) && !(closed && same(pts, [...old, old[0]]))) geometry.points = pts;
      if (closed !== (was.closed === true)) geometry.closed = closed ? true : null;
      break;
    }
    case "draw": {
      const node = partOf(el.id).node;
      const strokes = [el, ...[...byId.values()].filter((o) => { const q = partOf(o.id); return q.node === node && q.part.startsWith("s") && !o.isDeleted; })];
      // The node is where the first stroke puts it; the others' points come
      // from the page, so a stroke at another angle keeps its look.
      const at = cornerOf(el, prev ? strokesOf(prev)[0][0] : { x: 0, y: 0 });
      const segs = strokes.map((s) => pagePoints(s).map((q) => toLocal(q, at, d.rotation)));
      const all = segs.flat(), xs = all.map((q) => q.x), ys = all.map((q) => q.y);
      d.x = round(at.x); d.y = round(at.y);
      d.w = round(Math.max(...xs) - Math.min(...xs)); d.h = round(Math.max(...ys) - Math.min(...ys));
      const segments = segs.map((pts, i) => {
        const z: unknown[] = strokes[i].simulatePressure === false && strokes[i].pressures?.length === pts.length ? strokes[i].pressures : [];
        return { type: "free", points: pts.map((q, k) => (typeof z[k] === "number" ? { x: round(q.x), y: round(q.y), z: z[k] } : { x: round(q.x), y: round(q.y) })) };
      });
      const old = (Array.isArray(was.segments) ? was.segments : []).map((s: any) => pointList(s?.points).map((q) => ({ ...q, x: round(q.x), y: round(q.y) })));
      if (!same(segments.map((s) => s.points), old)) geometry.segments = segments;
      break;
    }
  }
  Object.assign(patch, geometry);
  if (prev) d.props = patch;
  else {
    d.props = merged(was, patch);
    if (kind === "doc" && source) d.name = str(source.name);
    if (kind === "embed" && !d.props.url) d.props.url = str(el.link);
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
