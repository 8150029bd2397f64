// The runtime canvasd injects into every HTML page it serves in a host
// session's viewer (and into its built-in A2UI page). It runs first, in the
// page's own sandboxed, opaque origin, and:
//
//   - answers the host actions the agent sends through POST /api/invoke:
//     eval, the DOM helpers (dom.query, dom.all, dom.attr, dom.click,
//     dom.type, dom.wait) and snapshot (a PNG of what the page shows,
//     drawn from the DOM by modern-screenshot);
//   - gives the page the `canvasd` global: sendAgentMessage, onInvoke and
//     respondToInvoke. No token or capability is in its reach: each call is
//     a postMessage to the viewer, which makes the request with the
//     session's capability and returns the answer;
//   - keeps the page in its session: links and navigations to
//     canvasd://agent?message=... become agent runs (the viewer asks the
//     person unless the link carries a valid key), external links open in a
//     new browsing context without an opener (navigations that would leave
//     the session's files are refused by the viewer's policy);
//   - opened at the top level (not in a viewer), it moves to the viewer.

import { createContext, destroyContext, domToCanvas } from "modern-screenshot";
import { TAG, errorText, isMsg, toJSONValue, type InvokeMsg, type ToPage, type ToViewer, type Untagged } from "./protocol";

interface InvokeContext { invokeId: string; action: string }
type Handler = (payload: unknown, ctx: InvokeContext) => unknown;

/** The page-facing API (window.canvasd). */
export interface CanvasdBridge {
  /** The host session of this page. */
  readonly session: string;
  /** Sends prompt (and optionally an image as a data URL) to the agent of the session's canvas. */
  sendAgentMessage(prompt: string, options?: { imageData?: string; appletSlug?: string }): Promise<unknown>;
  /** Answers invokes of action with handler's value (or Promise); undefined: answer later with respondToInvoke. */
  onInvoke(action: string, handler: Handler): void;
  /** Answers invoke invokeId (an Error answers it as failed). */
  respondToInvoke(invokeId: string, result: unknown): void;
  /** Sends an A2UI v0.8 userAction of the session to its agent (what the built-in A2UI page's buttons do). */
  sendUserAction(userAction: Record<string, unknown>): Promise<unknown>;
}

declare global {
  interface Window { canvasd?: CanvasdBridge }
}

