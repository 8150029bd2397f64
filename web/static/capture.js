// canvasd web UI: pictures of the canvas for the agent. The SVG scene is
// cloned (nodes and edges, not selection boxes or cursors), every element
// that the page styles through app.css gets those styles inline (an SVG
// loaded as an image sees no stylesheet), and the result is loaded as a
// data: image, drawn on an offscreen <canvas> and encoded as PNG. No code
// from the canvas or the server is ever evaluated.

const SVG = "http://www.w3.org/2000/svg";
const XHTML = "http://www.w3.org/1999/xhtml";

/** The largest picture side the page produces, whatever is asked. */
export const MAX_SIDE = 2048;
/** The default bound of the long side (the design's thumbnail). */
export const DEFAULT_SIDE = 800;
/** The most a small region is enlarged. */
const MAX_UPSCALE = 2;

// Computed properties copied onto HTML elements inside foreignObject.
const HTML_PROPS = [
  "display", "box-sizing", "width", "height", "max-width", "max-height", "flex-direction", "flex",
  "align-items", "justify-content", "text-align", "white-space", "overflow-wrap", "word-break", "overflow",
  "text-overflow", "padding-top", "padding-right", "padding-bottom", "padding-left", "margin-top",
  "margin-right", "margin-bottom", "margin-left", "line-height", "color", "background-color",
  "border-top-width", "border-top-style", "border-top-color", "border-right-width", "border-right-style",
  "border-right-color", "border-bottom-width", "border-bottom-style", "border-bottom-color",
  "border-left-width", "border-left-style", "border-left-color", "border-top-left-radius",
  "border-top-right-radius", "border-bottom-left-radius", "border-bottom-right-radius",
  "font-family", "font-size", "font-weight", "font-style", "opacity", "vertical-align",
];
// Computed properties copied onto SVG elements that carry a class.
const SVG_PROPS = [
  "fill", "fill-opacity", "stroke", "stroke-width", "stroke-opacity", "font-family", "font-size",
  "font-weight", "opacity", "display", "visibility",
];

const finite = (v) => typeof v === "number" && isFinite(v);

/** A box {x, y, w, h} with finite numbers and a positive size, or null. */
export function validBox(b) {
  if (!b || typeof b !== "object") return null;
  const { x, y, w, h } = b;
  if (![x, y, w, h].every(finite) || w <= 0 || h <= 0) return null;
  return { x, y, w, h };
}

/**
 * The pixel size of a picture of box under maxSize {w, h} (each side
 * clamped to 1..MAX_SIDE; absent: DEFAULT_SIDE): the box's aspect ratio,
 * as large as fits, enlarged at most MAX_UPSCALE times.
 */
export function pictureSize(box, maxSize) {
  const side = (v) => (finite(v) && v >= 1 ? Math.min(Math.floor(v), MAX_SIDE) : DEFAULT_SIDE);
  const mw = side(maxSize && maxSize.w), mh = side(maxSize && maxSize.h);
  const scale = Math.min(mw / box.w, mh / box.h, MAX_UPSCALE);
  return {
    w: Math.max(1, Math.min(mw, Math.round(box.w * scale))),
    h: Math.max(1, Math.min(mh, Math.round(box.h * scale))),
  };
}

/** Copies the computed styles of src (and its subtree) onto dst, a clone of it. */
function inlineStyles(src, dst) {
  if (src.nodeType !== 1) return;
  const isHTML = src.namespaceURI === XHTML;
  if (isHTML || src.hasAttribute("class")) {
    const cs = getComputedStyle(src);
    for (const p of isHTML ? HTML_PROPS : SVG_PROPS) {
      const v = cs.getPropertyValue(p);
      if (v) dst.style.setProperty(p, v);
    }
    if (isHTML) dst.removeAttribute("class");
  }
  const a = src.children, b = dst.children;
  for (let i = 0; i < a.length && i < b.length; i++) inlineStyles(a[i], b[i]);
}

/**
 * Renders the part box (canvas coordinates) of the scene to a PNG data URL.
 * stage is the page's <svg>; layers are the ids of the <g> elements to
 * include, in paint order. Resolves to {dataUrl, width, height}.
 */
export async function renderPNG(stage, layers, box, maxSize, background) {
  const size = pictureSize(box, maxSize);
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("xmlns", SVG);
  svg.setAttribute("width", String(size.w));
  svg.setAttribute("height", String(size.h));
  svg.setAttribute("viewBox", `${box.x} ${box.y} ${box.w} ${box.h}`);
  svg.setAttribute("preserveAspectRatio", "none");
  const bg = document.createElementNS(SVG, "rect");
  for (const [k, v] of Object.entries({ x: box.x, y: box.y, width: box.w, height: box.h, fill: background })) bg.setAttribute(k, String(v));
  svg.append(bg);
  const defs = stage.querySelector("defs");
  if (defs) svg.append(defs.cloneNode(true));
  for (const id of layers) {
    const src = stage.querySelector("#" + id);
    if (!src) continue;
    const copy = src.cloneNode(true);
    inlineStyles(src, copy);
    copy.removeAttribute("id");
    svg.append(copy);
  }
  for (const hit of svg.querySelectorAll("rect.hit")) hit.remove(); // pointer targets, invisible
  const xml = new XMLSerializer().serializeToString(svg);
  const img = new Image();
  img.width = size.w;
  img.height = size.h;
  img.src = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(xml);
  await img.decode();
  const canvas = document.createElement("canvas");
  canvas.width = size.w;
  canvas.height = size.h;
  const ctx = canvas.getContext("2d");
  ctx.fillStyle = background;
  ctx.fillRect(0, 0, size.w, size.h);
  ctx.drawImage(img, 0, 0, size.w, size.h);
  return { dataUrl: canvas.toDataURL("image/png"), width: size.w, height: size.h };
}
