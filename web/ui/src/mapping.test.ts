// Unit tests of the mapping (node --test, run by `npm test` in web/ui and
// `make ui-test`): Excalidraw elements → canvasd props → elements give the
// same element properties; canvasd nodes and edges → elements → the same
// nodes and edges (nothing to write back); a change of one property writes
// that property only.

import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { test } from "node:test";
import type { Edge as CanvasEdge, Node as CanvasNode } from "@canvasd/client";
import { generateNKeysBetween } from "fractional-indexing";
import {
  arrowParts, colorOf, differences, edgeDraft, edgeElements, edgePatch, elementId, hexOf, imageFileId, imageSize, newEdgeProps,
  nodeDraft, nodeElements, nodePatch, orderKey, partsOf, plainText, styleOf, type El, type Parts, type Props,
} from "./mapping";

/** Excalidraw clipboard elements with every property a person sets (also pasted by api/web_props_test.go). */
const clip = JSON.parse(readFileSync("testdata/every-property.excalidraw-clipboard.json", "utf8")) as { elements: El[]; files: Record<string, any> };

const r2 = (v: unknown) => (typeof v === "number" ? Math.round(v * 100) / 100 : v);

/** The properties of an element a person sets and sees, as compared between an element and its round trip. */
export function look(el: El, files: Record<string, any>): Record<string, unknown> {
  const out: Record<string, unknown> = {
    type: el.type, strokeColor: el.strokeColor, backgroundColor: el.backgroundColor, fillStyle: el.fillStyle,
    strokeWidth: el.strokeWidth, strokeStyle: el.strokeStyle, roughness: el.roughness, opacity: el.opacity,
    roundness: el.roundness ? el.roundness.type : null, link: el.link || null, locked: !!el.locked, angle: r2(el.angle || 0),
  };
  if (!el.containerId) Object.assign(out, { x: r2(el.x), y: r2(el.y) });
  if (el.type !== "text" && el.type !== "freedraw") Object.assign(out, { width: r2(el.width), height: r2(el.height) });
  if (el.type === "text") Object.assign(out, { text: el.originalText ?? el.text, fontFamily: el.fontFamily, fontSize: el.fontSize, textAlign: el.textAlign, verticalAlign: el.verticalAlign });
  if (el.points) out.points = el.points.map((q: number[]) => q.map(r2));
  if (el.type === "arrow") {
    Object.assign(out, { startArrowhead: el.startArrowhead === "dot" ? "circle" : el.startArrowhead, endArrowhead: el.endArrowhead === "dot" ? "circle" : el.endArrowhead, elbowed: !!el.elbowed });
  }
  if (el.type === "image") Object.assign(out, { scale: el.scale, crop: el.crop ?? null, file: files[el.fileId]?.dataURL });
  return out;
}

/** nodeElements of node n with its neighbours, by element id. */
function build(nodes: CanvasNode[], edges: CanvasEdge[] = []): Map<string, El> {
  const byNode = new Map(nodes.map((n) => [n.id, n]));
  const out = new Map<string, El>();
  for (const n of nodes) for (const el of nodeElements(n, byNode, 1)) out.set(el.id, el);
  for (const e of edges) for (const el of edgeElements(e, byNode, 1)) out.set(el.id, el);
  return out;
}

function node(id: string, type: string, props: Props, extra: Partial<CanvasNode> = {}): CanvasNode {
  return { id, type, x: 100, y: 50, w: 160, h: 90, rotation: 0, name: "", parent_id: "", index: "a0", props, created_by: "", updated_by: "", created_rev: 1, updated_rev: 1, ...extra } as CanvasNode;
}

