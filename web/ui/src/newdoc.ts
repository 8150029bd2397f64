// "New document": a small dialog asking the document's name and language
// (the language follows the name's extension until the person picks one).

import { h } from "./dom";

/** The languages offered, as props.language (doc.ts's languageOf knows them all). */
export const LANGUAGES: [string, string][] = [
  ["markdown", "Markdown"], ["text", "Plain text"], ["python", "Python"], ["go", "Go"], ["javascript", "JavaScript"],
  ["typescript", "TypeScript"], ["json", "JSON"], ["yaml", "YAML"], ["html", "HTML"], ["css", "CSS"], ["sql", "SQL"],
  ["rust", "Rust"], ["java", "Java"], ["cpp", "C/C++"],
];

const BY_EXTENSION: Record<string, string> = {
  md: "markdown", markdown: "markdown", txt: "text", py: "python", go: "go", js: "javascript", mjs: "javascript", jsx: "javascript",
  ts: "typescript", tsx: "typescript", json: "json", yaml: "yaml", yml: "yaml", html: "html", htm: "html", css: "css", sql: "sql",
  rs: "rust", java: "java", c: "cpp", h: "cpp", cc: "cpp", cpp: "cpp", hpp: "cpp",
};

/** The language of a file name's extension, or "" when it has none known. */
export function languageOfName(name: string): string {
  const dot = name.lastIndexOf(".");
  return dot < 0 ? "" : BY_EXTENSION[name.slice(dot + 1).toLowerCase()] ?? "";
}

/** The first text of a new document in language lang named name. */
export function starterText(name: string, lang: string): string {
  const title = name.replace(/\.[^.]*$/, "") || name;
  return lang === "markdown" ? `# ${title.charAt(0).toUpperCase() + title.slice(1)}\n` : "";
}

export interface NewDoc { name: string; language: string }

/** notes.md, or notes-2.md, notes-3.md, ... when taken names it. */
export function freeName(taken: Set<string>): string {
  let name = "notes.md";
  for (let i = 2; taken.has(name); i++) name = `notes-${i}.md`;
  return name;
}

/** Asks the document's name (the default one not in taken) and language; null when the person cancels. */
export function askNewDoc(taken: Set<string> = new Set()): Promise<NewDoc | null> {
  return new Promise((resolve) => {
    const name = h("input", { id: "new-doc-name", type: "text", maxlength: 200, required: true, value: freeName(taken), spellcheck: "false" }) as HTMLInputElement;
    const lang = h("select", { id: "new-doc-language" }, ...LANGUAGES.map(([v, label]) => h("option", { value: v, text: label }))) as HTMLSelectElement;
    lang.value = "markdown";
    let picked = false; // the person chose a language: the name no longer decides it
    name.addEventListener("input", () => {
      const l = languageOfName(name.value.trim());
      if (!picked && l) lang.value = l;
    });
    lang.addEventListener("change", () => { picked = true; });
    let result: NewDoc | null = null;
    const dlg = h("dialog", { id: "new-doc-dialog" },
      h("form", { method: "dialog", autocomplete: "off", onsubmit: () => {
        const n = name.value.trim();
        if (n) result = { name: n, language: lang.value };
      } },
        h("h2", { text: "New document" }),
        h("label", { class: "field" }, h("span", { text: "Name" }), name),
        h("label", { class: "field" }, h("span", { text: "Language" }), lang),
        h("div", { class: "row buttons" },
          h("button", { type: "submit", id: "new-doc-create", text: "Create" }),
          h("button", { type: "button", id: "new-doc-cancel", text: "Cancel", onclick: () => dlg.close() })))) as HTMLDialogElement;
    dlg.addEventListener("close", () => {
      dlg.remove();
      resolve(result);
    });
    document.body.append(dlg);
    dlg.showModal();
    name.focus();
    name.setSelectionRange(0, name.value.lastIndexOf(".") > 0 ? name.value.lastIndexOf(".") : name.value.length); // the stem, ready to be typed over
  });
}

/** Asks before signing out; true when the person confirms. */
export function confirmSignOut(): Promise<boolean> {
  return new Promise((resolve) => {
    let ok = false;
    const dlg = h("dialog", { id: "signout-dialog" },
      h("form", { method: "dialog", onsubmit: () => { ok = true; } },
        h("h2", { text: "Sign out?" }),
        h("p", { text: "This browser forgets your token; you will need it (or another one) to sign in again." }),
        h("div", { class: "row buttons" },
          h("button", { type: "submit", id: "signout-confirm", text: "Sign out" }),
          h("button", { type: "button", id: "signout-cancel", text: "Cancel", onclick: () => dlg.close() })))) as HTMLDialogElement;
    dlg.addEventListener("close", () => {
      dlg.remove();
      resolve(ok);
    });
    document.body.append(dlg);
    dlg.showModal();
    (dlg.querySelector("#signout-cancel") as HTMLElement).focus();
  });
}
