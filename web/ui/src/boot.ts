// The page's first script, a classic one run as soon as it is read (before
// the styles and the modules): Excalidraw loads its fonts from
// EXCALIDRAW_ASSET_PATH (else from a CDN, which the page's CSP forbids; the
// build copies them to /ui/fonts), and the snapshot of the canvas in the
// address is asked for now (early.ts), while the browser still loads,
// compiles and starts the application's modules.
//
// Excalidraw's default font (the Latin face of Excalifont, 25 kB) loads now
// too: Excalidraw asks for it only once a scene is on stage, so the labels
// of a big canvas were sized by an estimate, then all built again when the
// font came (a second of work at 20,000 shapes, just as the canvas opened).
import { readSnapshotEarly } from "./early";

/** The face's file and unicode-range, as Excalidraw registers it (build.mjs finds them). */
declare const EXCALIFONT: { url: string; range: string };

(window as unknown as { EXCALIDRAW_ASSET_PATH: string }).EXCALIDRAW_ASSET_PATH = "/ui/";
readSnapshotEarly();
try {
  const face = new FontFace("Excalifont", `url(${EXCALIFONT.url}) format('woff2')`, { display: "swap", unicodeRange: EXCALIFONT.range });
  document.fonts.add(face);
  face.load().catch(() => {}); // (Excalidraw asks again, and says when it fails)
} catch { /* no FontFace: Excalidraw loads it */ }