test("colours: a palette hex is its name, any other hex stays as it is", () => {
  assert.equal(colorOf("#e03131"), "red");
  assert.equal(colorOf("#1e1e1e"), "black");
  assert.equal(colorOf("#c2255c"), "#c2255c"); // issue 26: snapped to red
  assert.equal(colorOf("#123456"), "#123456"); // issue 26: snapped to black
  assert.equal(colorOf("transparent"), "transparent");
  assert.equal(colorOf("#ffc9c9", 1), "red");
  assert.equal(colorOf("rgb(1, 2, 3)"), null); // not a colour canvasd keeps: not written
  assert.equal(hexOf("red"), "#e03131");
  assert.equal(hexOf("red", 1), "#ffc9c9");
  assert.equal(hexOf("#c2255c", 1), "#c2255c");
});

test("pasted Excalidraw elements → canvasd props → elements: every property the same", () => {
  const byId = new Map(clip.elements.map((el) => [el.id, el]));
  // Each bound label under its container's part id, as the page keys them.
  for (const el of clip.elements) if (el.containerId) byId.set(el.containerId + "::text", el);
  const nodes: CanvasNode[] = [];
  const files: Record<string, any> = {};
  for (const el of clip.elements) {
    if (el.containerId || el.type === "arrow") continue;
    const d = nodeDraft(el, byId, undefined, clip.files);
    assert.ok(d, el.id);
    nodes.push(node(el.id, d.type, d.props, { x: d.x, y: d.y, w: d.w, h: d.h, rotation: d.rotation, name: d.name || "" }));
    if (d.type === "image") files[imageFileId(String(d.props.url))] = { dataURL: d.props.url };
  }
  const ids = new Set(nodes.map((n) => n.id));
  const edges: CanvasEdge[] = clip.elements.filter((el) => el.type === "arrow").map((el) => {
    const e = edgeDraft(el, (id) => ids.has(id));
    return { id: el.id, from: e.from, to: e.to, type: "arrow", props: newEdgeProps(arrowParts(el, byId), e.points) } as CanvasEdge;
  });
  const built = build(nodes, edges);
  for (const el of clip.elements) {
    const id = el.containerId ? el.containerId + "::text" : el.id;
    const got = built.get(id);
    assert.ok(got, `${el.id}: no element ${id} built`);
    assert.deepEqual(look(got, files), look(el, clip.files), `${el.id}: built from ${JSON.stringify(nodes.find((n) => n.id === el.id)?.props ?? edges.find((e) => e.id === el.id))}`);
  }
  // The arrow between two shapes is an edge between their nodes.
  const arrow = edges.find((e) => e.id === "p-arrow")!;
  assert.deepEqual([arrow.from, arrow.to], ["p-rect", "p-ell"]);
  assert.equal(built.get("p-arrow")!.startBinding.elementId, "p-rect");
  assert.equal(built.get("p-arrow")!.endBinding.elementId, "p-ell");
  // Issue 26's values, by name.
  const props = Object.fromEntries(nodes.map((n) => [n.id, n.props!]));
  assert.equal(props["p-rect"].color, "#c2255c");
  assert.equal(props["p-text"].color, "#123456");
  assert.equal(props["p-rect"].fill, "cross-hatch");
  assert.deepEqual([props["p-rect"].opacity, props["p-rect"].roughness, props["p-rect"].roundness, props["p-rect"].link], [0.37, 2, "sharp", "https://example.com/a"]);
  assert.equal(props["p-dia"].locked, true);
  assert.deepEqual([props["p-text"].align, props["p-text"].font], ["end", "mono"]);
  assert.equal(props["p-embed"].url, "https://www.youtube.com/watch?v=dQw4w9WgXcQ");
  assert.equal(nodes.find((n) => n.id === "p-embed")!.type, "embed");
  assert.match(String(props["p-svg"].url), /^data:image\/svg\+xml;base64,/);
  assert.equal(props["p-svg"].flipX, true);
  const ep = Object.fromEntries(edges.map((e) => [e.id, e.props!]));
  assert.deepEqual([ep["p-arrow"].arrowheadStart, ep["p-arrow"].arrowheadEnd, ep["p-arrow"].routing], ["dot", "triangle", undefined]); // straight: the default
  assert.deepEqual([ep["p-elbow"].arrowheadStart, ep["p-elbow"].arrowheadEnd, ep["p-elbow"].routing], ["bar", "diamond-outline", "elbow"]);
  assert.deepEqual([ep["p-curve"].arrowheadStart, ep["p-curve"].arrowheadEnd, ep["p-curve"].routing, ep["p-curve"].text], ["crowfoot-many", "none", "curved", "calls"]);
  assert.deepEqual(ep["p-elbow"].points, [{ x: 250, y: 180 }, { x: 350, y: 180 }, { x: 350, y: 260 }, { x: 450, y: 260 }]);
});

