// Runs before the application's modules: Excalidraw loads its fonts from
// EXCALIDRAW_ASSET_PATH (else from a CDN, which the page's CSP forbids); the
// build copies them to /ui/fonts.
window.EXCALIDRAW_ASSET_PATH = "/ui/";
