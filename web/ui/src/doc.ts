// A document node in a CodeMirror 6 panel. The user's edits become minimal
// line commands (replace_lines, insert_lines, delete_lines) with base_rev;
// edits of others arriving meanwhile are merged under the user's unsent
// ones. The panel also holds the diff viewer (unified or side by side,
// against a named snapshot or any revision), the version timeline with its
// named snapshots, snapshot creation and restore, the server's per-actor
// undo/redo, highlights of lines others changed recently, and "Add to Chat".

import { Compartment, EditorState, StateEffect, StateField, ChangeSet, RangeSetBuilder, Text, type Extension } from "@codemirror/state";
import { EditorView, Decoration, lineNumbers, highlightActiveLine, highlightActiveLineGutter, keymap, drawSelection, type DecorationSet } from "@codemirror/view";
import { defaultKeymap } from "@codemirror/commands";
import { syntaxHighlighting, defaultHighlightStyle, bracketMatching, indentOnInput } from "@codemirror/language";
import { docEdit, splitLines, type ApplyResult, type CanvasClient, type CanvasModel, type Commit } from "@canvasd/client";
import { actorColor, h, toast, why } from "./dom";
import { newCmdId, sendCommand, type Outbox } from "./outbox";

/**
 * The CodeMirror language for a document's props.language. The grammars are
 * loaded when a document needs one (code-split chunks): the page opens
 * without parsing them.
 */
export async function languageOf(lang: string): Promise<Extension> {
  switch (lang.toLowerCase()) {
    case "js": case "javascript": case "mjs": return (await import("@codemirror/lang-javascript")).javascript();
    case "jsx": return (await import("@codemirror/lang-javascript")).javascript({ jsx: true });
    case "ts": case "typescript": return (await import("@codemirror/lang-javascript")).javascript({ typescript: true });
    case "tsx": return (await import("@codemirror/lang-javascript")).javascript({ typescript: true, jsx: true });
    case "py": case "python": return (await import("@codemirror/lang-python")).python();
    case "go": case "golang": return (await import("@codemirror/lang-go")).go();
    case "md": case "markdown": return (await import("@codemirror/lang-markdown")).markdown();
    case "json": return (await import("@codemirror/lang-json")).json();
    case "css": return (await import("@codemirror/lang-css")).css();
    case "html": case "htm": return (await import("@codemirror/lang-html")).html();
    case "sql": return (await import("@codemirror/lang-sql")).sql();
    case "yaml": case "yml": return (await import("@codemirror/lang-yaml")).yaml();
    case "rs": case "rust": return (await import("@codemirror/lang-rust")).rust();
    case "c": case "cpp": case "c++": case "h": case "hpp": return (await import("@codemirror/lang-cpp")).cpp();
    case "java": return (await import("@codemirror/lang-java")).java();
  }
  return [];
}

/** The change from a to b as one replaced range (common prefix and suffix kept). */
function textChange(a: string, b: string): { from: number; to: number; insert: string } | null {
  if (a === b) return null;
  let p = 0;
  while (p < a.length && p < b.length && a[p] === b[p]) p++;
  let s = 0;
  while (s < a.length - p && s < b.length - p && a[a.length - 1 - s] === b[b.length - 1 - s]) s++;
  return { from: p, to: a.length - s, insert: b.slice(p, b.length - s) };
}

/**
 * The changes from a to b as ranges of a, found line by line (Myers' diff:
 * the fewest lines removed and added) and narrowed to the characters that
 * differ, so that edits in separate places stay separate; one range when the
 * texts differ in more than maxD lines.
 */