const svg = clip.files["svg-file-1"].dataURL as string;
const png2x2 = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR4nGP8z8DAwMDAxMDAwMDAAAANHQEDasKb6QAAAABJRU5ErkJggg==";
const richText = { type: "doc", content: [{ type: "heading", attrs: { level: 1 }, content: [{ type: "text", text: "Plan", marks: [{ type: "bold" }] }] },
  { type: "bulletList", content: [{ type: "listItem", content: [{ type: "paragraph", content: [{ type: "text", text: "one" }] }] },
    { type: "listItem", content: [{ type: "paragraph", content: [{ type: "text", text: "two" }] }] }] }] };

/** Nodes with values Excalidraw draws otherwise (tldraw's), or not at all. */
const NODES: CanvasNode[] = [
  node("g-cloud", "geo", { geo: "cloud", color: "light-violet", fill: "semi", dash: "draw", size: "xl", text: "Hi", font: "serif", align: "start", verticalAlign: "end" }),
  node("g-star", "geo", { geo: "star", fill: "lined-fill", color: "#123456", text: "Star", labelColor: "red" }),
  node("g-xbox", "geo", { geo: "x-box", fill: "pattern", roundness: "sharp", opacity: 0.5, link: "https://example.com", locked: true }),
  node("g-rich", "geo", { geo: "rectangle", richText }),
  node("g-turned", "geo", { geo: "hexagon", fill: "solid", color: "green" }, { rotation: 0.5 }),
  node("g-exact", "geo", { geo: "ellipse", fill: "solid", color: "blue", fillColor: "#ffffff", strokeWidth: 3, roughness: 0, fontSize: 24, text: "x" }),
  node("n-1", "note", { color: "green", text: "note", size: "l", align: "start" }),
  node("n-2", "note", { fillColor: "#123456", text: "dark", labelColor: "white" }),
  node("t-1", "text", { text: "text", size: "s", font: "mono", align: "end", autoSize: false, color: "#c2255c" }),
  node("t-rich", "text", { richText }),
  node("l-1", "line", { points: [{ x: 0, y: 0 }, { x: 80, y: 40 }, { x: 20, y: 90 }], routing: "curved", closed: true, fill: "solid", color: "blue", dash: "dotted" }),
  node("d-1", "draw", { segments: [{ type: "free", points: [{ x: 0, y: 0 }, { x: 30, y: 20 }] }, { type: "free", points: [{ x: 50, y: 0 }, { x: 60, y: 40 }] }], color: "red", size: "l" }),
  node("em-1", "embed", { url: "https://example.com/page", color: "grey", roundness: "sharp" }),
  node("im-svg", "image", { url: svg, flipX: true, opacity: 0.8 }),
  node("im-png", "image", { url: png2x2, crop: { x: 0.5, y: 0, w: 0.5, h: 1 }, roundness: "round" }),
  node("im-web", "image", { url: "https://example.com/a.png", altText: "a" }),
  node("f-1", "frame", {}, { name: "Frame" }),
  node("doc-1", "doc", { text: "package main\n", language: "go" }, { name: "main.go" }),
];

