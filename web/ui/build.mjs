// Builds canvasd's browser UI into ../dist (embedded in the binary by
// web.go): boot.js, a classic script that asks for the canvas's snapshot
// first; one ESM bundle with code-split chunks (two entries: app.js, the
// styles, then main.js, the application, whose modules index.html
// preloads; the document panel and CodeMirror are imported dynamically, a
// chunk loaded on a document's first opening, not preloaded), its CSS,
// index.html and Excalidraw's fonts (served from /ui/fonts, never from a
// CDN); and the canvas host's pages into ../dist/shell (served under
// /host/{session}/__canvas__/): the viewer, the runtime injected into every
// served page, and the A2UI page with the A2UI project's Lit renderer.
// `node build.mjs --watch` rebuilds on change.
import * as esbuild from "esbuild";
import { cpSync, existsSync, mkdirSync, rmSync, readFileSync, writeFileSync, readdirSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "..", "dist");
const watch = process.argv.includes("--watch");

for (const f of readdirSync(out, { withFileTypes: true })) {
  if (f.name !== "BUILD.txt") rmSync(join(out, f.name), { recursive: true, force: true });
}
mkdirSync(out, { recursive: true });

// Excalidraw's fonts, except the 13 MB CJK family (Xiaolai): text in those
// scripts falls back to the browser's fonts.
const fonts = join(here, "node_modules/@excalidraw/excalidraw/dist/prod/fonts");
for (const f of readdirSync(fonts)) {
  if (f !== "Xiaolai") cpSync(join(fonts, f), join(out, "fonts", f), { recursive: true });
}
writeFileSync(join(out, "index.html"), readFileSync(join(here, "index.html")));

// Patches of Excalidraw's production build:
// - it lists a CDN as the fallback source of every font; the page's CSP
//   refuses it (and logs each refusal), so the fallback becomes our own path;
// - it never caches the bounds of a text bound to a container (a shape's
//   label), so every redraw recomputes them for every label of the scene (its
//   visibility test): on a canvas of 5,000 shapes, thousands per frame. The
//   cache entry of a label is keyed by the container's version too.
const CDN = /`https:\/\/esm\.sh\/\$\{[^`]*`[^`]*`[^}]*\}\/dist\/prod\/`/g;
const BOUNDS = /static getBounds\((\w+),(\w+)\)\{let (\w+)=([\w$]+)\.boundsCache\.get\(\1\);if\(\3\?\.version&&\3\.version===\1\.version&&!([\w$]+)\(\1\)\)return \3\.bounds;let (\w+)=\4\.calculateBounds\(\1,\2\);return \4\.boundsCache\.set\(\1,\{version:\1\.version,bounds:\6\}\),\6\}/g;
const BOUNDS_CACHED = "static getBounds($1,$2){let $3=$4.boundsCache.get($1),cv=$5($1)?$2?.get($1.containerId)?.version??-1:0;" +
  "if($3?.version&&$3.version===$1.version&&$3.cv===cv)return $3.bounds;let $6=$4.calculateBounds($1,$2);" +
  "return $4.boundsCache.set($1,{version:$1.version,cv,bounds:$6}),$6}";