function lineChanges(a: string, b: string, maxD = 500): { from: number; to: number; insert: string }[] {
  if (a === b) return [];
  const al = splitLines(a), bl = splitLines(b), n = al.length, m = bl.length;
  const max = Math.min(n + m, maxD), off = max + 1;
  const v = new Int32Array(2 * max + 3); // the furthest x on each diagonal k (at off + k)
  const trace: Int32Array[] = [];
  let found = -1;
  search: for (let d = 0; d <= max; d++) {
    trace.push(v.slice());
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[off + k - 1]! < v[off + k + 1]!) ? v[off + k + 1]! : v[off + k - 1]! + 1;
      let y = x - k;
      while (x < n && y < m && al[x] === bl[y]) { x++; y++; }
      v[off + k] = x;
      if (x >= n && y >= m) { found = d; break search; }
    }
  }
  if (found < 0) return [textChange(a, b)!];
  // Back from the end: each step removes a line of a or adds one of b.
  const steps: { at: number; add?: string }[] = [];
  let x = n, y = m;
  for (let d = found; d > 0; d--) {
    const vd = trace[d]!, k = x - y;
    const pk = k === -d || (k !== d && vd[off + k - 1]! < vd[off + k + 1]!) ? k + 1 : k - 1;
    const px = vd[off + pk]!, py = px - pk;
    while (x > px && y > py) { x--; y--; }
    steps.push(x === px ? { at: px, add: bl[py]! } : { at: px });
    x = px; y = py;
  }
  steps.reverse();
  const offs = [0];
  for (const l of al) offs.push(offs[offs.length - 1]! + l.length);
  const hunks: { from: number; to: number; add: string[] }[] = [];
  for (const st of steps) {
    const h = hunks[hunks.length - 1];
    if (h && st.at === h.to) {
      if (st.add === undefined) h.to++;
      else h.add.push(st.add);
    } else hunks.push({ from: st.at, to: st.at + (st.add === undefined ? 1 : 0), add: st.add === undefined ? [] : [st.add] });
  }
  // Each hunk narrowed to the characters that differ: an edit inside a line
  // leaves the rest of the line to a concurrent edit of it.
  return hunks.flatMap((h) => {
    const from = offs[h.from]!, c = textChange(a.slice(from, offs[h.to]!), h.add.join(""));
    return c ? [{ from: from + c.from, to: from + c.to, insert: c.insert }] : [];
  });
}

/**
 * The change base → next, made to apply to text (base with edits of its
 * own, each kept where it was: lineChanges): as a ChangeSet over text, or
 * null when next is base.
 */
function rebaseChange(base: string, next: string, text: string): ChangeSet | null {
  const remote = textChange(base, next);
  if (!remote) return null;
  const theirs = ChangeSet.of([remote], base.length);
  const mine = lineChanges(base, text);
  return mine.length ? theirs.map(ChangeSet.of(mine, base.length)) : theirs;
}

/** text with the change base → next merged under its own edits. */
function rebase(base: string, next: string, text: string): string {
  const cs = rebaseChange(base, next, text);
  return cs ? cs.apply(Text.of(text.split("\n"))).toString() : text;
}

/** The text as the editor holds it: CodeMirror hands lines back joined by "\n". */
const asEditor = (text: string) => text.replace(/\r\n/g, "\n");

// Lines others changed recently: a line decoration per changed line, mapped through edits.
const markLines = StateEffect.define<{ lines: number[]; actor: string }>();
const clearMarks = StateEffect.define<null>();
const recentField = StateField.define<DecorationSet>({
  create: () => Decoration.none,
  update(deco, tr) {
    deco = deco.map(tr.changes);
    for (const e of tr.effects) {
      if (e.is(clearMarks)) deco = Decoration.none;
      if (e.is(markLines)) {
        const b = new RangeSetBuilder<Decoration>();
        const doc = tr.state.doc;
        const add = new Set(e.value.lines.filter((l) => l >= 1 && l <= doc.lines));
        const marks: { from: number; d: Decoration }[] = [];
        deco.between(0, doc.length, (from, _to, d) => { marks.push({ from, d }); });
        for (const l of add) marks.push({ from: doc.line(l).from, d: Decoration.line({ class: "cm-recent", attributes: { "data-by": e.value.actor, style: `--by: ${actorColor(e.value.actor)}` } }) });
        marks.sort((x, y) => x.from - y.from);
        let last = -1;
        for (const m of marks) if (m.from !== last) { b.add(m.from, m.from, m.d); last = m.from; }
        deco = b.finish();
      }
    }
    return deco;
  },
  provide: (f) => EditorView.decorations.from(f),
});

