// canvasd's built-in A2UI v0.8 page: the session's surfaces rendered by the
// A2UI project's own Lit renderer (@a2ui/lit, its v0_8 entry point) with its
// Markdown renderer (@a2ui/markdown-it: markdown-it, then DOMPurify). It
// runs in the viewer's frame like any page of the session (sandboxed, with
// the page runtime), receives the session's A2UI messages from the viewer
// and sends userActions back through window.canvasd.
//
// Two standard components are replaced (the registry's overrides): Slider,
// whose stock element steps by whole numbers (a 0-1 slider at 0.45 read 0),
// and Icon, whose stock element needs the Material Symbols web font; here
// the catalog's icons are inline SVGs of the same symbols, bundled.

import { LitElement, css, html, nothing, type PropertyValues } from "lit";
import { repeat } from "lit/directives/repeat.js";
import { unsafeSVG } from "lit/directives/unsafe-svg.js";
import { ContextProvider } from "@lit/context";
import * as v0_8 from "@a2ui/lit/v0_8";
import * as UI from "@a2ui/lit/ui";
import { renderMarkdown } from "@a2ui/markdown-it";
import { TAG, isMsg } from "./protocol";
import { theme, palette } from "./a2ui-theme";
import { iconSVG } from "./a2ui-icons";

type Processor = ReturnType<typeof v0_8.Data.createSignalA2uiMessageProcessor>;
type Node = v0_8.Types.AnyComponentNode;
type Bound = { literalNumber?: number; literalString?: string; literal?: unknown; path?: string } | null | undefined;

/** The value of a bound property: its literal, or the data model's value at its path. */
function resolve(el: UI.Root, b: Bound): unknown {
  if (!b || typeof b !== "object") return undefined;
  if (typeof b.path === "string" && b.path && el.processor && el.component) {
    const v = el.processor.getData(el.component, b.path, el.surfaceId ?? v0_8.A2uiMessageProcessor.DEFAULT_SURFACE_ID);
    if (v !== null && v !== undefined) return v;
  }
  if ("literalNumber" in b) return b.literalNumber;
  if ("literalString" in b) return b.literalString;
  return b.literal;
}

/** Slider: keeps fractions (step "any"), writes numbers to the data model, shows its label. */
class CanvasdSlider extends UI.Root {
  static override properties = {
    value: { attribute: false }, minValue: { attribute: false }, maxValue: { attribute: false }, label: { attribute: false },
  };
  declare value: Bound;
  declare minValue: number | undefined;
  declare maxValue: number | undefined;
  declare label: Bound;

  static override styles = [
    ...(Array.isArray(UI.Root.styles) ? UI.Root.styles : [UI.Root.styles]),
    css`
      :host { display: block; flex: var(--weight); }
      section { display: flex; flex-direction: column; gap: 4px; }
      .row { display: flex; align-items: center; gap: 8px; }
      input { flex: 1; accent-color: var(--p-40, #3367d6); }
      output { min-width: 3em; text-align: right; font-variant-numeric: tabular-nums; }
    `,
  ];

  override render() {
    const raw = resolve(this, this.value);
    const v = typeof raw === "number" ? raw : Number(raw ?? 0);
    const min = typeof this.minValue === "number" ? this.minValue : 0;
    const max = typeof this.maxValue === "number" ? this.maxValue : Math.max(100, Number.isFinite(v) ? v : 0);
    const label = resolve(this, this.label);
    const shown = Number.isFinite(v) ? String(Math.round(v * 1000) / 1000) : "";
    return html`<section class="canvasd-slider">
      ${label !== undefined && label !== "" ? html`<label for="data">${String(label)}</label>` : nothing}
      <div class="row">
        <input id="data" type="range" step="any" min=${min} max=${max} .value=${String(Number.isFinite(v) ? v : min)}
          aria-label=${label !== undefined ? String(label) : "value"}
          @input=${(e: Event) => this.set(Number((e.target as HTMLInputElement).value))} />
        <output>${shown}</output>
      </div>
    </section>`;
  }

  private set(n: number): void {
    const b = this.value;
    if (!b || typeof b.path !== "string" || !b.path || !this.processor) return;
    this.processor.setData(this.component, b.path, n, this.surfaceId ?? v0_8.A2uiMessageProcessor.DEFAULT_SURFACE_ID);
    this.requestUpdate();
  }
}

/** Icon: the catalog's icons (and common Material Symbols) as inline SVG. */
class CanvasdIcon extends UI.Root {
  static override properties = { name: { attribute: false } };
  declare name: Bound;
  static override styles = [
    ...(Array.isArray(UI.Root.styles) ? UI.Root.styles : [UI.Root.styles]),
    css`
      :host { display: inline-flex; flex: var(--weight); align-items: center; justify-content: center; }
      svg { width: 24px; height: 24px; fill: currentColor; }
      .unknown { font-size: 12px; }
    `,
  ];
  override render() {
    const name = String(resolve(this, this.name) ?? "");
    const svg = iconSVG(name);
    return svg
      ? html`<span class="canvasd-icon" role="img" aria-label=${name} title=${name}>${unsafeSVG(svg)}</span>`
      : html`<span class="unknown" role="img" aria-label=${name}>${name}</span>`;
  }
}