const EDGES: CanvasEdge[] = [
  { id: "e-tldraw", from: "g-cloud", to: "n-1", type: "arrow", props: { points: [{ x: 260, y: 95 }, { x: 300, y: 120 }], arrowheadStart: "square", arrowheadEnd: "inverted", routing: "elbow", text: "x", color: "red", size: "l", font: "mono" } },
  { id: "e-free", from: "", to: "g-xbox", type: "arrow", props: { points: [{ x: 0, y: 0 }, { x: 40, y: 80 }, { x: 100, y: 95 }], routing: "curved", arrowheadStart: "pipe", arrowheadEnd: "none", richText } },
  { id: "e-plain", from: "g-star", to: "g-rich", type: "arrow", props: { points: [{ x: 10, y: 10 }, { x: 90, y: 10 }] } },
] as unknown as CanvasEdge[];

/** The files of the image nodes among nodes, as the page adds them. */
function filesOf(nodes: CanvasNode[]): Record<string, any> {
  const files: Record<string, any> = {};
  for (const n of nodes) if (n.type === "image") files[imageFileId(String(n.props!.url))] = { dataURL: n.props!.url };
  return files;
}

test("canvasd nodes → elements → nodes: nothing to write back, tldraw's values included", () => {
  const built = build(NODES);
  const files = filesOf(NODES);
  for (const n of NODES) {
    const el = built.get(elementId(n.id))!;
    const d = nodeDraft(el, built, n, files);
    assert.ok(d, n.id);
    assert.deepEqual(d.props, {}, `${n.id}: a patch of ${JSON.stringify(n.props)}`);
    assert.equal(d.type, n.type);
    for (const k of ["x", "y", "w", "h", "rotation"] as const) {
      if ((n.type === "draw" || n.type === "line") && (k === "w" || k === "h")) continue; // a drawing's box is its points'
      assert.ok(Math.abs(d[k] - n[k]) < 0.011, `${n.id}: ${k} ${d[k]}, was ${n[k]}`);
    }
  }
});

test("canvasd edges → arrows → edges: nothing to write back", () => {
  const byNode = new Map(NODES.map((n) => [n.id, n]));
  for (const e of EDGES) {
    const els = edgeElements(e, byNode, 1);
    assert.ok(els.length, e.id);
    const byId = new Map(els.map((el) => [el.id, el]));
    assert.deepEqual(edgePatch(arrowParts(els[0], byId), e.props!), {}, e.id);
    const d = edgeDraft(els[0], (id) => byNode.has(id));
    assert.deepEqual([d.from, d.to], [e.from, e.to], e.id);
    assert.deepEqual(d.points, e.props!.points, e.id);
  }
  // How Excalidraw draws tldraw's heads and routing.
  const [t] = edgeElements(EDGES[0], byNode, 1);
  assert.deepEqual([t.startArrowhead, t.endArrowhead, t.elbowed], ["bar", "triangle_outline", true]);
  assert.ok(t.startBinding.fixedPoint && t.endBinding.fixedPoint, "an elbow arrow's bindings have fixed points");
  const [f, label] = edgeElements(EDGES[1], byNode, 1);
  assert.equal(f.startBinding, null);
  assert.equal(f.endBinding.elementId, "g-xbox");
  assert.equal(label.text, "Plan\none\ntwo"); // rich text is never blank
});

/** nodePatch of node n after f changes the element it maps to. */
function edited(n: CanvasNode, f: (el: El) => void, label?: (t: El) => void): Props {
  const built = build([n]);
  const el = { ...built.get(elementId(n.id))! };
  f(el);
  built.set(el.id, el);
  if (label) {
    const t = { ...built.get(el.id + "::text")! };
    label(t);
    built.set(t.id, t);
  }
  return nodePatch(n.type, n.props!, partsOf(el, built));
}