/**
 * A Markdown list continued by Enter (lang-markdown's keymap puts "- " on
 * the new line): a person used to typing the marker types "- " again, which
 * made "- - item" (and Enter after that a nested "  - "). The field holds
 * the cursor's position right after a marker Enter put there (else -1); the
 * marker's first character typed there replaces the marker put, so the
 * line reads as the person typed it.
 */
const MARKER_BEFORE = /^(\s*)([-*+]|\d+[.)]) $/;
const autoMarker = StateField.define<number>({
  create: () => -1,
  update(at, tr) {
    if (!tr.docChanged) return tr.selection ? -1 : at;
    let inserted = "";
    tr.changes.iterChanges((_a, _b, _c, _d, ins) => { inserted += ins.toString(); });
    const head = tr.state.selection.main, line = tr.state.doc.lineAt(head.head);
    return tr.isUserEvent("input") && head.empty && head.head === line.to && inserted.includes("\n") && MARKER_BEFORE.test(line.text) ? head.head : -1;
  },
});
const typedMarker = EditorView.inputHandler.of((view, from, to, text) => {
  if (from !== to || from !== view.state.field(autoMarker)) return false;
  const line = view.state.doc.lineAt(from), m = MARKER_BEFORE.exec(line.text);
  if (!m || text !== m[2]![0]) return false;
  const start = line.from + m[1]!.length;
  view.dispatch({ changes: { from: start, to: from, insert: text }, selection: { anchor: start + text.length }, userEvent: "input.type" });
  return true;
});

/**
 * An edit sent and not yet seen in the model: the editor text it makes
 * (result), the server's text it was sent against (base, as the editor
 * holds it), its revision once answered, and settled once it was answered
 * or refused.
 */
interface Sent {
  result: string;
  base: string;
  rev?: number;
  settled: Promise<void>;
}

export class DocPanel {
  el: HTMLElement;
  nodeId = "";
  private view: EditorView | null = null;
  private language = new Compartment(); // the document's language, loaded after the editor opens
  private raw = ""; // the document's text as of the last sync with the model, as the server has it
  /** The edit sent and not yet seen in the model (see Sent). */
  private inflight: Sent | null = null;
  private gen = 0; // moves when the panel opens or closes a document: an answer for an earlier one is dropped
  private timer = 0;
  private fading = 0;
  private refreshing = 0; // the history's refresh after commits on the document, coalesced
  private sideAsked = 0; // moves with each view asked of the side pane: an answer for an earlier one is dropped
  private body: HTMLElement;
  private side: HTMLElement;
  private title: HTMLElement;
  /** "Add to Chat": a formatted selection for the agent panel. */
  onAddToChat: (text: string) => void = () => {};
  onClose: () => void = () => {};

  /**
   * mine holds the ids of the commands this page sent (shared with the
   * canvas view): their commits are not "changed by others".
   */
  constructor(private client: CanvasClient, private canvasId: () => string, private model: () => CanvasModel | null, private me: () => string,
    private mine: Set<string>, private caughtUp: (rev: number) => Promise<void>, private outbox: Outbox) {
    this.title = h("span", { class: "doc-title" });
    const btn = (id: string, text: string, title: string, fn: () => void) => h("button", { type: "button", id, text, title, onclick: fn });
    this.body = h("div", { class: "doc-editor" });
    this.side = h("div", { class: "doc-side" });
    this.el = h("section", { id: "doc-panel", hidden: true },
      h("header", { class: "doc-bar" }, this.title,
        btn("doc-undo", "Undo", "Undo your last change on this canvas (the server's history)", () => this.history("undo")),
        btn("doc-redo", "Redo", "Redo what you undid", () => this.history("redo")),
        btn("doc-snapshot", "Snapshot", "Save a named snapshot of this revision", () => this.snapshotForm()),
        btn("doc-timeline", "History", "Revisions of this document and named snapshots", () => this.timeline()),
        btn("doc-diff", "Diff", "Changes since the last snapshot", () => this.diff("", "unified")),
        btn("doc-add-chat", "Add to Chat", "Send the selected lines to the agent panel", () => this.addToChat()),
        btn("doc-close", "×", "Close", () => this.close())),
      h("div", { class: "doc-main" }, this.body, this.side));
  }