/**
 * Image: the stock element, given every property (the stock renderer does
 * not pass Image.altText on).
 */
class CanvasdImage extends UI.Image {}

/** AudioPlayer: an <audio> player under its description (which the stock element does not show). */
class CanvasdAudio extends UI.Root {
  static override properties = { url: { attribute: false }, description: { attribute: false } };
  declare url: Bound;
  declare description: Bound;
  static override styles = [
    ...(Array.isArray(UI.Root.styles) ? UI.Root.styles : [UI.Root.styles]),
    css`
      :host { display: block; flex: var(--weight); }
      section { display: flex; flex-direction: column; gap: 4px; }
      .description { font-size: 14px; }
      audio { display: block; width: 100%; }
    `,
  ];
  override render() {
    const url = resolve(this, this.url);
    const description = resolve(this, this.description);
    return html`<section class="canvasd-audio">
      ${description !== undefined && description !== "" ? html`<span class="description">${String(description)}</span>` : nothing}
      ${typeof url === "string" && url ? html`<audio controls preload="metadata" src=${url}></audio>` : nothing}
    </section>`;
  }
}

type Ctor = UI.Root["constructor"] & typeof HTMLElement;
UI.componentRegistry.register("Slider", CanvasdSlider as unknown as Ctor, "canvasd-a2ui-slider");
UI.componentRegistry.register("Icon", CanvasdIcon as unknown as Ctor, "canvasd-a2ui-icon");
UI.componentRegistry.register("Image", CanvasdImage as unknown as Ctor, "canvasd-a2ui-image");
UI.componentRegistry.register("AudioPlayer", CanvasdAudio as unknown as Ctor, "canvasd-a2ui-audioplayer");

// List.alignment (the cross axis), which the stock element ignores: a
// style sheet per alignment added to each list once it has rendered. (Lists
// keep the stock element: the registry's elements are given their
// properties by assignment, and a list's "children" is read-only on an
// element.)
const listAlign: Record<string, string> = { start: "start", center: "center", end: "end", stretch: "stretch" };
const listSheets = new Map<string, CSSStyleSheet>();
function listSheet(alignment: string): CSSStyleSheet {
  let sheet = listSheets.get(alignment);
  if (!sheet) {
    sheet = new CSSStyleSheet();
    sheet.replaceSync(`:host([direction="horizontal"]) section { align-items: ${alignment}; } :host([direction="vertical"]) section, :host(:not([direction])) section { justify-items: ${alignment}; }`);
    listSheets.set(alignment, sheet);
  }
  return sheet;
}
const listProto = UI.List.prototype as unknown as { updated?: (this: UI.List, changed: PropertyValues) => void };
const listUpdated = listProto.updated;
listProto.updated = function (this: UI.List, changed: PropertyValues) {
  listUpdated?.call(this, changed);
  const a = listAlign[String((this.component?.properties as { alignment?: string } | undefined)?.alignment ?? "")];
  const root = this.shadowRoot;
  if (!a || !root) return;
  const sheet = listSheet(a);
  if (!root.adoptedStyleSheets.includes(sheet)) root.adoptedStyleSheets = [...root.adoptedStyleSheets.filter((s) => ![...listSheets.values()].includes(s)), sheet];
};

/** A component node standing for the data model's root (setData resolves paths against it). */
const rootNode = { dataContextPath: "/" } as unknown as Node;

const literals = ["literalString", "literalNumber", "literalBoolean", "literalArray"];

/**
 * The protocol's initialization shorthand: a bound value with both a path
 * and a literal sets the data model at the path to the literal and binds to
 * it. The renderer's schema takes one or the other, so the literal is taken
 * out of a copy of the surfaceUpdate and returned as a seed to set once the
 * update is applied. Action contexts are not bound properties and are left
 * as they are.
 */
function splitShorthand(m: unknown): { message: unknown; seeds: { path: string; value: unknown }[] } {
  const su = (m as { surfaceUpdate?: { components?: unknown[] } })?.surfaceUpdate;
  if (!su || !Array.isArray(su.components)) return { message: m, seeds: [] };
  const seeds: { path: string; value: unknown }[] = [];
  const walk = (v: unknown, key: string): unknown => {
    if (Array.isArray(v)) return v.map((x) => walk(x, key));
    if (!v || typeof v !== "object" || key === "action") return v;
    const o = v as Record<string, unknown>;
    const lit = literals.filter((k) => k in o);
    if (typeof o.path === "string" && lit.length === 1) {
      seeds.push({ path: o.path, value: o[lit[0]] });
      return { path: o.path };
    }
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(o)) out[k] = walk(x, k);
    return out;
  };
  const components = su.components.map((c) => walk(c, ""));
  return seeds.length ? { message: { surfaceUpdate: { ...su, components } }, seeds } : { message: m, seeds: [] };
}

