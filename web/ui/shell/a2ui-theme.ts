// The look of canvasd's A2UI page: the theme the v0.8 Lit renderer asks
// for (which of the renderer's utility classes each part of each component
// gets) and the colour palettes its classes read. A surface's
// beginRendering.styles.primaryColor replaces the primary palette inside
// that surface; its font replaces the font family.

import type * as v0_8 from "@a2ui/lit/v0_8";

type Classes = Record<string, boolean>;
const c = (...names: string[]): Classes => Object.fromEntries(names.map((n) => [n, true]));

const shades = [0, 5, 10, 15, 20, 25, 30, 35, 40, 50, 60, 70, 80, 90, 95, 98, 99, 100];

/** CSS custom properties --{p,s,t,n,nv,e}-{shade}: 0 is black, 50 the key colour, 100 white. */
function ramp(prefix: string, key: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const s of shades) {
    let v: string;
    if (s === 0) v = "#000000";
    else if (s === 100) v = "#ffffff";
    else if (s === 50) v = key;
    else if (s < 50) v = `color-mix(in srgb, ${key} ${s * 2}%, black ${100 - s * 2}%)`;
    else v = `color-mix(in srgb, ${key} ${(100 - s) * 2}%, white ${100 - (100 - s) * 2}%)`;
    out[`--${prefix}-${s}`] = v;
  }
  return out;
}

/** The palettes, set on the page's root (they inherit into every component). */
export const palette: Record<string, string> = {
  ...ramp("p", "#3367d6"),
  ...ramp("s", "#5f6b7a"),
  ...ramp("t", "#8a5cb8"),
  ...ramp("n", "#7a7f87"),
  ...ramp("nv", "#737c86"),
  ...ramp("e", "#cf222e"),
  "--color-scheme": "light",
  "--font-family": "system-ui, -apple-system, 'Segoe UI', sans-serif",
  "--font-family-flex": "system-ui, -apple-system, 'Segoe UI', sans-serif",
};

const text = c("typography-f-sf", "typography-fs-n", "layout-m-0", "color-c-n10");
const field = c("layout-p-2", "border-br-6", "border-bw-1", "border-bs-s", "color-bc-n80", "typography-sz-bm", "color-bgc-n100", "color-c-n10");
const label = c("typography-sz-bm", "color-c-n30", "layout-mb-1");
const container = c("layout-dsp-flexvert", "layout-g-1");

export const theme: v0_8.Types.Theme = {
  components: {
    AudioPlayer: c("layout-w-100"),
    Button: c("typography-f-sf", "typography-w-500", "layout-pt-2", "layout-pb-2", "layout-pl-4", "layout-pr-4",
      "border-br-6", "border-bw-0", "color-bgc-p40", "color-c-p100", "behavior-ho-80"),
    Card: c("layout-p-4", "border-br-8", "border-bw-1", "border-bs-s", "color-bc-n90", "color-bgc-n100"),
    Column: c("layout-g-3"),
    CheckBox: { container: c("layout-dsp-iflex", "layout-al-c", "layout-g-2"), element: c("layout-m-0"), label: c("typography-sz-bm", "color-c-n10") },
    DateTimeInput: { container, element: field, label },
    Divider: c("color-bgc-n90"),
    Image: {
      all: c("border-br-2", "layout-el-cv", "layout-w-100"),
      icon: c("layout-wp-6", "layout-hp-6"),
      avatar: c("layout-wp-12", "layout-hp-12", "border-br-50pc"),
      smallFeature: c("layout-w-20"),
      mediumFeature: c("layout-w-50"),
      largeFeature: c("layout-w-100"),
      header: c("layout-w-100"),
    },
    Icon: c("color-c-n20"),
    List: c("layout-g-2"),
    Modal: { backdrop: c("color-bbgc-n0_40"), element: c("layout-p-4", "border-br-8", "color-bgc-n100", "border-bw-0") },
    MultipleChoice: { container, element: field, label },
    Row: c("layout-g-3", "layout-al-c"),
    Slider: { container, element: c("layout-w-100"), label },
    Tabs: {
      container: c("layout-dsp-flexvert", "layout-g-2"),
      element: c("layout-dsp-flexhor", "layout-g-1", "border-bbw-1", "border-bs-s", "color-bc-n90"),
      controls: {
        all: c("typography-f-sf", "layout-pt-2", "layout-pb-2", "layout-pl-3", "layout-pr-3", "border-bw-0", "color-bgc-transparent", "color-c-n30"),
        selected: c("color-c-p40", "border-bbw-2", "border-bs-s", "color-bc-p40", "typography-w-600"),
      },
    },
    Text: {
      all: text,
      h1: c("typography-sz-hm", "typography-w-600"),
      h2: c("typography-sz-hs", "typography-w-600"),
      h3: c("typography-sz-tl", "typography-w-600"),
      h4: c("typography-sz-tm", "typography-w-600"),
      h5: c("typography-sz-ts", "typography-w-600"),
      caption: c("typography-sz-bs", "color-c-n40"),
      body: c("typography-sz-bm"),
    },
    TextField: { container, element: field, label },
    Video: c("layout-w-100", "border-br-6"),
  },
  elements: {
    a: c("color-c-p40"),
    audio: c("layout-w-100"),
    body: c("typography-sz-bm"),
    button: c("typography-f-sf"),
    h1: c("typography-sz-hm"),
    h2: c("typography-sz-hs"),
    h3: c("typography-sz-tl"),
    h4: c("typography-sz-tm"),
    h5: c("typography-sz-ts"),
    iframe: c("layout-w-100"),
    input: field,
    p: c("layout-m-0"),
    pre: c("typography-f-c"),
    textarea: field,
    video: c("layout-w-100"),
  },
  markdown: {
    p: ["layout-m-0"],
    h1: ["typography-sz-hm", "layout-m-0"],
    h2: ["typography-sz-hs", "layout-m-0"],
    h3: ["typography-sz-tl", "layout-m-0"],
    h4: ["typography-sz-tm", "layout-m-0"],
    h5: ["typography-sz-ts", "layout-m-0"],
    ul: ["layout-mt-1", "layout-mb-1"],
    ol: ["layout-mt-1", "layout-mb-1"],
    li: [],
    a: ["color-c-p40"],
    strong: ["typography-w-700"],
    em: ["typography-fs-i"],
  },
  additionalStyles: {
    Video: { width: "100%", maxHeight: "60vh" },
    AudioPlayer: { width: "100%" },
  },
};
