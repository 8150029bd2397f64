// Package testchrome is for tests and benchmarks: the one set of options
// with which they start Debian's headless Chromium through chromedp.
package testchrome

import "github.com/chromedp/chromedp"

// Path is Debian's chromium (make deps and CI install the package).
const Path = "/usr/bin/chromium"

// Options returns the options of a test browser with its profile in
// userDataDir and a window of width × height pixels: headless, no sandbox,
// no GPU, no network of its own beyond the pages', no first-run work.
//
// It also turns off Chrome's own WebUI for its toolbar and omnibox. Headless
// Chromium has neither on screen, yet with those features on it starts
// and preloads their WebUI pages in renderers of their own whenever a window
// opens, and they took half a core to a core for the few seconds in which a
// page under test was loading (docs/architecture.md, 3 December): page load
// figures and the tests' time were theirs as much as the page's.
func Options(userDataDir string, width, height int) []chromedp.ExecAllocatorOption {
	return []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(Path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-features", "InitialWebUI,WebUIToolbarProcessOverheadExperiment,PreloadTopChromeWebUI,WebUIOmniboxPopup,WebUIOmniboxAimPopup"),
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.WindowSize(width, height), chromedp.UserDataDir(userDataDir),
	}
}