test("a change of one property writes that property, and keeps what the person did not touch", () => {
  // tldraw's values stay: a semi fill and a cloud, when the colour changes.
  // (Excalidraw recolours a shape's label with it.)
  assert.deepEqual(edited(NODES[0], (el) => { el.strokeColor = "#1971c2"; }, (t) => { t.strokeColor = "#1971c2"; }), { color: "blue" });
  assert.deepEqual(edited(NODES[0], (el) => { el.strokeColor = "#1971c2"; }), { color: "blue", labelColor: "light-violet" });
  assert.deepEqual(edited(NODES[0], (el) => { el.opacity = 40; }), { opacity: 0.4 });
  assert.deepEqual(edited(NODES[0], (el) => { el.roundness = null; }), { roundness: "sharp" });
  // The fill the person sees stays as it was when the stroke changes.
  const solid = node("s", "geo", { geo: "rectangle", color: "red", fill: "solid" });
  assert.deepEqual(edited(solid, (el) => { el.strokeColor = "#1971c2"; }), { color: "blue", fillColor: "#ffc9c9" });
  assert.deepEqual(edited(solid, (el) => { el.backgroundColor = "#a5d8ff"; }), { fillColor: "#a5d8ff" });
  assert.deepEqual(edited(solid, (el) => { el.backgroundColor = "#e03131"; }), { fill: "fill" });
  assert.deepEqual(edited(solid, (el) => { el.fillStyle = "zigzag"; }), { fill: "zigzag" });
  assert.deepEqual(edited(solid, (el) => { el.backgroundColor = "transparent"; }), { fill: "none" });
  assert.deepEqual(edited(node("semi", "geo", { fill: "semi" }), (el) => { el.fillStyle = "hachure"; }), { fill: "hachure", fillColor: "#f8f9fa" });
  assert.deepEqual(edited(solid, (el) => { el.strokeStyle = "dashed"; }), { dash: "dashed" });
  assert.deepEqual(edited(solid, (el) => { el.strokeWidth = 4; }), { strokeWidth: 4 });
  assert.deepEqual(edited(solid, (el) => { el.link = "https://example.com/x"; el.locked = true; }), { link: "https://example.com/x", locked: true });
  // A label's font, size, alignment and colour; its text.
  assert.deepEqual(edited(NODES[0], () => {}, (t) => { t.fontFamily = 8; }), { font: "comic" });
  assert.deepEqual(edited(NODES[0], () => {}, (t) => { t.fontSize = 16; }), { fontSize: 16 });
  assert.deepEqual(edited(NODES[0], () => {}, (t) => { t.textAlign = "right"; t.verticalAlign = "top"; }), { align: "end", verticalAlign: "start" });
  assert.deepEqual(edited(NODES[0], () => {}, (t) => { t.strokeColor = "#2f9e44"; }), { labelColor: "green" });
  assert.deepEqual(edited(NODES[3], () => {}, (t) => { t.originalText = "Plan B"; }), { text: "Plan B", richText: null });
  // A text's size, as a size when it is one.
  assert.deepEqual(edited(NODES[8], (el) => { el.fontSize = 36; }), { size: "xl" });
  assert.deepEqual(edited(NODES[8], (el) => { el.fontSize = 30; }), { fontSize: 30 });
  // A note's colour is its background.
  assert.deepEqual(edited(NODES[6], (el) => { el.backgroundColor = "#ffc9c9"; }), { color: "red" });
  assert.deepEqual(edited(NODES[6], (el) => { el.backgroundColor = "#abcdef"; }), { fillColor: "#abcdef" });
  // An image flipped; a line made straight.
  assert.deepEqual(edited(NODES[13], (el) => { el.scale = [1, -1]; }), { flipX: null, flipY: true });
  assert.deepEqual(edited(NODES[10], (el) => { el.roundness = null; }), { routing: "straight" });
  // An embed's address.
  assert.deepEqual(edited(NODES[12], (el) => { el.link = "https://example.org/"; }), { url: "https://example.org/" });
});