// - its renderer copies every element of the scene into a new map on each
//   redraw (to leave out one being drawn or typed); with none such, the
//   scene's own map of its elements is the same: 20,000 map entries less per
//   remote commit on screen.
const RENDERABLE = /(\w+)=(\w+)\(\{elements:(\w+),editingTextElement:(\w+),newElementId:(\w+),pendingImageElementId:(\w+)\}\)/g;
const RENDERABLE_SHARED = "$1=$4||$5||$6?$2({elements:$3,editingTextElement:$4,newElementId:$5,pendingImageElementId:$6}):this.scene.getNonDeletedElementsMap()";
// - it registers every font face it knows when it starts, among them the
//   CJK family's ~200 (Xiaolai, which the build leaves out: they point to
//   files the server does not have): a FontFace object and a document font
//   each, a tenth of a big canvas's open on a loaded machine. The family is
//   registered with no faces (its metrics stay; CJK text falls back to the
//   browser's fonts, as it did when those files were asked for and missing).
const XIAOLAI = /(\w+)\("Virgil",\.\.\.(\w+)\),\1\((\w+),\.\.\.(\w+)\),/g;
const XIAOLAI_NONE = '$1("Virgil",...$2),$1($3),';
// - each redraw tests every element of the scene against the view: the
//   view's two corners were converted to scene coordinates again for each
//   (two conversions and three objects per element: 20,000 of each for a
//   remote commit on a big canvas). The renderer passes one view for all,
//   and the test keeps its corners by view (a WeakMap on the function).
const VISIBLE = /let ([\w$]+)=\[\];for\(let ([\w$]+) of ([\w$]+)\.values\(\)\)([\w$]+)\(\2,([\w$]+),([\w$]+),(\{zoom:[\w$]+,offsetLeft:[\w$]+,offsetTop:[\w$]+,scrollX:[\w$]+,scrollY:[\w$]+\}),\3\)&&\1\.push\(\2\);return \1/g;
const VISIBLE_ONE_VIEW = "let $1=[],vw=$7;for(let $2 of $3.values())$4($2,$5,$6,vw,$3)&&$1.push($2);return $1";
const INVIEW = /([\w$]+)=\(([\w$]+),([\w$]+),([\w$]+),([\w$]+),([\w$]+)\)=>\{let\[([\w$]+),([\w$]+),([\w$]+),([\w$]+)\]=([\w$]+)\(\2,\6\),([\w$]+)=([\w$]+)\(\{clientX:\5\.offsetLeft,clientY:\5\.offsetTop\},\5\),([\w$]+)=\13\(\{clientX:\5\.offsetLeft\+\3,clientY:\5\.offsetTop\+\4\},\5\);return /g;
const INVIEW_KEPT = "$1=($2,$3,$4,$5,$6)=>{let[$7,$8,$9,$10]=$11($2,$6),vc=$1.corners??=new WeakMap,vp=vc.get($5);" +
  "if(!vp||vp.w!==$3||vp.h!==$4)vc.set($5,vp={w:$3,h:$4,a:$13({clientX:$5.offsetLeft,clientY:$5.offsetTop},$5),b:$13({clientX:$5.offsetLeft+$3,clientY:$5.offsetTop+$4},$5)});" +
  "let $12=vp.a,$14=vp.b;return ";
const patched = { cdn: 0, bounds: 0, renderable: 0, xiaolai: 0, visible: 0, inview: 0 };
const patchExcalidraw = {
  name: "excalidraw-patches",
  setup(build) {
    build.onLoad({ filter: /@excalidraw[\\/]excalidraw[\\/]dist[\\/]prod[\\/](chunk-[^\\/]*|index)\.js$/ }, (args) => {
      let src = readFileSync(args.path, "utf8");
      const cdn = (src.match(CDN) || []).length;
      const bounds = (src.match(BOUNDS) || []).length;
      const renderable = (src.match(RENDERABLE) || []).length;
      const xiaolai = (src.match(XIAOLAI) || []).length;
      const visible = (src.match(VISIBLE) || []).length;
      const inview = (src.match(INVIEW) || []).length;
      if (!cdn && !bounds && !renderable && !xiaolai && !visible && !inview) return undefined;
      patched.cdn += cdn;
      patched.bounds += bounds;
      patched.renderable += renderable;
      patched.xiaolai += xiaolai;
      patched.visible += visible;
      patched.inview += inview;
      src = src.replace(CDN, 'location.origin+"/ui/"').replace(BOUNDS, BOUNDS_CACHED).replace(RENDERABLE, RENDERABLE_SHARED).replace(XIAOLAI, XIAOLAI_NONE)
        .replace(VISIBLE, VISIBLE_ONE_VIEW).replace(INVIEW, INVIEW_KEPT);
      return { contents: src, loader: "js" };
    });
    build.onEnd(() => {
      // Production builds only (watch mode uses Excalidraw's development build).
      if (!watch && Object.values(patched).some((n) => n !== 1)) {
        throw new Error(`Excalidraw patches: expected one place for each (font CDN URL, getBounds, renderable map, CJK font registration, visible elements, view test), found ${JSON.stringify(patched)} (a new Excalidraw version? see build.mjs)`);
      }
    });
  },
};

const options = {
  plugins: [patchExcalidraw],
  // @canvasd/client (a file: dependency on clients/js) is bundled from its TypeScript source.
  alias: { "@canvasd/client": join(here, "..", "..", "clients", "js", "src", "index.ts") },
  entryPoints: { app: join(here, "src/entry.ts"), main: join(here, "src/main.ts") },
  bundle: true,
  splitting: true,
  format: "esm",
  target: "es2022",
  outdir: out,
  entryNames: "[name]",
  chunkNames: "chunks/[name]-[hash]",
  assetNames: "assets/[name]-[hash]",
  // CANVASD_UI_NAMES=1 keeps the names of functions, for CPU profiles of the page.
  minify: !watch && !process.env.CANVASD_UI_NAMES,
  minifySyntax: !watch,
  minifyWhitespace: !watch,
  sourcemap: watch ? "inline" : false,
  legalComments: "linked",
  define: { "process.env.NODE_ENV": JSON.stringify(watch ? "development" : "production") },
  loader: { ".woff2": "file", ".png": "file", ".svg": "file" },
  conditions: [watch ? "development" : "production"],
  logLevel: "warning",
};
// boot.js: the page's first script, a classic one (it runs before the
// styles and modules are loaded), asks for the canvas's snapshot and loads
// the Latin face of Excalifont, Excalidraw's default font (its file and
// unicode-range as Excalidraw registers them, found in its build).
function excalifontLatin() {
  const dir = join(here, "node_modules/@excalidraw/excalidraw/dist/prod");
  const src = readdirSync(dir).filter((f) => f.endsWith(".js")).map((f) => readFileSync(join(dir, f), "utf8")).join("\n");
  const esc = (s) => s.replace(/\$/g, "\\$");
  const faces = /\("Excalifont",\.\.\.([\w$]+)\)/.exec(src)?.[1];
  const face = faces && new RegExp(`[,\\s]${esc(faces)}=\\[\\{uri:([\\w$]+),descriptors:\\{unicodeRange:"(U\\+20-7e,[^"]+)"`).exec(src);
  const file = face && new RegExp(`[,\\s]${esc(face[1])}="\\./(fonts/Excalifont/[^"]+\\.woff2)"`).exec(src)?.[1];
  if (!file || !existsSync(join(out, file))) throw new Error("Excalidraw's Latin face of Excalifont not found in its build (a new Excalidraw version? see build.mjs)");
  return { url: "/ui/" + file, range: face[2] };
}
const bootOptions = {
  entryPoints: { boot: join(here, "src/boot.ts") },
  define: { EXCALIFONT: JSON.stringify(excalifontLatin()) },
  bundle: true,
  format: "iife",
  target: "es2022",
  outdir: out,
  minify: !watch,
  sourcemap: watch ? "inline" : false,
  logLevel: "warning",
};
// The host pages: classic scripts (the runtime is injected into agent
// pages as one), no chunks; the A2UI page's icons are SVG text.
const shellOut = join(out, "shell");
mkdirSync(shellOut, { recursive: true });
for (const [from, to] of [["viewer.html", "index.html"], ["viewer.css", "viewer.css"], ["a2ui.html", "a2ui.html"], ["agent.html", "agent.html"]]) {
  writeFileSync(join(shellOut, to), readFileSync(join(here, "shell", from)));
}
const shellOptions = {
  entryPoints: { viewer: join(here, "shell/viewer.ts"), page: join(here, "shell/page.ts"), a2ui: join(here, "shell/a2ui.ts") },
  bundle: true,
  format: "iife",
  target: "es2022",
  outdir: shellOut,
  minify: !watch,
  sourcemap: watch ? "inline" : false,
  legalComments: "linked",
  loader: { ".svg": "text" },
  conditions: [watch ? "development" : "production"],
  define: { "process.env.NODE_ENV": JSON.stringify(watch ? "development" : "production") },
  logLevel: "warning",
};

if (watch) {
  const ctx = await esbuild.context(options);
  await ctx.watch();
  const shellCtx = await esbuild.context(shellOptions);
  await shellCtx.watch();
  const bootCtx = await esbuild.context(bootOptions);
  await bootCtx.watch();
} else {
  await esbuild.build(bootOptions);
  const res = await esbuild.build({ ...options, metafile: true });
  // index.html names the application's modules (main.js imports them) for
  // the browser to fetch and compile at once, while the entry runs.
  const outs = res.metafile.outputs;
  const key = (f) => Object.keys(outs).find((k) => resolve(k) === resolve(f));
  const preload = new Set();
  const todo = outs[key(join(out, "main.js"))].imports.filter((i) => i.kind === "import-statement").map((i) => i.path);
  const walk = () => {
    while (todo.length) {
      const f = key(todo.pop());
      if (!f || preload.has(f)) continue;
      preload.add(f);
      for (const i of outs[f].imports) if (i.kind === "import-statement") todo.push(i.path);
    }
  };
  walk();
  // Excalidraw imports two modules dynamically each time it starts (its
  // English strings, the canvas roundRect polyfill): preloaded too (last),
  // they are not fetched only then. What else is imported dynamically (the
  // document panel with CodeMirror, Excalidraw's other languages, ...) is not.
  for (const re of [/@excalidraw[\\/]excalidraw[\\/]dist[\\/]prod[\\/]locales[\\/]en-\w+\.js$/, /canvas-roundrect-polyfill[\\/]roundRect\.js$/]) {
    const f = Object.keys(outs).find((k) => re.test(outs[k].entryPoint || ""));
    if (!f) throw new Error(`no chunk of ${re} in the build (a new Excalidraw version? see build.mjs)`);
    todo.push(f);
  }
  walk();
  const links = [...preload].map((f) => `<link rel="modulepreload" href="/ui/${relative(out, resolve(f)).split(sep).join("/")}">`).join("\n");
  const index = readFileSync(join(here, "index.html"), "utf8");
  if (!index.includes("<!-- modulepreload -->")) throw new Error("index.html lacks its <!-- modulepreload --> mark");
  writeFileSync(join(out, "index.html"), index.replace("<!-- modulepreload -->", links));
  const bytes = Object.values(res.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
  console.log(`web UI built into ${out} (${(bytes / 1e6).toFixed(1)} MB of scripts and styles)`);
  const sh = await esbuild.build({ ...shellOptions, metafile: true });
  const sizes = Object.entries(sh.metafile.outputs).filter(([f]) => f.endsWith(".js")).map(([f, o]) => `${f.split("/").pop()} ${(o.bytes / 1e3).toFixed(0)} kB`);
  console.log(`host pages built into ${shellOut} (${sizes.join(", ")})`);
  // Each text file web.go would gzip (over 1 KiB; not the host's pages) gets
  // its gzipped copy beside it (name.gz), at the best ratio: the server
  // sends it as it is, so that no first request after a start waits while
  // the server compresses (main.js: tens of ms on a loaded machine).
  let gz = 0;
  for (const f of readdirSync(out, { recursive: true, withFileTypes: true })) {
    const path = join(f.parentPath, f.name);
    if (!f.isFile() || !/\.(js|css|html|json|txt)$/.test(f.name) || f.name === "BUILD.txt" || relative(out, path).startsWith("shell")) continue;
    const body = readFileSync(path);
    if (body.length <= 1024) continue;
    const z = gzipSync(body, { level: 9 });
    writeFileSync(path + ".gz", z);
    gz += z.length;
  }
  console.log(`gzipped copies beside them: ${(gz / 1e6).toFixed(1)} MB`);
}