  /** Opens node id (a doc) of the current model. */
  open(id: string): void {
    const m = this.model();
    const n = m?.nodes.get(id);
    if (!m || !n || n.type !== "doc") {
      toast(`no document ${id} on this canvas`, "warn");
      return;
    }
    this.leave(); // the unsent edit of the document open until now
    this.gen++;
    this.nodeId = id;
    this.raw = String(n.props?.text ?? "");
    this.inflight = null;
    this.title.textContent = `${n.name || id}${n.props?.language ? " · " + n.props?.language : ""}`;
    this.title.title = this.title.textContent; // the whole of it, should the panel be narrower still
    this.el.hidden = false;
    this.el.dataset.nodeId = id;
    this.side.replaceChildren();
    this.side.dataset.view = "";
    this.view?.destroy();
    this.view = new EditorView({
      parent: this.body,
      state: EditorState.create({
        doc: this.server,
        extensions: [lineNumbers(), highlightActiveLineGutter(), highlightActiveLine(), drawSelection(), bracketMatching(), indentOnInput(),
          syntaxHighlighting(defaultHighlightStyle, { fallback: true }), this.language.of([]), recentField, autoMarker, typedMarker,
          EditorView.lineWrapping, // a long line wraps in the panel: no sideways scrolling to read it
          keymap.of([{ key: "Mod-z", run: () => { this.history("undo"); return true; } }, { key: "Mod-y", run: () => { this.history("redo"); return true; } },
            { key: "Mod-Shift-z", run: () => { this.history("redo"); return true; } }, ...defaultKeymap]),
          EditorView.updateListener.of((u) => { if (u.docChanged && u.transactions.some((t) => t.isUserEvent("input") || t.isUserEvent("delete") || t.isUserEvent("undo") || t.isUserEvent("move") || t.isUserEvent("paste"))) this.schedule(); }),
          EditorView.theme({ "&": { height: "100%" }, ".cm-scroller": { fontFamily: "ui-monospace, SFMono-Regular, Menlo, monospace", fontSize: "13px" } })],
      }),
    });
    const view = this.view;
    languageOf(String(n.props?.language || "")).then((ext) => {
      if (this.view === view) view.dispatch({ effects: this.language.reconfigure(ext) });
    }, (err) => toast(`no highlighting: ${why(err)}`, "warn"));
    const u = new URL(location.href);
    u.searchParams.set("doc", id);
    history.replaceState(null, "", u.pathname + u.search + u.hash);
  }

  close(): void {
    this.leave();
    this.gen++;
    this.inflight = null;
    this.view?.destroy();
    this.view = null;
    this.nodeId = "";
    this.el.hidden = true;
    const u = new URL(location.href);
    u.searchParams.delete("doc");
    history.replaceState(null, "", u.pathname + u.search + u.hash);
    this.onClose();
  }

  /** The editor's text (for tests and Add to Chat). */
  text(): string {
    return this.view ? this.view.state.doc.toString() : "";
  }

  /**
   * Sends what the user typed in the open document and has not sent: at
   * once, or, behind an edit still on its way, once that one is settled
   * (sendLeft). Call it before the panel leaves the document.
   */
  private leave(): void {
    if (!this.view) return;
    const text = this.view.state.doc.toString();
    if (!this.inflight) void this.flush();
    else if (text !== this.inflight.result) void this.sendLeft(this.canvasId(), this.nodeId, this.inflight, text);
  }