(() => {
  if (window.canvasd) return;
  const m = /^(\/host\/([^/]+)\/~[^/]+\/)(.*)$/.exec(location.pathname);
  if (!m) return; // not served under a page ticket: nothing to bridge
  const base = m[1], session = decodeURIComponent(m[2]), rest = m[3];
  const builtin = rest.startsWith("__canvas__/");
  const isA2UI = () => document.querySelector('meta[name="canvasd-a2ui"]') !== null;

  // Top level: this page belongs in its viewer (the server redirects
  // browsers that send Fetch Metadata; this covers the others).
  if (window.parent === window) {
    const page = builtin ? "" : rest + location.search + location.hash;
    location.replace(base + "__canvas__/" + (page ? "?page=" + encodeURIComponent(page) : ""));
    return;
  }

  let maxImageBytes = 10 << 20;
  let seq = 0;
  const calls = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  const handlers = new Map<string, Handler>();
  const open = new Set<string>(); // invokes waiting for respondToInvoke
  const early: InvokeMsg[] = []; // custom invokes that came before the page finished loading

  const post = (msg: Untagged<ToViewer>) => window.parent.postMessage({ ...msg, tag: TAG }, "*");
  const call = (method: "message" | "action" | "deeplink", args: Record<string, unknown>) =>
    new Promise<unknown>((resolve, reject) => {
      const id = ++seq;
      calls.set(id, { resolve, reject });
      post({ type: "call", id, method, args });
    });
  const answer = (invokeId: string, ok: boolean, value: unknown) => {
    open.delete(invokeId);
    post(ok ? { type: "answer", invokeId, ok, result: toJSONValue(value) } : { type: "answer", invokeId, ok, error: errorText(value) });
  };

  // ---- the canvasd global ----
  const dataURL = /^data:image\/(png|jpeg|gif|webp);base64,([A-Za-z0-9+/]*={0,2})$/i;
  const bridge: CanvasdBridge = {
    session,
    sendAgentMessage(prompt, options = {}) {
      if (typeof prompt !== "string") return Promise.reject(new TypeError("canvasd.sendAgentMessage: prompt must be a string"));
      const { imageData, appletSlug } = options ?? {};
      if (imageData !== undefined) {
        const mm = typeof imageData === "string" ? dataURL.exec(imageData) : null;
        if (!mm) {
          return Promise.reject(new TypeError("canvasd.sendAgentMessage: imageData must be a data:image/(png|jpeg|gif|webp);base64,... URL, e.g. canvas.toDataURL()"));
        }
        const b64 = mm[2];
        const bytes = Math.floor(b64.length / 4) * 3 - (b64.endsWith("==") ? 2 : b64.endsWith("=") ? 1 : 0);
        if (bytes > maxImageBytes) {
          return Promise.reject(new RangeError(`canvasd.sendAgentMessage: the image is ${bytes} bytes, over the limit of ${maxImageBytes} bytes; ` +
            "scale it down (a smaller canvas) or compress it (canvas.toDataURL('image/jpeg', 0.8))"));
        }
      }
      if (appletSlug !== undefined && typeof appletSlug !== "string") {
        return Promise.reject(new TypeError("canvasd.sendAgentMessage: appletSlug must be a string"));
      }
      return call("message", { prompt, imageData, appletSlug });
    },
    onInvoke(action, handler) {
      if (typeof action !== "string" || !action) throw new TypeError("canvasd.onInvoke: action must be a non-empty string");
      if (typeof handler !== "function") throw new TypeError("canvasd.onInvoke: handler must be a function");
      handlers.set(action, handler);
      for (const inv of early.splice(0)) dispatch(inv);
    },
    respondToInvoke(invokeId, result) {
      if (!open.has(invokeId)) throw new Error(`canvasd.respondToInvoke: invoke ${invokeId} is not waiting for an answer from this page`);
      if (result instanceof Error) answer(invokeId, false, result);
      else answer(invokeId, true, result);
    },
    sendUserAction(userAction) {
      if (!userAction || typeof userAction !== "object") return Promise.reject(new TypeError("canvasd.sendUserAction: userAction must be an object"));
      return call("action", { userAction });
    },
  };
  Object.defineProperty(window, "canvasd", { value: Object.freeze(bridge), writable: false, configurable: false });

  // ---- invokes ----
  function dispatch(inv: InvokeMsg): void {
    const builtinAction = hostActions[inv.action];
    if (builtinAction) {
      run(inv, () => builtinAction(inv.payload, inv.timeoutMs));
      return;
    }
    const h = handlers.get(inv.action);
    if (!h) {
      if (document.readyState !== "complete") {
        early.push(inv); // the page may register its handler while it loads
        return;
      }
      answer(inv.invokeId, false, `this page has no handler for action "${inv.action}" (canvasd.onInvoke); ` +
        `the host actions are ${Object.keys(hostActions).join(", ")}`);
      return;
    }
    open.add(inv.invokeId);
    let out: unknown;
    try {
      out = h(inv.payload, { invokeId: inv.invokeId, action: inv.action });
    } catch (err) {
      answer(inv.invokeId, false, err);
      return;
    }
    if (out === undefined) return; // answered later with respondToInvoke
    Promise.resolve(out).then((v) => open.has(inv.invokeId) && answer(inv.invokeId, true, v),
      (err) => open.has(inv.invokeId) && answer(inv.invokeId, false, err));
  }

  function run(inv: InvokeMsg, f: () => unknown): void {
    open.add(inv.invokeId);
    let out: unknown;
    try {
      out = f();
    } catch (err) {
      answer(inv.invokeId, false, err);
      return;
    }
    Promise.resolve(out).then((v) => answer(inv.invokeId, true, v), (err) => answer(inv.invokeId, false, err));
  }

  window.addEventListener("load", () => {
    for (const inv of early.splice(0)) dispatch(inv);
  });

  // ---- host actions ----
  const field = (payload: unknown, name: string): unknown => (payload && typeof payload === "object" ? (payload as Record<string, unknown>)[name] : undefined);
  const str = (payload: unknown, name: string, required = true): string => {
    const v = field(payload, name);
    if (typeof v === "string" && (v !== "" || !required)) return v;
    if (v === undefined && !required) return "";
    throw new Error(`payload.${name} must be a ${required ? "non-empty " : ""}string`);
  };

  /**
   * Elements matching selector in the document and in every open shadow
   * root (the A2UI page's components live in those). "A >>> B" pierces
   * shadow roots: B inside the elements A finds (their light and shadow
   * trees), e.g. "#submit >>> button".
   */
  function findAll(selector: string, limit = Infinity): Element[] {
    const parts = selector.split(">>>").map((p) => p.trim());
    for (const p of parts) {
      if (!p) throw new SyntaxError(`${JSON.stringify(selector)} is not a valid selector (an empty part around >>>)`);
      document.querySelector(p); // throws a SyntaxError for a bad selector, before any work
    }
    let scopes: (Document | Element)[] = [document];
    parts.forEach((part, i) => {
      const last = i === parts.length - 1;
      const found = new Set<Element>();
      for (const scope of scopes) {
        deepMatch(scope, part, found, last ? limit : Infinity, scope instanceof Element);
        if (found.size >= limit) break;
      }
      scopes = Array.from(found);
    });
    return scopes.slice(0, limit) as Element[];
  }

  /** Adds to out the elements matching selector under root and in every shadow root below it (and root's own, when withOwn). */
  function deepMatch(root: Document | Element | ShadowRoot, selector: string, out: Set<Element>, limit: number, withOwn: boolean): void {
    const visit = (r: Document | Element | ShadowRoot) => {
      for (const el of r.querySelectorAll(selector)) {
        if (out.size >= limit) return;
        out.add(el);
      }
      for (const el of r.querySelectorAll("*")) {
        if (out.size >= limit) return;
        if (el.shadowRoot) visit(el.shadowRoot);
      }
    };
    if (withOwn && root instanceof Element && root.shadowRoot) visit(root.shadowRoot);
    visit(root);
  }
  const findOne = (selector: string): Element | null => findAll(selector, 1)[0] ?? null;

  /** The text of el as shown, through shadow roots and their slots (innerText stops at a shadow root). */
  function textOf(el: Element): string {
    let shadow = false;
    const walk = (n: Node, out: string[]) => {
      if (n.nodeType === Node.TEXT_NODE) {
        out.push(n.nodeValue ?? "");
        return;
      }
      if (!(n instanceof Element) && !(n instanceof DocumentFragment)) return;
      if (n instanceof HTMLStyleElement || n instanceof HTMLScriptElement || n instanceof HTMLTemplateElement) return;
      if (n instanceof Element && n.shadowRoot) {
        shadow = true;
        walk(n.shadowRoot, out);
        return;
      }
      if (n instanceof HTMLSlotElement) {
        for (const a of n.assignedNodes({ flatten: true })) walk(a, out);
        return;
      }
      const block = n instanceof HTMLElement && /^(block|flex|grid|list-item|table)/.test(getComputedStyle(n).display);
      if (block) out.push("\n");
      for (const c of Array.from(n.childNodes)) walk(c, out);
      if (block) out.push("\n");
    };
    const parts: string[] = [];
    walk(el, parts);
    if (!shadow) return ((el as HTMLElement).innerText ?? el.textContent ?? "").trim();
    return parts.join("").replace(/[ \t\r\f]+/g, " ").replace(/ *\n[\n ]*/g, "\n").trim();
  }

  function describe(el: Element): Record<string, unknown> {
    const attributes: Record<string, string> = {};
    for (const a of Array.from(el.attributes)) attributes[a.name] = a.value;
    const d: Record<string, unknown> = {
      found: true,
      tag: el.tagName.toLowerCase(),
      text: textOf(el).slice(0, 10000),
      attributes,
    };
    if (el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement || el instanceof HTMLSelectElement) d.value = el.value;
    if (el instanceof HTMLInputElement && (el.type === "checkbox" || el.type === "radio")) d.checked = el.checked;
    const r = el.getBoundingClientRect();
    d.rect = { x: Math.round(r.x), y: Math.round(r.y), w: Math.round(r.width), h: Math.round(r.height) };
    return d;
  }

  function mustFind(selector: string): Element {
    const el = findOne(selector);
    if (!el) throw new Error(`no element matches ${JSON.stringify(selector)}`);
    return el;
  }

  /** Sets the value of an input as typing does, so frameworks that track the value setter see it. */
  function setValue(el: HTMLInputElement | HTMLTextAreaElement, value: string): void {
    const proto = el instanceof HTMLTextAreaElement ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
    const setter = Object.getOwnPropertyDescriptor(proto, "value")?.set;
    if (setter) setter.call(el, value);
    else el.value = value;
  }

  /**
   * Where the snapshot library learns each element's default style. It uses
   * an iframe of its own, which in a sandboxed page has another opaque
   * origin and cannot be read; an unstyled shadow root of this document
   * stands in for it (the page's style sheets do not reach into it, and its
   * host resets every inherited property).
   */
  function styleDefaults(): { host: HTMLElement; sandbox: HTMLIFrameElement } {
    const host = document.createElement("canvasd-style-defaults");
    host.style.cssText = "all: initial; position: fixed; left: -10px; top: -10px; width: 0; height: 0; overflow: hidden; visibility: hidden";
    const root = host.attachShadow({ mode: "open" });
    document.documentElement.append(host);
    const fake = {
      contentWindow: {
        document: {
          createElement: (name: string) => document.createElement(name),
          createElementNS: (ns: string, name: string) => document.createElementNS(ns, name),
          body: root,
        },
        getComputedStyle: (el: Element, pseudo?: string | null) => getComputedStyle(el, pseudo),
      },
      remove: () => host.remove(),
    };
    return { host, sandbox: fake as unknown as HTMLIFrameElement };
  }

  const hostActions: Record<string, (payload: unknown, timeoutMs: number) => unknown> = {
    eval(payload) {
      const js = typeof payload === "string" ? payload : str(payload, "js");
      return (0, eval)(js);
    },
    "dom.query"(payload) {
      const el = findOne(str(payload, "selector"));
      return el ? describe(el) : { found: false };
    },
    "dom.all"(payload) {
      const lim = field(payload, "limit");
      const limit = typeof lim === "number" && lim > 0 ? Math.min(lim, 1000) : 200;
      const all = findAll(str(payload, "selector"));
      return { count: all.length, elements: all.slice(0, limit).map(describe) };
    },
    "dom.attr"(payload) {
      const el = findOne(str(payload, "selector"));
      const name = str(payload, "name");
      return el ? { found: true, name, value: el.getAttribute(name) } : { found: false, name, value: null };
    },
    "dom.click"(payload) {
      const el = mustFind(str(payload, "selector"));
      if (el instanceof HTMLElement) {
        el.scrollIntoView({ block: "nearest", inline: "nearest" });
        el.focus?.();
        el.click();
      } else {
        el.dispatchEvent(new MouseEvent("click", { bubbles: true, cancelable: true, composed: true, view: window }));
      }
      return { clicked: true, ...describe(el) };
    },
    "dom.type"(payload) {
      const el = mustFind(str(payload, "selector"));
      const text = str(payload, "text", false);
      const clear = field(payload, "clear") === true;
      if (el instanceof HTMLElement) el.focus();
      if (el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement) {
        setValue(el, (clear ? "" : el.value) + text);
        el.dispatchEvent(new InputEvent("input", { bubbles: true, composed: true, inputType: "insertText", data: text }));
        el.dispatchEvent(new Event("change", { bubbles: true }));
      } else if (el instanceof HTMLElement && el.isContentEditable) {
        if (clear) el.textContent = "";
        document.execCommand("insertText", false, text);
      } else {
        throw new Error("the element is not an input, a textarea or editable content");
      }
      return { typed: text, ...describe(el) };
    },
    "dom.wait"(payload, timeoutMs) {
      const selector = str(payload, "selector");
      const t = field(payload, "timeout_ms");
      const limit = Math.max(0, Math.min(typeof t === "number" ? t : 5000, Math.max(timeoutMs - 200, 0)));
      const t0 = performance.now();
      const done = (el: Element | null) => (el ? { ...describe(el), waited_ms: Math.round(performance.now() - t0) } : { found: false, waited_ms: Math.round(performance.now() - t0) });
      const now = findOne(selector);
      if (now) return done(now);
      return new Promise((resolve) => {
        const obs = new MutationObserver(() => {
          const el = findOne(selector);
          if (el) finish(el);
        });
        const timer = setTimeout(() => finish(null), limit);
        const finish = (el: Element | null) => {
          obs.disconnect();
          clearTimeout(timer);
          resolve(done(el));
        };
        obs.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
      });
    },
    async snapshot(payload) {
      const num = (name: string) => {
        const v = field(payload, name);
        return typeof v === "number" && v > 0 ? v : Infinity;
      };
      const w = document.documentElement.clientWidth || innerWidth, h = document.documentElement.clientHeight || innerHeight;
      const scale = Math.min(1, num("max_w") / w, num("max_h") / h);
      const bg = getComputedStyle(document.body || document.documentElement).backgroundColor;
      const defaults = styleDefaults();
      const context = await createContext(document.documentElement, {
        width: w,
        height: h,
        scale,
        backgroundColor: bg && bg !== "rgba(0, 0, 0, 0)" ? bg : "#ffffff",
        style: scrollX || scrollY ? { transform: `translate(${-scrollX}px, ${-scrollY}px)` } : null,
        timeout: 10000,
        filter: (n) => !(n instanceof HTMLScriptElement) && n !== defaults.host,
        autoDestruct: false,
      });
      context.sandbox = defaults.sandbox;
      let canvas: HTMLCanvasElement;
      try {
        canvas = await domToCanvas(context);
      } finally {
        destroyContext(context);
      }
      const dataUrl = canvas.toDataURL("image/png");
      const b64 = dataUrl.slice(dataUrl.indexOf(",") + 1);
      const bytes = Math.floor(b64.length / 4) * 3 - (b64.endsWith("==") ? 2 : b64.endsWith("=") ? 1 : 0);
      return { image: { mime: "image/png", dataUrl, bytes }, width: canvas.width, height: canvas.height };
    },
  };

  // ---- messages from the viewer ----
  window.addEventListener("message", (e) => {
    if (e.source !== window.parent || !isMsg(e.data)) return;
    const msg = e.data as ToPage;
    switch (msg.type) {
      case "hello":
        if (typeof msg.maxImageBytes === "number" && msg.maxImageBytes > 0) maxImageBytes = msg.maxImageBytes;
        break;
      case "invoke":
        dispatch(msg);
        break;
      case "reply": {
        const c = calls.get(msg.id);
        if (!c) return;
        calls.delete(msg.id);
        if (msg.ok) c.resolve(msg.result);
        else c.reject(new Error(msg.error || "the request failed"));
        break;
      }
    }
  });

  // ---- staying in the session ----
  type Kind = "inside" | "agent" | "external" | "blocked";
  function kindOf(raw: string): [Kind, URL | null] {
    let u: URL;
    try {
      u = new URL(raw, location.href);
    } catch {
      return ["blocked", null];
    }
    if (u.protocol === "canvasd:") return ["agent", u];
    if (u.origin === location.origin && u.pathname === base + "__canvas__/agent.html") return ["agent", new URL("canvasd://agent" + u.search)];
    if (u.origin === location.origin && u.pathname.startsWith(base)) return ["inside", u];
    if (u.protocol === "http:" || u.protocol === "https:" || u.protocol === "mailto:") return ["external", u];
    if (u.protocol === "javascript:" || u.href === "about:blank") return ["inside", u];
    return ["blocked", u];
  }
  const openOutside = (u: URL) => window.open(u.href, "_blank", "noopener,noreferrer");

  window.addEventListener("click", (e) => {
    if (e.defaultPrevented || e.button !== 0) return;
    const a = (e.composedPath().find((n) => n instanceof HTMLAnchorElement || n instanceof HTMLAreaElement) ?? null) as HTMLAnchorElement | HTMLAreaElement | null;
    if (!a || !a.hasAttribute("href") || a.hasAttribute("download")) return;
    const [kind, u] = kindOf(a.getAttribute("href") ?? "");
    if (kind === "inside" || !u) return;
    e.preventDefault();
    if (kind === "agent") call("deeplink", { url: u.href }).catch(() => {});
    else if (kind === "external") openOutside(u);
  });

  // location.href = "canvasd://agent?..." cannot be seen from script in an
  // opaque origin (the Navigation API is off there): the server rewrites
  // canvasd://agent in the session's HTML and scripts to its agent-link
  // page (__canvas__/agent.html), where this runtime hands the link to the
  // viewer, which then shows the page again. Other navigations out of the
  // session are refused by the viewer's frame-src policy.
  if (rest === "__canvas__/agent.html") {
    const go = () => call("deeplink", { url: "canvasd://agent" + location.search, restore: true }).catch(() => {});
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", go, { once: true });
    else go();
  }

  const ready = () => post({ type: "ready", href: location.href, title: document.title, a2ui: isA2UI() });
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", ready, { once: true });
  else ready();
})();