test("an arrow's heads and routing: the one changed is written, tldraw's others stay", () => {
  const byNode = new Map(NODES.map((n) => [n.id, n]));
  const e = EDGES[0];
  const change = (f: (el: El) => void) => {
    const els = edgeElements(e, byNode, 1);
    const el = { ...els[0] };
    f(el);
    return edgePatch(arrowParts(el, new Map([[els[1].id, els[1]]])), e.props!);
  };
  assert.deepEqual(change((el) => { el.endArrowhead = "triangle"; }), { arrowheadEnd: "triangle" });
  assert.deepEqual(change((el) => { el.startArrowhead = null; }), { arrowheadStart: "none" });
  assert.deepEqual(change((el) => { el.startArrowhead = "circle_outline"; }), { arrowheadStart: "circle-outline" });
  assert.deepEqual(change((el) => { el.elbowed = false; el.roundness = { type: 2 }; }), { routing: "curved" });
  assert.deepEqual(change((el) => { el.strokeColor = "#c2255c"; }), { color: "#c2255c", labelColor: "red" });
});

test("rich text shows as its plain text", () => {
  assert.equal(plainText(richText), "Plan\none\ntwo");
  assert.equal(styleOf("geo", { richText }).label.text, "Plan\none\ntwo");
  const els = build([NODES[3], NODES[9]]);
  assert.equal(els.get("g-rich::text")!.text, "Plan\none\ntwo");
  assert.equal(els.get("t-rich")!.text, "Plan\none\ntwo");
});

test("images: natural sizes for crops, SVG kept as SVG", () => {
  assert.deepEqual(imageSize(png2x2), { w: 2, h: 2 });
  assert.deepEqual(imageSize(svg), { w: 40, h: 30 });
  const els = build([NODES[13], NODES[14], NODES[15]]);
  assert.equal(els.get("im-svg")!.type, "image");
  assert.deepEqual(els.get("im-svg")!.scale, [-1, 1]);
  assert.deepEqual(els.get("im-png")!.crop, { x: 1, y: 0, width: 1, height: 2, naturalWidth: 2, naturalHeight: 2 });
  assert.equal(els.get("im-web")!.type, "rectangle"); // an address the page cannot show: a placeholder with it
});

/**
 * The shared corpus of the .excalidraw codec (convert/testdata/excalidraw:
 * elements Excalidraw wrote, and the canvasd nodes and edges the server's
 * codec makes of them), so that a file and the editor agree. It comes with
 * the server's codec; CANVASD_EXCALIDRAW_CORPUS names another directory.
 */
const corpus = process.env.CANVASD_EXCALIDRAW_CORPUS || "../../convert/testdata/excalidraw";
const haveCorpus = existsSync(corpus + "/mapping.json");

/** Element properties Excalidraw has and canvasd keeps otherwise, by element id: not compared. */
const CORPUS_OTHERWISE: Record<string, string[]> = {
  "iframe-1": ["type"], // Excalidraw's generated HTML: a rectangle
  "magic-1": ["type"], // a frame
};