  /**
   * Sends text, what the user made of document nodeId (of canvas cid)
   * behind the edit sent, once sent is settled: merged with what others
   * changed since, against the document as the server has it then.
   */
  private async sendLeft(cid: string, nodeId: string, sent: Sent, text: string): Promise<void> {
    await sent.settled;
    const done = this.outbox.enqueue();
    try {
      const n = (await this.outbox.deliver(() => this.client.getState(cid))).state.nodes.find((x) => x.id === nodeId);
      if (!n) throw new Error("the document was deleted");
      const raw = String(n.props?.text ?? "");
      // What the server had when the user's edit left the editor: the sent edit's text once applied, else the text it was sent against.
      const base = sent.rev !== undefined ? sent.result : sent.base;
      const c = docEdit(nodeId, raw, rebase(base, asEditor(raw), text));
      if (!c) return;
      const id = newCmdId();
      this.mine.add(id);
      await this.outbox.deliver(() => this.client.applyResult(cid, c.type, c.args, { cmdId: id, idempotencyKey: id }));
    } catch (err) {
      toast(`your last edit of ${nodeId} was not saved: ${why(err)}`, "bad", 8000);
    } finally {
      done();
    }
  }

  private schedule(): void {
    clearTimeout(this.timer);
    this.timer = window.setTimeout(() => this.flush(), 350);
  }

  /**
   * Sends the editor's unsent change as one command (docEdit: a line command
   * where it can be one), one at a time. A 409 waits for the commits it
   * missed, which merge under the edit, and sends again; any other refusal
   * puts the server's text back in the editor.
   */
  private async flush(): Promise<void> {
    clearTimeout(this.timer);
    if (!this.view || !this.model() || this.inflight) return;
    const local = this.view.state.doc.toString();
    const c = docEdit(this.nodeId, this.raw, local);
    if (!c) return;
    let settle = () => {};
    const gen = this.gen, sent: Sent = { result: local, base: this.server, settled: new Promise<void>((r) => (settle = r)) };
    this.inflight = sent;
    let rev = 0;
    try {
      rev = sent.rev = (await this.send(c.type, c.args)).rev;
    } catch (err: any) {
      if (this.gen !== gen) return;
      this.inflight = null;
      if (err?.status !== 409) {
        toast(`${c.type} was refused: ${why(err)}; the editor shows the server's text again`, "bad", 8000);
        this.sync();
        if (this.view) this.view.dispatch({ changes: textChange(this.view.state.doc.toString(), this.server) ?? [], userEvent: "remote" });
        return;
      }
      toast("the document changed meanwhile: your edit is merged and sent again", "warn");
      rev = err.currentRev;
    } finally {
      settle();
    }
    // Its commit (or the ones a 409 missed) reaches the model on the stream: sync then, and send what is left.
    await this.caughtUp(rev);
    if (this.gen !== gen) return;
    this.sync();
    if (this.view && docEdit(this.nodeId, this.raw, this.view.state.doc.toString())) this.schedule();
  }

  /**
   * Brings the editor up to the model's text: what changed since the last
   * sync is merged under the user's unsent edits. The edit in flight is
   * already in the editor, so once the model holds it (its revision reached)
   * the change is taken from the text it made, not merged again; until its
   * answer gives that revision, syncing waits. Call it when the model moved:
   * a commit on the document, or a snapshot read anew.
   */
  sync(): boolean {
    const m = this.model();
    if (!this.view || !this.nodeId || !m) return false;
    if (this.inflight && this.inflight.rev === undefined) return false;
    const n = m.nodes.get(this.nodeId);
    if (!n) {
      toast("this document was deleted", "warn");
      this.view.destroy(); // its unsent edit has no document to go to
      this.view = null;
      this.close();
      return false;
    }
    const raw = String(n.props?.text ?? ""), next = asEditor(raw);
    let base = this.server;
    if (this.inflight && m.rev >= this.inflight.rev!) {
      base = this.inflight.result;
      this.inflight = null;
    } else if (this.inflight) this.inflight.result = rebase(this.server, next, this.inflight.result);
    this.raw = raw;
    const local = this.view.state.doc.toString();
    const cs = local === next ? null : rebaseChange(base, next, local);
    if (cs) this.view.dispatch({ changes: cs, userEvent: "remote" });
    return true;
  }

