// Builds canvasd's browser UI into ../dist (embedded in the binary by
// web.go): one ESM bundle with code-split chunks, its CSS, index.html and
// Excalidraw's fonts (served from /ui/fonts, never from a CDN).
// `node build.mjs --watch` rebuilds on change.
import * as esbuild from "esbuild";
import { cpSync, mkdirSync, rmSync, readFileSync, writeFileSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

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
for (const f of ["index.html", "boot.js"]) writeFileSync(join(out, f), readFileSync(join(here, f)));

// Excalidraw lists a CDN as the fallback source of every font; the page's CSP
// refuses it (and logs each refusal), so the fallback becomes our own path.
const noCDN = {
  name: "excalidraw-fonts-from-self",
  setup(build) {
    build.onLoad({ filter: /@excalidraw[\\/]excalidraw[\\/]dist[\\/]prod[\\/]chunk-[^\\/]*\.js$/ }, (args) => {
      const src = readFileSync(args.path, "utf8");
      const cdn = /`https:\/\/esm\.sh\/\$\{[^`]*`[^`]*`[^}]*\}\/dist\/prod\/`/g;
      const n = (src.match(cdn) || []).length;
      if (!n) return undefined;
      if (n !== 1) throw new Error(`${args.path}: expected one font CDN URL, found ${n}`);
      return { contents: src.replace(cdn, 'location.origin+"/ui/"'), loader: "js" };
    });
  },
};

const options = {
  plugins: [noCDN],
  // @canvasd/client (a file: dependency on clients/js) is bundled from its TypeScript source.
  alias: { "@canvasd/client": join(here, "..", "..", "clients", "js", "src", "index.ts") },
  entryPoints: { app: join(here, "src/main.ts") },
  bundle: true,
  splitting: true,
  format: "esm",
  target: "es2022",
  outdir: out,
  entryNames: "[name]",
  chunkNames: "chunks/[name]-[hash]",
  assetNames: "assets/[name]-[hash]",
  minify: !watch,
  sourcemap: watch ? "inline" : false,
  legalComments: "linked",
  define: { "process.env.NODE_ENV": JSON.stringify(watch ? "development" : "production") },
  loader: { ".woff2": "file", ".png": "file", ".svg": "file" },
  conditions: [watch ? "development" : "production"],
  logLevel: "warning",
};
if (watch) {
  const ctx = await esbuild.context(options);
  await ctx.watch();
} else {
  const res = await esbuild.build({ ...options, metafile: true });
  const bytes = Object.values(res.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
  console.log(`web UI built into ${out} (${(bytes / 1e6).toFixed(1)} MB of scripts and styles)`);
}
