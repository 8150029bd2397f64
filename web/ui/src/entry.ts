// The page's first module: it asks for the canvas's snapshot (early.ts)
// while the browser still loads the application (main.ts, with Excalidraw,
// the page's second module: index.html runs it next) and holds the styles.

import "./app.css";
import "@excalidraw/excalidraw/index.css"; // (the canvas's: all styles are in app.css, loaded with the page)
import { readSnapshotEarly } from "./early";

readSnapshotEarly();