  /** A commit arrived: sync the document it changed, and mark the lines others changed. */
  applied(c: Commit): void {
    if (!this.view || !this.nodeId) return;
    if (!c.changes.some((ch) => ch.id === this.nodeId && ch.kind === "node")) return;
    if (this.side.dataset.view === "timeline") { // the history shown follows the document's commits (a restore, someone's edit)
      clearTimeout(this.refreshing);
      this.refreshing = window.setTimeout(() => { if (this.side.dataset.view === "timeline") void this.timeline(true); }, 150);
    }
    if (!this.sync() || !this.view) return;
    if (c.actor_id !== this.me() && !this.mine.has(c.cmd_id)) {
      const lines: number[] = [];
      for (const ch of c.changes) {
        if (ch.id !== this.nodeId || ch.op !== "edit") continue;
        let shift = 0;
        for (const hk of ch.edit!.hunks) {
          const ins = hk.ins ? hk.ins.split("\n").length - (hk.ins.endsWith("\n") ? 1 : 0) : 0;
          for (let i = 0; i < Math.max(ins, 1); i++) lines.push(hk.line + shift + i);
          shift += ins - hk.del;
        }
      }
      if (lines.length) {
        this.view.dispatch({ effects: markLines.of({ lines, actor: c.actor_id }) });
        clearTimeout(this.fading);
        this.fading = window.setTimeout(() => this.view?.dispatch({ effects: clearMarks.of(null) }), 15000);
      }
    }
  }

  /** The text of the last sync as the editor holds it. */
  private get server(): string {
    return asEditor(this.raw);
  }

  /** Sends one command at the model's revision as this page's (sendCommand: kept through an outage). */
  private send(type: string, args: Record<string, unknown>): Promise<ApplyResult> {
    return sendCommand(this.outbox, this.client, this.mine, this.canvasId(), type, args, this.model()?.rev);
  }

  private async history(kind: "undo" | "redo"): Promise<void> {
    await this.flush();
    const m = this.model();
    if (!m) return;
    try {
      await this.send(kind, {});
    } catch (err: any) {
      toast(`${kind}: ${why(err)}`, err?.status === 422 ? "warn" : "bad");
    }
  }

  private snapshotForm(): void {
    const input = h("input", { id: "snapshot-label", type: "text", maxlength: 200, placeholder: "Snapshot label" });
    const form = h("form", { class: "snapshot-form", onsubmit: async (ev: Event) => {
      ev.preventDefault();
      try {
        const sn = await this.client.createSnapshot(this.canvasId(), { label: input.value.trim() || undefined });
        toast(`snapshot ${sn.label || sn.snapshot_id} saved at rev ${sn.rev}`, "ok");
        this.timeline();
      } catch (err) {
        toast(`snapshot: ${why(err)}`, "bad");
      }
    } }, input, h("button", { type: "submit", text: "Save" }));
    this.sideAsked++;
    this.side.replaceChildren(h("h3", { text: "New snapshot" }), form);
    this.side.dataset.view = "snapshot";
    input.focus();
  }