test("the .excalidraw codec's corpus: its nodes draw as its elements, its elements give its nodes", { skip: !haveCorpus && `no ${corpus}/mapping.json (the server's .excalidraw codec is not on this branch)` }, () => {
  type Entry = { element: El; label?: El; node?: CanvasNode; edge?: CanvasEdge };
  const entries = JSON.parse(readFileSync(corpus + "/mapping.json", "utf8")) as Entry[];
  const file = JSON.parse(readFileSync(corpus + "/every-element.excalidraw", "utf8")) as { files: Record<string, any> };
  const nodes = new Map(entries.filter((e) => e.node).map((e) => [e.node!.id, e.node!]));
  const byId = new Map<string, El>();
  for (const e of entries) {
    byId.set(e.element.id, e.element);
    if (e.label) byId.set(e.element.id + "::text", e.label);
  }
  const myFiles = filesOf([...nodes.values()]);
  const without = (l: Record<string, unknown>, id: string) => {
    const out = { ...l };
    for (const k of CORPUS_OTHERWISE[id] || []) delete out[k];
    return out;
  };
  const styleParts = (kind: string, p: Props, type: string): Parts => { const s = styleOf(kind, p, type); return { el: { ...s.el, type }, label: s.label }; };
  let checked = 0;
  for (const e of entries) {
    const id = e.element.id;
    const kind = e.node ? e.node.type : "edge";
    const theirs = (e.node || e.edge)!.props || {};
    // Their node or edge, drawn by the web UI: the element Excalidraw wrote.
    const els = e.node ? nodeElements(e.node, nodes, 1) : edgeElements(e.edge!, nodes, 1);
    assert.ok(els.length, `${id}: not drawn`);
    assert.deepEqual(without(look(els[0], myFiles), id), without(look(e.element, file.files), id), `${id}: drawn from ${JSON.stringify(theirs)}`);
    // (A label's opacity and lock are its shape's: canvasd has one of each per node.)
    const labelLook = (t: El, f: Record<string, any>) => { const l = look(t, f); delete l.opacity; delete l.locked; return l; };
    if (e.label) assert.deepEqual(labelLook(els.find((x) => x.id === elementId(id) + "::text")!, myFiles), labelLook(e.label, file.files), `${id}'s label`);
    if (e.edge) {
      assert.equal(els[0].startBinding?.elementId ?? null, e.element.startBinding?.elementId ?? null, `${id}: start bound`);
      assert.equal(els[0].endBinding?.elementId ?? null, e.element.endBinding?.elementId ?? null, `${id}: end bound`);
    }
    // The element Excalidraw wrote, read by the web UI: props that draw as theirs, the same box or ends and points.
    const type = CORPUS_OTHERWISE[id] ? els[0].type : e.element.type;
    if (e.node) {
      const d = nodeDraft({ ...e.element, type }, byId, undefined, file.files);
      assert.ok(d, id);
      assert.equal(d.type, e.node.type, id);
      assert.deepEqual(differences(kind, styleParts(kind, d.props, els[0].type), styleParts(kind, theirs, els[0].type)), [], `${id}: read as ${JSON.stringify(d.props)}, the codec's ${JSON.stringify(theirs)}`);
      for (const k of ["x", "y", "w", "h", "rotation"] as const) assert.ok(Math.abs(d[k] - e.node[k]) < 0.011, `${id}: ${k} ${d[k]}, the codec's ${e.node[k]}`);
      for (const k of ["geo", "points", "segments", "closed", "url", "crop"]) assert.deepEqual(d.props[k], theirs[k], `${id}: props.${k}`);
    } else {
      const d = edgeDraft(e.element, (n) => nodes.has(n));
      assert.deepEqual([d.from, d.to], [e.edge!.from, e.edge!.to], id);
      assert.deepEqual(d.points, theirs.points, `${id}: points`);
      const mine = newEdgeProps(arrowParts(e.element, byId), d.points);
      assert.deepEqual(differences("edge", styleParts("edge", mine, "arrow"), styleParts("edge", theirs, "arrow")), [], `${id}: read as ${JSON.stringify(mine)}, the codec's ${JSON.stringify(theirs)}`);
    }
    checked++;
  }
  assert.equal(checked, entries.length);
});

test("orderKey is the fractional index Excalidraw gives a scene's elements in order", () => {
  const keys = generateNKeysBetween(null, null, 5000); // across "a…", "b…" and "c…"
  for (let i = 0; i < keys.length; i++) assert.equal(orderKey(i), keys[i], `key ${i}`);
  for (let i = 5000; i < 300000; i += 997) assert.ok(orderKey(i - 1) < orderKey(i) && orderKey(i) < orderKey(i + 1), `order at ${i}`);
  assert.equal(orderKey(62 + 3844 + 238328), "d0000");
});
