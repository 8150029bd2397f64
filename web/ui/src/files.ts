// Files in and out of the open canvas, through the server (docs/files.md):
// Export (PNG, SVG drawn by the server; .excalidraw, JSON Canvas written by
// it) and Import (a JSON Canvas, .excalidraw or Mermaid file, merged into
// the canvas or replacing it), from Excalidraw's main menu, and by
// dropping such a file on the canvas. Excalidraw's own export and file
// loading stay off: the page's Content-Security-Policy refuses its SVG
// copy, and its drop of an .excalidraw file would merge the scene into the
// page alone.

import { createElement, type ReactElement } from "react";
import { MainMenu } from "@excalidraw/excalidraw";
import type { CanvasClient } from "@canvasd/client";
import { h, toast, why } from "./dom";

type ImportFormat = "jsoncanvas" | "excalidraw" | "mermaid";
type ExportFormat = "png" | "svg" | "excalidraw" | "jsoncanvas";

const EXTENSION: Record<ExportFormat, string> = { png: "png", svg: "svg", excalidraw: "excalidraw", jsoncanvas: "canvas" };

/** The import format of a file name, or "" for none (the drop is left to Excalidraw). */
export function importFormatOf(name: string): ImportFormat | "" {
  const ext = name.toLowerCase().split(".").pop() ?? "";
  if (ext === "canvas") return "jsoncanvas";
  if (ext === "excalidraw") return "excalidraw";
  if (ext === "mmd" || ext === "mermaid") return "mermaid";
  return "";
}

export class Files {
  private input: HTMLInputElement;
  private dialog: HTMLDialogElement;
  private choice: ((mode: "merge" | "replace" | "") => void) | null = null;

  constructor(private client: CanvasClient, private canvasId: () => string, stage: HTMLElement) {
    this.input = h("input", { id: "files-input", type: "file", accept: ".canvas,.excalidraw,.mmd,.mermaid", hidden: true,
      onchange: () => {
        const f = this.input.files?.[0];
        this.input.value = "";
        if (f) void this.importFile(f);
      } }) as HTMLInputElement;
    const name = h("b", { id: "files-import-name" });
    this.dialog = h("dialog", { id: "files-import" },
      h("form", { method: "dialog" },
        h("h2", { text: "Import a file" }),
        h("p", {}, "Put ", name, " on this canvas:"),
        h("div", { class: "buttons" },
          h("button", { type: "button", id: "files-merge", text: "Merge into the canvas", title: "Add the file's shapes; those with the same ids are replaced",
            onclick: () => this.choose("merge") }),
          h("button", { type: "button", id: "files-replace", text: "Replace the canvas", title: "Delete everything else on the canvas (one revision: Undo brings it back)",
            onclick: () => this.choose("replace") }),
          h("button", { type: "button", id: "files-cancel", text: "Cancel", onclick: () => this.choose("") })))) as HTMLDialogElement;
    this.dialog.addEventListener("close", () => this.choose(""));
    document.body.append(this.input, this.dialog);
    // A dropped .canvas, .excalidraw or .mmd file is imported; other drops
    // (images) go on to Excalidraw.
    stage.addEventListener("drop", (ev: DragEvent) => {
      const f = ev.dataTransfer?.files?.[0];
      if (!f || !importFormatOf(f.name) || !this.canvasId()) return;
      ev.preventDefault();
      ev.stopPropagation();
      void this.importFile(f);
    }, true);
  }

  /** Excalidraw's main menu: Export and Import first, then the default items the page keeps. */
  menu(): ReactElement {
    const M: any = MainMenu;
    const item = (id: string, label: string, onSelect: () => void) =>
      createElement(M.Item, { key: id, "data-testid": id, onSelect }, label);
    return createElement(M, null,
      createElement(M.Group, { key: "export", title: "Export (drawn by the server)" },
        item("export-png", "Export as PNG", () => void this.exportAs("png")),
        item("export-svg", "Export as SVG", () => void this.exportAs("svg")),
        item("export-excalidraw", "Export as .excalidraw", () => void this.exportAs("excalidraw")),
        item("export-jsoncanvas", "Export as JSON Canvas", () => void this.exportAs("jsoncanvas"))),
      item("import-file", "Import a file…", () => this.input.click()),
      createElement(M.Separator, { key: "sep" }),
      createElement(M.DefaultItems.Help, { key: "help" }),
      createElement(M.DefaultItems.ClearCanvas, { key: "clear" }),
      createElement(M.DefaultItems.ChangeCanvasBackground, { key: "bg" }));
  }

  /** Downloads the open canvas in format, as the server draws or writes it. */
  async exportAs(format: ExportFormat): Promise<void> {
    const id = this.canvasId();
    if (!id) return;
    try {
      const x = await this.client.exportCanvas(id, { format });
      const url = URL.createObjectURL(new Blob([x.data as BlobPart], { type: x.contentType }));
      const a = h("a", { href: url, download: `${id}.${EXTENSION[format]}`, hidden: true }) as HTMLAnchorElement;
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
      document.body.dataset.exported = `${format}@${x.rev}`;
    } catch (err) {
      toast(`Export failed: ${why(err)}`);
    }
  }

  /** Asks merge or replace, then imports file into the open canvas. */
  async importFile(file: File): Promise<void> {
    const id = this.canvasId();
    const format = importFormatOf(file.name);
    if (!id || !format) {
      toast(`${file.name}: import takes a .canvas (JSON Canvas), .excalidraw or .mmd (Mermaid) file`);
      return;
    }
    (this.dialog.querySelector("#files-import-name") as HTMLElement).textContent = file.name;
    const mode = await new Promise<"merge" | "replace" | "">((resolve) => {
      this.choice = resolve;
      this.dialog.showModal();
    });
    if (!mode) return;
    try {
      const r = await this.client.importFile(id, await file.text(), { format, mode });
      toast(`Imported ${file.name}: ${r.createdIds.length} shapes and arrows (revision ${r.rev})`);
      document.body.dataset.imported = `${file.name}@${r.rev}`;
    } catch (err) {
      toast(`Import of ${file.name} failed: ${why(err)}`);
      document.body.dataset.importError = why(err);
    }
  }

  private choose(mode: "merge" | "replace" | ""): void {
    const c = this.choice;
    this.choice = null;
    if (this.dialog.open) this.dialog.close();
    c?.(mode);
  }
}