  /**
   * Shows the revisions that changed this document (newest first), with the
   * named snapshots between them. A follow (a refresh after a commit, not
   * the person's ask) is dropped once the pane shows something else.
   */
  async timeline(follow = false): Promise<void> {
    const m = this.model();
    if (!m) return;
    const cid = this.canvasId(), gen = this.gen, asked = follow ? this.sideAsked : ++this.sideAsked;
    const after = Math.max(0, m.rev - 1000);
    let commits: Commit[], snaps: { snapshot_id: string; label?: string; rev: number }[];
    try {
      const [ev, sn] = await Promise.all([this.client.events(cid, { afterRev: after, limit: 1000 }), this.client.listSnapshots(cid)]);
      commits = (ev.commits || []).filter((c: Commit) => c.changes.some((ch) => ch.id === this.nodeId));
      snaps = sn;
    } catch (err) {
      toast(`history: ${why(err)}`, "bad");
      return;
    }
    if (this.gen !== gen || this.sideAsked !== asked) return; // another document or view asked for meanwhile
    if (follow && this.side.dataset.view !== "timeline") return;
    const items: { rev: number; el: HTMLElement }[] = [];
    for (const c of commits) {
      const who = c.actor_id === this.me() ? "you" : c.actor_id;
      items.push({ rev: c.rev, el: h("li", { class: "rev", "data-rev": c.rev },
        h("button", { type: "button", class: "linkish", text: `rev ${c.rev}`, title: "Diff since the revision before this one", onclick: () => this.diff(String(c.rev - 1), "unified") }),
        ` ${c.type} · ${who}`, h("span", { class: "muted", text: c.ts ? " · " + new Date(c.ts).toLocaleTimeString() : "" })) });
    }
    for (const s of snaps) {
      items.push({ rev: s.rev + 0.5, el: h("li", { class: "snap", "data-snapshot-id": s.snapshot_id },
        h("span", { class: "badge", text: "snapshot" }), ` ${s.label || s.snapshot_id} · rev ${s.rev} `,
        h("button", { type: "button", class: "diff", text: "Diff", onclick: () => this.diff(s.snapshot_id, "unified") }),
        h("button", { type: "button", class: "restore", text: "Restore", onclick: () => this.restore(s.snapshot_id, s.label || s.snapshot_id) })) });
    }
    items.sort((a, b) => b.rev - a.rev);
    this.side.replaceChildren(h("h3", { text: "History" }), items.length ? h("ul", { class: "timeline" }, ...items.map((i) => i.el)) : h("p", { class: "muted", text: "No changes yet." }));
    this.side.dataset.view = "timeline";
  }

  private async restore(id: string, label: string): Promise<void> {
    await this.flush();
    const m = this.model();
    if (!m) return;
    try {
      const r = await this.send("revert_to_snapshot", { snapshot_id: id, node_id: this.nodeId });
      toast(`restored snapshot ${label} (rev ${r.rev})`, "ok");
    } catch (err) {
      toast(`restore: ${why(err)}`, "bad");
    }
  }

  /**
   * Shows the diff since a snapshot or revision ("" = the latest snapshot,
   * else revision 0); base says what since is, for the heading.
   */
  async diff(since: string, format: "unified" | "split", base = ""): Promise<void> {
    if (!this.nodeId) return;
    const asked = ++this.sideAsked;
    await this.flush();
    const cid = this.canvasId(), node = this.nodeId, gen = this.gen;
    let d: any;
    try {
      if (!since) {
        const list = await this.client.listSnapshots(cid);
        const last = list[list.length - 1];
        since = last ? last.snapshot_id : "0";
        base = last ? `snapshot ${last.label ? `“${last.label}”` : last.snapshot_id} (rev ${last.rev})` : "";
      }
      base ||= /^\d+$/.test(since) ? (since === "0" ? "the start" : `rev ${since}`) : since;
      d = await this.client.getDocDiff(cid, node, { since, format: "unified" });
    } catch (err) {
      toast(`diff: ${why(err)}`, "bad");
      return;
    }
    if (this.gen !== gen || this.sideAsked !== asked) return; // another document or view asked for meanwhile
    const toggle = h("button", { type: "button", class: "diff-format", text: format === "unified" ? "Side by side" : "Unified",
      onclick: () => this.diff(since, format === "unified" ? "split" : "unified", base) });
    const head = h("div", { class: "diff-head" }, `Since ${base}: +${d.lines_added ?? 0} −${d.lines_deleted ?? 0} ~${d.lines_modified ?? 0} `, toggle);
    let view: HTMLElement;
    if (!d.has_changes) view = h("p", { class: "muted", text: "No changes." });
    else if (format === "unified") {
      const name = this.model()?.nodes.get(node)?.name || node;
      view = h("pre", { class: "diff unified" }, ...unifiedDiffLines(String(d.diff), node, name));
    } else {
      const rows = (d.changes || []).map((c: any) => h("tr", { class: c.type },
        h("td", { class: "ln", text: c.type === "add" ? "" : String(c.old_line ?? c.line) }), h("td", { class: "old", text: c.type === "add" ? "" : c.before ?? "" }),
        h("td", { class: "ln", text: c.type === "delete" ? "" : String(c.line) }), h("td", { class: "new", text: c.type === "delete" ? "" : c.after ?? "" })));
      view = h("table", { class: "diff split" }, h("tr", {}, h("th", { class: "ln" }), h("th", { text: "before" }), h("th", { class: "ln" }), h("th", { text: "after" })), ...rows);
    }
    this.side.replaceChildren(h("h3", { text: "Diff" }), head, view);
    this.side.dataset.format = format;
    this.side.dataset.view = "diff";
  }

