// Small DOM helpers. User text reaches the page only as text (textContent,
// attributes): data is never parsed as HTML.

type Child = Node | string | null | undefined | false;

/** Creates an element; attrs "class" and "text" are special, on* are listeners. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs?: Record<string, any> | null, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "text") el.textContent = v;
    else if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) if (c) el.append(c);
  return el;
}

export const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;

/** Shows a short message at the bottom of the page. */
export function toast(msg: string, kind: "" | "warn" | "bad" | "ok" = "", ms = 5000): HTMLElement {
  let box = document.getElementById("toasts");
  if (!box) document.body.append((box = h("div", { id: "toasts", "aria-live": "polite" })));
  const el = h("div", { class: "toast " + kind, role: "status", text: msg });
  box.append(el);
  if (ms > 0) setTimeout(() => el.remove(), ms);
  return el;
}

/** A stable colour per actor. */
export function actorColor(id: string): string {
  let x = 0;
  for (const ch of id) x = (x * 31 + ch.charCodeAt(0)) >>> 0;
  return `hsl(${x % 360} 70% 45%)`;
}

/** What went wrong, for a person: a problem document's detail, or the error's message. */
export function why(err: unknown): string {
  const e = err as { problem?: { detail?: string; title?: string }; message?: string };
  return e?.problem?.detail || e?.problem?.title || e?.message || String(err);
}
