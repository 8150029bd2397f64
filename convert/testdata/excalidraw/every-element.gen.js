window.onerror = (m, src, l, c, e) => { document.getElementById("out").textContent = "ERROR " + m + " " + (e && e.stack); };
import { convertToExcalidrawElements, serializeAsJSON, restoreElements } from "@excalidraw/excalidraw";

// A red/blue 4x2 PNG.
const png = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAQAAAACCAYAAAB/qH1jAAAAFklEQVR4nGP4z8DwHxkzoAvQXgAASGUf4c5M9uEAAAAASUVORK5CYII=";
const fileId = "a0c1f1e2d3b4a5968778695a4b3c2d1e0f1a2b3c";
const skeletons = [
  { type: "frame", id: "frame-1", x: -40, y: -60, width: 900, height: 700, name: "Every element", children: ["rect-1", "ellipse-1", "diamond-1"] },
  { type: "rectangle", id: "rect-1", x: 0, y: 0, width: 200, height: 100, strokeColor: "#e03131", backgroundColor: "#ffc9c9", fillStyle: "solid", strokeWidth: 2, roundness: { type: 3 }, label: { text: "A labelled rectangle", fontSize: 20 } },
  { type: "ellipse", id: "ellipse-1", x: 300, y: 0, width: 160, height: 100, strokeColor: "#1971c2", backgroundColor: "#a5d8ff", fillStyle: "hachure", strokeStyle: "dashed", link: "https://excalidraw.com" },
  { type: "diamond", id: "diamond-1", x: 560, y: 0, width: 140, height: 120, backgroundColor: "#b2f2bb", fillStyle: "cross-hatch", strokeStyle: "dotted", opacity: 60, roughness: 2, locked: true, label: { text: "diamond", fontFamily: 6, strokeColor: "#2f9e44" } },
  { type: "arrow", id: "arrow-bound", x: 200, y: 50, width: 100, height: 0, start: { id: "rect-1" }, end: { id: "ellipse-1" }, label: { text: "bound" }, endArrowhead: "triangle", startArrowhead: "dot" },
  { type: "arrow", id: "arrow-free", x: 0, y: 200, width: 300, height: 80, points: [[0, 0], [150, 80], [300, 0]], strokeColor: "#6741d9", endArrowhead: "bar", startArrowhead: "diamond_outline" },
  { type: "arrow", id: "arrow-elbow", x: 0, y: 320, width: 300, height: 100, points: [[0, 0], [150, 0], [150, 100], [300, 100]], elbowed: true, endArrowhead: "arrow" },
  { type: "line", id: "line-1", x: 400, y: 200, width: 200, height: 100, points: [[0, 0], [100, 100], [200, 0]], strokeColor: "#f08c00", strokeWidth: 4 },
  { type: "line", id: "polygon-1", x: 650, y: 200, width: 100, height: 100, points: [[0, 0], [100, 0], [50, 100], [0, 0]], polygon: true, backgroundColor: "#ffec99", fillStyle: "zigzag" },
  { type: "freedraw", id: "freedraw-1", x: 400, y: 360, width: 120, height: 60, points: [[0, 0], [20, 30], [60, 50], [90, 20], [120, 60]], pressures: [0.5, 0.6, 0.7, 0.6, 0.5], simulatePressure: false, strokeColor: "#e8590c" },
  { type: "text", id: "text-1", x: 0, y: 480, text: "Free text\non two lines", fontSize: 28, fontFamily: 5, textAlign: "center", strokeColor: "#1e1e1e" },
  { type: "text", id: "text-2", x: 300, y: 480, text: "Cascadia code", fontSize: 16, fontFamily: 3, textAlign: "right", angle: 0.3 },
  { type: "image", id: "image-1", x: 600, y: 450, width: 160, height: 80, fileId, scale: [-1, 1] },
  { type: "embeddable", id: "embed-1", x: 960, y: 0, width: 320, height: 180, link: "https://www.youtube.com/watch?v=dQw4w9WgXcQ" },
  { type: "rectangle", id: "group-a", x: 960, y: 260, width: 100, height: 60, groupIds: ["g-inner", "g-outer"] },
  { type: "ellipse", id: "group-b", x: 1100, y: 260, width: 100, height: 60, groupIds: ["g-outer"] },
  { type: "frame", id: "magic-1", x: 960, y: 380, width: 300, height: 200, name: "magic", children: ["group-b"] },
];
let elements = convertToExcalidrawElements(skeletons, { regenerateIds: false });
// Element types the skeleton API does not make: a magic frame, an iframe, a cropped image.
elements = elements.map((e) => {
  if (e.id === "magic-1") return { ...e, type: "magicframe" };
  if (e.id === "polygon-1") return { ...e, polygon: true };
  if (e.id === "image-1") return { ...e, crop: { x: 1, y: 0, width: 2, height: 2, naturalWidth: 4, naturalHeight: 2 } };
  return e;
});
elements.push({ ...elements.find((e) => e.id === "embed-1"), id: "iframe-1", type: "iframe", y: 640, link: null, customData: { generationData: { status: "done", html: "<p>hi</p>" } } });
elements = restoreElements(elements, null, { refreshDimensions: false, repairBindings: true });
const files = { [fileId]: { mimeType: "image/png", id: fileId, dataURL: png, created: 1700000000000, lastRetrieved: 1700000000000 } };
const json = serializeAsJSON(elements, { viewBackgroundColor: "#ffffff", gridSize: 20 }, files, "local");
document.getElementById("out").textContent = json;