/** The page: every surface of the session, in the order they were created. */
class CanvasdA2UI extends LitElement {
  static override styles = css`
    :host { display: flex; flex-direction: column; gap: 16px; padding: 12px; box-sizing: border-box; }
    #empty { color: #656d76; font: 14px system-ui, sans-serif; margin: 0; }
  `;
  readonly processor: Processor = v0_8.Data.createSignalA2uiMessageProcessor();
  private messages = 0;

  constructor() {
    super();
    new ContextProvider(this, { context: UI.Context.themeContext, initialValue: theme });
    new ContextProvider(this, { context: UI.Context.markdown, initialValue: renderMarkdown });
  }

  /** Applies A2UI server→client messages (reset: drop every surface first). */
  apply(reset: boolean, messages: unknown[]): void {
    if (reset) this.processor.clearSurfaces();
    for (const m of messages) {
      try {
        const { message, seeds } = splitShorthand(m);
        this.processor.processMessages([message as v0_8.Types.ServerToClientMessage]);
        const surfaceId = (message as { surfaceUpdate?: { surfaceId?: string } }).surfaceUpdate?.surfaceId;
        for (const s of seeds) this.processor.setData(rootNode, s.path, s.value as v0_8.Types.DataValue, surfaceId);
        this.messages++;
      } catch (err) {
        document.body.dataset.lastError = String((err as Error)?.message ?? err);
        console.warn("canvasd A2UI: a message was not applied", m, err);
      }
    }
    this.requestUpdate();
    document.body.dataset.surfaces = String(this.processor.getSurfaces().size);
    document.body.dataset.messages = String(this.messages);
  }

  protected override updated(_: PropertyValues): void {
    document.body.dataset.rendered = String(this.messages);
  }

  override render() {
    const surfaces = Array.from(this.processor.getSurfaces().entries());
    if (surfaces.length === 0) return html`<p id="empty">Waiting for the agent to render something.</p>`;
    return html`${repeat(surfaces, ([id]) => id, ([id, surface]) => html`<a2ui-surface
      data-surface-id=${id}
      .surfaceId=${id}
      .surface=${surface}
      .processor=${this.processor}
      .enableCustomElements=${true}
      @a2uiaction=${(e: v0_8.Events.StateEvent<"a2ui.action">) => this.action(id, e)}
    ></a2ui-surface>`)}`;
  }

  /** A button's action: the userAction with its context resolved against the data model. */
  private action(surfaceId: string, e: v0_8.Events.StateEvent<"a2ui.action">): void {
    const d = e.detail;
    const context: Record<string, unknown> = {};
    for (const item of d.action.context ?? []) {
      const v = item.value as Bound & { literalBoolean?: boolean };
      if (typeof v?.path === "string") {
        const path = this.processor.resolvePath(v.path, d.dataContextPath);
        const got = d.sourceComponent ? this.processor.getData(d.sourceComponent, path, surfaceId) : null;
        context[item.key] = got instanceof Map ? Object.fromEntries(got) : got;
      } else if (v && "literalBoolean" in v) context[item.key] = v.literalBoolean;
      else if (v && "literalNumber" in v) context[item.key] = v.literalNumber;
      else context[item.key] = v?.literalString ?? null;
    }
    const userAction = {
      name: d.action.name,
      surfaceId,
      sourceComponentId: d.sourceComponentId || (e.composedPath()[0] as HTMLElement)?.id || "",
      timestamp: new Date().toISOString(),
      context,
    };
    const sent = Number(document.body.dataset.actionsSent ?? 0) + 1;
    window.canvasd?.sendUserAction(userAction).then(
      () => { document.body.dataset.actionsSent = String(sent); },
      (err: Error) => { document.body.dataset.actionError = err.message; console.warn("canvasd A2UI: userAction", err); },
    );
  }
}
customElements.define("canvasd-a2ui", CanvasdA2UI);

// Palette custom properties the renderer's styles read (a surface's
// primaryColor replaces the primary ones inside it).
for (const [k, v] of Object.entries(palette)) document.documentElement.style.setProperty(k, v);

const page = document.querySelector("canvasd-a2ui") as CanvasdA2UI;

window.addEventListener("message", (e) => {
  if (e.source !== window.parent || !isMsg(e.data) || e.data.type !== "a2ui") return;
  const m = e.data as unknown as { reset: boolean; messages: unknown[] };
  page.apply(m.reset === true, Array.isArray(m.messages) ? m.messages : []);
});

// The agent can ask what the page holds (POST /api/invoke action "a2ui.state").
window.canvasd?.onInvoke("a2ui.state", () => Array.from(page.processor.getSurfaces().entries()).map(([id, s]) => ({
  surfaceId: id,
  root: s.rootComponentId,
  components: s.components.size,
  styles: s.styles,
  data: s.dataModel instanceof Map ? Object.fromEntries(s.dataModel) : s.dataModel,
})));
void TAG;
