// esbuild bundles the A2UI page's SVG icons as text (build.mjs).
declare module "*.svg" {
  const svg: string;
  export default svg;
}