  /** Puts the selected lines, formatted for chat by the server ("[Selected from lines S-E]:" and a fenced block), into the agent panel. */
  private async addToChat(): Promise<void> {
    if (!this.view) return;
    await this.flush();
    const [a, b] = this.selectedLines() || [0, 0];
    if (!a) {
      toast("Add to Chat: the document is empty", "warn");
      return;
    }
    try {
      const sel = await this.client.getDocSelection(this.canvasId(), this.nodeId, { startLine: a, endLine: b });
      this.onAddToChat(sel.formatted_for_chat);
    } catch (err) {
      toast(`Add to Chat: ${why(err)}`, "bad");
    }
  }

  /** The lines (from 1, inclusive) the editor's selection spans, the cursor's line when nothing is selected; null when the document is empty. */
  private selectedLines(): [number, number] | null {
    if (!this.view) return null;
    const sel = this.view.state.selection.main;
    const doc = this.view.state.doc;
    // The empty line after a final newline is not a line to the server.
    const lines = splitLines(this.raw).length;
    if (!lines) return null;
    const a = Math.min(doc.lineAt(sel.from).number, lines);
    const b = Math.min(Math.max(a, doc.lineAt(Math.max(sel.from, sel.to - (sel.to > sel.from && doc.lineAt(sel.to).from === sel.to ? 1 : 0))).number), lines);
    return [a, b];
  }

  /**
   * What the agent works on while a document is open: the document, with
   * the lines the person selected in it (none for a bare cursor); null when
   * no document is open. What the person typed and has not sent goes first.
   */
  async agentTarget(): Promise<{ nodeId: string; name: string; lines: [number, number] | null } | null> {
    if (!this.view || !this.nodeId) return null;
    const id = this.nodeId;
    await this.flush();
    await this.inflight?.settled;
    if (!this.view || this.nodeId !== id) return null;
    const sel = this.view.state.selection.main;
    return { nodeId: id, name: String(this.model()?.nodes.get(id)?.name || id), lines: sel.empty ? null : this.selectedLines() };
  }
}

/** unifiedDiffLines renders a unified diff one element per line, classed "hunk", "add" or "del".
 * "---" and "+++" are file headers only before the first hunk: inside one, "---x" is the
 * deleted line "--x" and "+++x" the added line "++x". The headers name the document (name)
 * where the server names its node (id@rev): "--- notes.md (rev 3)". */
function unifiedDiffLines(diff: string, id: string, name: string): HTMLElement[] {
  let inHunk = false;
  return diff.split("\n").map((l) => {
    let cls = "";
    if (!inHunk && (l.startsWith("--- " + id + "@") || l.startsWith("+++ " + id + "@"))) {
      const rev = l.slice(4 + id.length + 1);
      return h("div", { class: "file", text: `${l.slice(0, 4)}${name}${/^\d+$/.test(rev) ? ` (rev ${rev})` : "@" + rev}` });
    }
    if (l.startsWith("@@")) {
      inHunk = true;
      cls = "hunk";
    } else if (inHunk && l.startsWith("+")) cls = "add";
    else if (inHunk && l.startsWith("-")) cls = "del";
    return h("div", { class: cls, text: l });
  });
}
