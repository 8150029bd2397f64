// The page's first script, a classic one run as soon as it is read (before
// the styles and the modules): Excalidraw loads its fonts from
// EXCALIDRAW_ASSET_PATH (else from a CDN, which the page's CSP forbids; the
// build copies them to /ui/fonts), and the snapshot of the canvas in the
// address is asked for now (early.ts), while the browser still loads,
// compiles and starts the application's modules.
import { readSnapshotEarly } from "./early";

(window as unknown as { EXCALIDRAW_ASSET_PATH: string }).EXCALIDRAW_ASSET_PATH = "/ui/";
readSnapshotEarly();
