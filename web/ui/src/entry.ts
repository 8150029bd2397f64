// The page's entry: the canvas's snapshot is asked for first (early.ts),
// then the application (main.ts, with Excalidraw) is loaded and started.

import "./app.css";
import "@excalidraw/excalidraw/index.css"; // (the canvas's: all styles are in app.css, loaded with the page)
import { readSnapshotEarly } from "./early";

readSnapshotEarly();
void import("./main");
