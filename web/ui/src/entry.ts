// The page's first module: it holds the styles (built into app.css, which
// index.html loads). The snapshot of the canvas is asked for earlier, by
// boot.ts; the application is main.ts (the page's second module).

import "./app.css";
import "@excalidraw/excalidraw/index.css"; // (the canvas's: all styles are in app.css, loaded with the page)
