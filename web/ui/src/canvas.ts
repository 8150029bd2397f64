// The canvas on Excalidraw. Remote commits re-render only the elements of
// the nodes they touched; the user's edits become canvasd commands with
// base_rev (create_shape, move, resize, rotate, update_shape, delete_shape,
// group, ungroup; arrows: create_edge, update_edge, delete_edge), planned by
// plan.ts (pure: this view reads the scene, calls planGesture, sends), sent
// as one batch per gesture; props only as the person changed them
// (mapping.ts).
// A 409 whose conflicting changes touch other fields than the user's is
// re-sent at the new head; otherwise the user's change stays on screen with
// the conflict explained until they keep it or take the other version.

import { createElement } from "react";
import { flushSync } from "react-dom";
import { createRoot, type Root } from "react-dom/client";
import { Excalidraw, CaptureUpdateAction, FONT_FAMILY, exportToCanvas, getCommonBounds, mutateElement, restoreElements } from "@excalidraw/excalidraw";
import type { AppState, BinaryFiles } from "@excalidraw/excalidraw/types";
import { ConflictError, type CanvasClient, type CanvasModel, type Commit, type ConflictResult, type Node as CanvasNode } from "@canvasd/client";
import { actorColor, h, toast, why } from "./dom";
import { newCmdId, type Outbox } from "./outbox";
import { edgeElements, elementId, IMAGE_DATA_URL, imageFileId, nodeElements, orderKey, partOf, type El } from "./mapping";
import { clashOf, gestureUnderWay, isDirty, isUnplanned, lostConflict, nodeOf, planGesture, selectedIds, stamp, subtree, type Files, type Planned } from "./plan";

/** What a commit touched, by kind. */
export interface Applied {
  nodes: Set<string>;
  edges: Set<string>;
}

export function touched(c: Commit): Applied {
  const out: Applied = { nodes: new Set(), edges: new Set() };
  for (const ch of c.changes || []) (ch.kind === "edge" ? out.edges : out.nodes).add(ch.id);
  return out;
}

/** A planned command; carries: the gesture's elements (id → stamp) that its commands send. */
type Cmd = { id: string; type: string; args: Record<string, unknown>; nodes: string[]; fields: string[]; carries?: Map<string, string> };
/** The canvas a gesture was made on: its id, and the model the page had of it. */
type Target = { cid: string; m: CanvasModel };
export interface Box { x: number; y: number; w: number; h: number }
export class CanvasView {
  private root: Root | null = null;
  private ex: any = null; // ExcalidrawImperativeAPI
  private ready: Promise<void>;
  private resolveReady!: () => void;
  model: CanvasModel | null = null;
  private cache = new Map<string, El[]>(); // node or edge id → its elements as last built
  private rendered = new Map<string, number>(); // element id → version we put in the scene
  private sent = new Map<string, string>(); // element id → stamp (version and nonce) sent to the server, commit pending
  private held = new Set<string>(); // node ids whose user version stays on screen (conflict)
  private estimated = new Set<string>(); // node or edge ids whose labels were sized before their font loaded
  /** Nodes others deleted, by the commit that did: an edit of one on screen is a conflict, not a create. */
  private deletedByOthers = new Map<string, Commit>();
  private lastSceneVersion = -1;
  private pendingNodes = new Set<string>(); // touched by commits not yet shown
  private pendingEdges = new Set<string>();
  private flushQueued = false;
  private updates = 0; // scene updates handed to Excalidraw (push(), and flush() in place), each drawn by a later React commit
  private framesDrawn = 0; // the last update two frames went by since (Excalidraw has drawn it by then)
  private committed = 0; // the updates Excalidraw's last commit rendered (its onChange)
  private drawnUpdates = 0; // the updates its shapes canvas showed when it was last drawn (watchDraws)
  private watched: HTMLCanvasElement | null = null; // the shapes canvas whose draws are counted
  private nextDraw: { seen: Promise<void>; resolve: () => void } | null = null; // drawn() waits for the next draw
  private loads = 0; // load() calls: a newer one supersedes an older one still waiting
  private loading = false; // a snapshot is being built: commits wait for it
  /** How the last load went (ms from its start): elements built, Excalidraw ready, on stage. */
  timing: Record<string, number> = {};
  private waiters = new Set<{ rev: number; resolve: () => void }>(); // caughtUp() calls
  private reorder = false; // a pending commit created, deleted, re-parented or re-ordered nodes
  private flushPort: MessagePort;
  private children = new Map<string, Set<string>>(); // parent node id → child node ids
  private parentOf = new Map<string, string>(); // node id → parent node id
  private edgesAt = new Map<string, Set<string>>(); // node id → ids of the edges at it
  private ends = new Map<string, [string, string]>(); // edge id → its from and to
  private stage = new Map<string, El>(); // the elements on stage by id, as of the last push or planned edit
  private queues = new Map<string, Promise<void>>(); // canvas id → its gestures being sent, in order
  private collaborators = new Map<string, any>();
  private remoteSel = new Map<string, { sel: string[]; t: number }>();
  myCommands = new Set<string>();
  me = "";
  /** The selection changed (node ids). */
  onSelection: (ids: string[]) => void = () => {};
  /** The user asked to open a document node. */
  onOpenDoc: (id: string) => void = () => {};
  /** A gesture to publish (throttled by the caller). */
  onPointer: (x: number, y: number) => void = () => {};
  /** Shown beside the canvas: the unresolved conflicts. */
  conflictBox: HTMLElement;
  private lastSel = "";
  private propsToggle: HTMLButtonElement;
  private propsOpen = false; // the property panel opened (it shows while something is selected or drawn)
  private propsByKey = false; // opened by S or G: it closes with the colour picker

  constructor(private host: HTMLElement, private client: CanvasClient, private canvasId: () => string, private outbox: Outbox,
    menu: () => unknown = () => null) { // Excalidraw's main menu (files.ts)
    this.ready = new Promise((r) => (this.resolveReady = r));
    // flush() runs as a task of its own: after the commits of one network read, before the next frame.
    const ch = new MessageChannel();
    ch.port1.onmessage = () => this.flush();
    this.flushPort = ch.port2;
    this.conflictBox = h("div", { id: "conflicts" });
    host.append(this.conflictBox);
    const mount = h("div", { id: "excalidraw" });
    host.append(mount);
    this.root = createRoot(mount);
    this.root.render(createElement(Excalidraw as any, {
      excalidrawAPI: (a: any) => { this.ex = a; },
      isCollaborating: true,
      onChange: (els: readonly El[], app: any, files: any) => this.changed(els, app, files),
      onPointerUpdate: (p: any) => this.onPointer(p.pointer.x, p.pointer.y),
      UIOptions: { canvasActions: { loadScene: false, saveToActiveFile: false, export: false, saveAsImage: false, toggleTheme: false } },
      initialData: { appState: { viewBackgroundColor: "#fafaf8", currentItemFontFamily: 5 } },
      // Embedded pages are shown as their link: the page's Content-Security-Policy frames only its own origin.
      validateEmbeddable: () => false,
    }, menu() as any));
    // Excalidraw's property panel starts collapsed to this Style button beside its main menu (app.css): a
    // click opens it and another closes it; S and G (Excalidraw's colour-picker keys) open it too.
    this.propsToggle = h("button", { type: "button", id: "props-toggle", "aria-expanded": "false", text: "Style",
      title: "Style of the selection: stroke, background, fill, stroke width and style, sloppiness, edges, opacity, layers, actions (S and G open the colour pickers)",
      onmousedown: (ev: MouseEvent) => ev.preventDefault(),
      onclick: (ev: MouseEvent) => {
        this.showProps(!this.propsOpen, false);
        // Clicked, the keyboard focus goes back to Excalidraw (not to a button of the panel just hidden), so that its shortcuts keep
        // working; Enter or Space on the button (a click of detail 0) leaves it on the button.
        if (ev.detail > 0) host.querySelector<HTMLElement>(".excalidraw-container")?.focus({ preventScroll: true });
      } });
    host.append(this.propsToggle);
    // Below about 800 px Excalidraw's centred toolbar reaches the button's place: there the button is a palette icon (app.css).
    new ResizeObserver(([entry]) => this.propsToggle.classList.toggle("compact", entry.contentRect.width < 800)).observe(host);
    // A double-click on a document card opens the document instead of editing
    // its label; the card its first click selected is let go (no property
    // panel over the canvas for it).
    window.addEventListener("dblclick", (ev) => {
      if (!this.ex || !(ev.target as HTMLElement)?.closest?.("#excalidraw canvas")) return;
      const id = this.docAt(ev.clientX, ev.clientY);
      if (id) {
        ev.stopPropagation();
        ev.preventDefault();
        this.ex.updateScene({ appState: { selectedElementIds: {}, selectedGroupIds: {} }, captureUpdate: CaptureUpdateAction.NEVER });
        this.onOpenDoc(id);
      }
    }, true);
    // Labels sized before their font had loaded are sized again once it has.
    document.fonts?.addEventListener?.("loadingdone", () => this.refit());
  }

  /** Opens or closes Excalidraw's property panel; one opened by a key closes with the colour picker it opened. */
  private showProps(open: boolean, byKey: boolean): void {
    this.propsOpen = open;
    this.propsByKey = open && byKey;
    this.host.classList.toggle("props-open", open);
    this.propsToggle.setAttribute("aria-expanded", String(open));
  }

  whenReady(): Promise<void> {
    return this.ready;
  }

  /** The document node under a page point, if any. */
  private docAt(cx: number, cy: number): string {
    const app = this.ex.getAppState();
    const z = app.zoom.value;
    const x = (cx - app.offsetLeft) / z - app.scrollX, y = (cy - app.offsetTop) / z - app.scrollY;
    const nodes = [...(this.model?.nodes.values() || [])].filter((n) => n.type === "doc");
    for (const n of nodes) if (x >= n.x && x <= n.x + n.w && y >= n.y && y <= n.y + n.h) return n.id;
    return "";
  }

  /**
   * Shows a freshly read canvas (a snapshot): its elements built once, in
   * z-order (while Excalidraw may still be starting), and put on stage in one
   * update. Commits that arrive meanwhile are shown right after.
   */
  /**
   * The page leaves the canvas shown (another one opens): until the next
   * load, edits of the scene on screen are not planned against it.
   */
  leave(): void {
    this.model = null;
    this.wake();
  }

  async load(model: CanvasModel, fit: boolean): Promise<void> {
    const t0 = performance.now();
    const gen = ++this.loads;
    this.loading = true;
    this.pendingNodes.clear();
    this.pendingEdges.clear();
    this.deletedByOthers.clear();
    this.reorder = false;
    const raw: El[] = [];
    const owner: string[] = []; // raw[i] belongs to node or edge owner[i]
    for (const n of model.sorted()) {
      for (const el of nodeElements(n, model.nodes, 2 + (n.updated_rev || 0))) { raw.push(el); owner.push(n.id); }
    }
    for (const e of model.edges.values()) {
      for (const el of edgeElements(e, model.nodes, 2 + (e.updated_rev || 0))) { raw.push(el); owner.push(e.id); }
    }
    // One restore for all, with the fractional indices of the z-order given (orderKey).
    const ownerOf = new Map<string, string>();
    raw.forEach((el, i) => {
      ownerOf.set(el.id, owner[i]);
      el.index = orderKey(i);
    });
    const els = restoreElements(raw as any, null, { refreshDimensions: false, repairBindings: false }) as unknown as El[];
    const built = new Map<string, El[]>();
    for (const el of els) {
      const id = ownerOf.get(el.id);
      if (id === undefined) continue;
      const l = built.get(id);
      if (l) l.push(el);
      else built.set(id, [el]);
    }
    const estimated = new Set<string>();
    for (const [id, l] of built) if (fitLabels(l)) estimated.add(id);
    const tBuilt = performance.now();
    await this.ready;
    if (gen !== this.loads) return; // a newer snapshot is being shown
    const tReady = performance.now();
    this.loading = false;
    this.model = model;
    this.cache = built;
    this.estimated = estimated;
    this.rendered.clear();
    this.sent.clear();
    this.held.clear();
    this.children.clear();
    this.parentOf.clear();
    this.edgesAt.clear();
    this.ends.clear();
    for (const n of model.nodes.values()) this.index(n.id);
    for (const e of model.edges.values()) this.indexEdge(e.id);
    this.push(true);
    this.addImages(model.nodes.values()); // (Excalidraw loads the files of the images on stage)
    if (fit) this.fit();
    this.wake();
    // What changed while Excalidraw was starting.
    for (const id of this.pendingNodes) if (!model.nodes.has(id)) this.cache.delete(id);
    if (this.pendingNodes.size || this.pendingEdges.size) this.flush();
    this.timing = { built: tBuilt - t0, ready: tReady - t0, staged: performance.now() - t0 };
  }

  /**
   * Takes what a commit touched. The commits that arrive before the next task
   * (those of one network read, typically) are shown together, by flush().
   */
  applied(c: Commit, a: Applied): void {
    if (this.waiters.size) this.wake();
    if (!this.ex || (!this.model && !this.loading)) return;
    const others = !this.myCommands.has(c.cmd_id);
    for (const ch of c.changes || []) {
      if (ch.kind === "node" && (ch.op !== "patch" || (ch.patch && ("index" in ch.patch || "parent_id" in ch.patch)))) this.reorder = true;
      if (ch.kind === "node" && ch.op === "delete" && others) this.deletedByOthers.set(ch.id, c);
      else if (ch.kind === "node" && ch.op === "put") this.deletedByOthers.delete(ch.id);
    }
    for (const id of a.nodes) this.pendingNodes.add(id);
    for (const id of a.edges) this.pendingEdges.add(id);
    this.queueFlush();
  }

  /** Builds again the nodes and edges whose labels were sized before their font loaded. */
  private refit(): void {
    const m = this.model;
    if (!m || !this.estimated.size) return;
    for (const id of this.estimated) {
      if (m.nodes.has(id)) this.pendingNodes.add(id);
      else if (m.edges.has(id)) this.pendingEdges.add(id);
    }
    this.estimated.clear();
    this.queueFlush();
  }

  /** Runs flush() in a task of its own, once for what is pending by then. */
  private queueFlush(): void {
    if (this.flushQueued || this.loading) return; // load() shows them when it is done
    this.flushQueued = true;
    this.flushPort.postMessage(0);
  }

  /** The z-order and graph indexes of node id as the model has it now. */
  private index(id: string): void {
    const n = this.model!.nodes.get(id);
    const was = this.parentOf.get(id) || "";
    const now = n?.parent_id || "";
    if (was === now) return;
    if (was) this.children.get(was)?.delete(id);
    if (now) {
      let set = this.children.get(now);
      if (!set) this.children.set(now, (set = new Set()));
      set.add(id);
      this.parentOf.set(id, now);
    } else this.parentOf.delete(id);
  }

  private indexEdge(id: string): void {
    const e = this.model!.edges.get(id);
    const was = this.ends.get(id);
    if (was && e && was[0] === e.from && was[1] === e.to) return;
    if (was) for (const n of was) this.edgesAt.get(n)?.delete(id);
    if (!e) {
      this.ends.delete(id);
      return;
    }
    this.ends.set(id, [e.from, e.to]);
    for (const n of [e.from, e.to]) {
      let set = this.edgesAt.get(n);
      if (!set) this.edgesAt.set(n, (set = new Set()));
      set.add(id);
    }
  }

  /**
   * Shows the pending commits. Costs O(what they touched): the touched
   * nodes (with the descendants of touched groups and frames) and the edges
   * at them are rebuilt; when each keeps its elements (same ids and types:
   * a move, a resize, a restyle, a new text), those on stage are updated in
   * place, which costs Excalidraw no pass over the scene. Otherwise (a shape
   * created or deleted, a label added, a change of z-order) the cached
   * elements go on stage in one update.
   */
  private flush(): void {
    this.flushQueued = false;
    if (this.loading) return; // load() shows the pending commits when it is done
    const m = this.model;
    if (!m || !this.ex || (!this.pendingNodes.size && !this.pendingEdges.size)) return;
    const nodes = new Set<string>();
    const edges = new Set<string>(this.pendingEdges);
    const order = this.reorder; // the z-order of elements may have changed
    this.reorder = false;
    for (const id of this.pendingNodes) {
      const n = m.nodes.get(id);
      // Children show their groups and frames (and move with them).
      if (n && (n.type === "group" || n.type === "frame")) subtree(id, this.children, nodes);
      else nodes.add(id);
      this.index(id);
    }
    for (const id of this.pendingEdges) this.indexEdge(id);
    this.pendingNodes.clear();
    this.pendingEdges.clear();
    for (const id of nodes) for (const e of this.edgesAt.get(id) || []) edges.add(e);
    const plans: [El, El][] = [];
    let inPlace = !order;
    for (const id of [...nodes, ...edges]) {
      const old = this.cache.get(id) || [];
      if (m.nodes.has(id)) this.build(id);
      else this.buildEdge(id);
      if (!inPlace) continue;
      const next = this.cache.get(id) || [];
      if (!old.length && !next.length) continue; // a group: its shapes carry it
      if (this.held.has(id) || !old.length || next.length !== old.length ||
        old.some((el, i) => { const st = this.stage.get(el.id); return !st || st !== el || this.isDirty(st) || el.type !== next[i].type || el.id !== next[i].id; })) {
        inPlace = false;
        continue;
      }
      next.forEach((el, i) => plans.push([old[i], el]));
    }
    const images = [...nodes].map((id) => m.nodes.get(id)!).filter((n) => n?.type === "image");
    if (!inPlace) {
      this.push(false);
      this.addImages(images);
      return;
    }
    if (plans.length) this.updated();
    for (const [st, el] of plans) {
      const up: El = {};
      for (const k in el) if (!IN_PLACE_SKIP.has(k)) up[k] = el[k];
      // width and height always: mutateElement then drops the element's cached shape (a restyle redraws).
      up.width = el.width;
      up.height = el.height;
      const ownText = (el.boundElements || []).filter((b: any) => b.type === "text");
      const arrows = (st.boundElements || []).filter((b: any) => b.type !== "text");
      const merged = [...ownText, ...arrows];
      if (JSON.stringify(merged) !== JSON.stringify(st.boundElements || [])) up.boundElements = merged.length ? merged : null;
      const before = contribution(st);
      mutateElement(st as any, up as any, true); // Excalidraw coalesces the redraws of one task into one
      // The built version: the user's edits of a copy of st count one up from st's, never to it.
      st.version = Math.max(st.version, el.version);
      this.lastSceneVersion = (this.lastSceneVersion - before + contribution(st)) | 0;
      this.rendered.set(st.id, st.version);
    }
    for (const [st] of plans) {
      const id = nodeOf(st);
      const l = this.cache.get(id);
      if (l) this.cache.set(id, l.map((el) => this.stage.get(el.id) || el));
    }
    this.addImages(images);
  }

  private build(id: string): void {
    const m = this.model!;
    const n = m.nodes.get(id);
    if (!n) {
      this.cache.delete(id);
      return;
    }
    const prev = this.cache.get(id);
    const v = Math.max(prev?.[0]?.version || 0, this.stage.get(elementId(id))?.version || 0) + 2 + (n.updated_rev || 0);
    let els = nodeElements(n, m.nodes, v);
    els = restoreElements(els as any, null, { refreshDimensions: false, repairBindings: false }) as any;
    keepIndices(els, prev);
    if (fitLabels(els)) this.estimated.add(id);
    else this.estimated.delete(id);
    this.cache.set(id, els);
  }

  private buildEdge(id: string): void {
    const e = this.model!.edges.get(id);
    const prev = this.cache.get(id);
    const v = Math.max(prev?.[0]?.version || 0, this.stage.get(elementId(id))?.version || 0) + 2 + (e?.updated_rev || 0);
    const built = e ? edgeElements(e, this.model!.nodes, v) : [];
    if (!built.length) {
      this.cache.delete(id);
      return;
    }
    const els = restoreElements(built as any, null, { repairBindings: false }) as any;
    keepIndices(els, prev);
    this.cache.set(id, els);
  }

  /** Counts a scene update about to be handed to Excalidraw (see drawn()). */
  private updated(): void {
    const n = ++this.updates;
    void nextFrame().then(nextFrame).then(() => { this.framesDrawn = Math.max(this.framesDrawn, n); });
  }

  /**
   * Counts the draws of Excalidraw's canvas of the shapes (its static
   * canvas): Excalidraw draws it anew in the commit that renders a scene
   * update (a passive effect of that commit, renderStaticScene), which
   * starts with the canvas's getContext. A draw shows the updates the last
   * commit rendered (committed, set by its onChange): with it counted,
   * drawn() answers as soon as the shapes of the last update are on that
   * canvas, rather than two frames after the update.
   */
  private watchDraws(): void {
    const c = this.host.querySelector<HTMLCanvasElement>("canvas.excalidraw__canvas.static");
    if (!c || c === this.watched) return;
    this.watched = c;
    const get = c.getContext.bind(c) as (id: string, o?: unknown) => RenderingContext | null;
    (c as any).getContext = (id: string, o?: unknown) => {
      this.drawnUpdates = Math.max(this.drawnUpdates, this.committed);
      const d = this.nextDraw;
      this.nextDraw = null;
      d?.resolve(); // (its waiters go on once this draw, synchronous, is done)
      return get(id, o);
    };
  }

  /**
   * Shows the pending commits and has Excalidraw render and draw the scene
   * updates it has not drawn yet, now: a React commit at sync priority
   * (flushSync), which renders the scene as it is, instead of the one
   * queued for the updates. Not for a caller inside a React commit.
   */
  private drawNow(): void {
    if (this.flushQueued) this.flush();
    if (this.ex && !this.loading && !this.isDrawn()) flushSync(() => this.ex.updateScene({ appState: {} }));
  }

  /** Whether Excalidraw has drawn the last scene update. */
  private isDrawn(): boolean {
    return Math.max(this.framesDrawn, this.drawnUpdates) === this.updates;
  }

  /** Puts the cached elements on stage, keeping the user's unsent versions. */
  private push(reset: boolean): void {
    this.updated();
    const m = this.model!;
    const scene = new Map<string, El>();
    if (!reset) for (const el of this.ex.getSceneElementsIncludingDeleted()) scene.set(el.id, el);
    const out: El[] = [];
    const boundTo = new Map<string, { id: string; type: string }[]>();
    // The user's version stays (it may be the very object cached: an edit in place).
    const mine = (el: El): El | undefined => {
      const cur = scene.get(el.id);
      return cur && (this.held.has(partOf(el.id).node) || this.isDirty(cur)) ? cur : undefined;
    };
    const fresh = new Set<string>(); // ids whose server version goes on stage
    const add = (el: El) => {
      const kept = mine(el);
      const use = kept || el;
      out.push(use);
      if (!kept) fresh.add(el.id);
      for (const b of [use.startBinding, use.endBinding]) {
        if (b?.elementId) {
          const l = boundTo.get(b.elementId) || [];
          l.push({ id: use.id, type: "arrow" });
          boundTo.set(b.elementId, l);
        }
      }
    };
    const seen = new Set<string>();
    for (const n of m.sorted()) for (const el of this.cache.get(n.id) || []) { add(el); seen.add(el.id); }
    for (const e of m.edges.values()) for (const el of this.cache.get(e.id) || []) { add(el); seen.add(el.id); }
    // Elements the user drew whose commands are in flight stay too.
    for (const [id, el] of scene) {
      if (!seen.has(id) && !el.isDeleted && (this.isDirty(el) || this.held.has(partOf(id).node))) {
        out.push(el);
        if (el.containerId) {
          const l = boundTo.get(el.containerId) || [];
          l.push({ id, type: "text" });
          boundTo.set(el.containerId, l);
        }
      }
    }
    for (let i = 0; i < out.length; i++) {
      const el = out[i];
      const arrows = boundTo.get(el.id);
      if (arrows && !this.isDirty(el)) {
        const own = (el.boundElements || []).filter((b: any) => b.type === "text");
        const merged = [...own, ...arrows.filter((a) => !own.some((o: any) => o.id === a.id))];
        if (JSON.stringify(merged) !== JSON.stringify(el.boundElements || [])) { // a copy only when they changed: Excalidraw redraws by identity
          out[i] = { ...el, boundElements: merged };
          fresh.add(el.id);
        }
      }
    }
    this.ex.updateScene({ elements: out, captureUpdate: CaptureUpdateAction.NEVER });
    // Excalidraw may bump versions as it orders the scene: what is on stage now is the rendered version.
    // The cache keeps the very objects on stage, so that the next push hands
    // Excalidraw the same objects for what did not change (it redraws by identity).
    const now = this.ex.getSceneElementsIncludingDeleted();
    this.stage = new Map(now.map((el: El) => [el.id, el]));
    const onStage = new Map<string, El>();
    let unplanned = false;
    for (const el of now) {
      if (!fresh.has(el.id)) {
        unplanned ||= isUnplanned(el, this.rendered, this.sent, this.model);
        continue;
      }
      this.rendered.set(el.id, el.version);
      this.sent.delete(el.id);
      onStage.set(el.id, el);
    }
    for (const [id, els] of this.cache) {
      if (els.some((el) => onStage.has(el.id) && onStage.get(el.id) !== el)) this.cache.set(id, els.map((el) => onStage.get(el.id) || el));
    }
    // An edit whose onChange is yet to come (Excalidraw reports them in a later task) is planned then.
    this.lastSceneVersion = unplanned ? -1 : sceneVersion(now);
  }

  /** Whether el is the user's version (see plan.ts). */
  private isDirty(el: El): boolean {
    return isDirty(el, this.rendered, this.model);
  }

  /**
   * Zooms to show every shape; a canvas of more than 1,000 shapes opens at
   * 100 % on the top-left of its content instead (all of it at once would be
   * unreadable, and slow to draw on every change).
   */
  fit(all = false): void {
    const els = this.ex.getSceneElements();
    if (!els.length) return;
    if (all || els.length <= 1000) {
      this.ex.scrollToContent(els, { fitToContent: true, animate: false });
      return;
    }
    // The top-left of the content: an unturned shape's is its (x, y); the
    // others' (turned, or drawn through points) Excalidraw's bounds.
    let x1 = Infinity, y1 = Infinity;
    const others: El[] = [];
    for (const el of els) {
      if (el.angle || el.points) others.push(el);
      else {
        x1 = Math.min(x1, el.x);
        y1 = Math.min(y1, el.y);
      }
    }
    if (others.length) {
      const [ox, oy] = getCommonBounds(others as any);
      x1 = Math.min(x1, ox);
      y1 = Math.min(y1, oy);
    }
    this.ex.updateScene({ appState: { scrollX: -x1 + 40, scrollY: -y1 + 40, zoom: { value: 1 } }, captureUpdate: CaptureUpdateAction.NEVER });
  }

  // ------------------------------------------------------------ user edits

  private changed(els: readonly El[], app: AppState, files: BinaryFiles): void {
    this.committed = this.updates; // (a commit renders the scene as it is: every update made so far)
    if (this.watched?.isConnected !== true) this.watchDraws();
    // Excalidraw initialises its scene asynchronously: only then may the canvas be put on stage.
    if (this.ex && !app.isLoading) this.resolveReady();
    if (!this.model) return;
    const sel = Object.keys(app.selectedElementIds || {}).filter((k) => app.selectedElementIds[k]).map((k) => partOf(k).node).sort().join(",");
    if (sel !== this.lastSel) {
      this.lastSel = sel;
      this.onSelection(sel ? [...new Set(sel.split(","))] : []);
    }
    // Excalidraw's property panel shows only for a selection or a shape being drawn or typed (app.css): picking a tool leaves the canvas free.
    this.host.classList.toggle("shape-props", !!(sel || app.newElement || app.editingTextElement || app.multiElement));
    // S and G open a colour picker of the panel: the panel opens for it (and closes after, if the key opened it).
    const picker = app.openPopup === "elementStroke" || app.openPopup === "elementBackground";
    if (picker && !this.propsOpen) this.showProps(true, true);
    else if (!picker && this.propsByKey) this.showProps(false, false);
    if (gestureUnderWay(app)) return;
    const v = sceneVersion(els);
    if (v === this.lastSceneVersion) return;
    this.lastSceneVersion = v;
    const cmds = this.plan(els, files, selectedIds(app));
    if (cmds.length) this.send(cmds);
  }

  /**
   * The commands that bring the server to what the user sees (planGesture),
   * marked as sent; an edit of shapes others deleted meanwhile is shown as a
   * conflict instead. selected: the ids of the elements selected.
   */
  private plan(els: readonly El[], files: Files, selected: ReadonlySet<string> = new Set()): Cmd[] {
    const m = this.model!;
    for (const el of els) if (this.stage.get(el.id) !== el) this.stage.set(el.id, el); // an edit's copy: updates in place go to it
    const p = planGesture(m, { rendered: this.rendered, sent: this.sent, children: this.children, deletedByOthers: this.deletedByOthers }, { els, files, selected });
    const cmds: Cmd[] = p.cmds.map(asCmd);
    if (p.lost.length) void this.conflict(p.lost.map((l) => asCmd(l.cmd)), lostConflict(p.lost, m), Infinity, { cid: this.canvasId(), m });
    if (!cmds.length) {
      // Nothing the server keeps changed (a lock, say): the scene's version
      // counts as shown, so that the server's later versions replace it.
      for (const el of els) {
        const n = nodeOf(el);
        if (p.dirty.has(n) && !this.held.has(n)) this.rendered.set(el.id, el.version);
      }
      return [];
    }
    // Mark what was planned as sent.
    const carries = new Map<string, string>();
    for (const el of els) {
      if (p.dirty.has(nodeOf(el))) {
        this.sent.set(el.id, stamp(el));
        carries.set(el.id, stamp(el));
      }
    }
    for (const c of cmds) c.carries = carries;
    return cmds;
  }

  /**
   * Sends a gesture's commands (one batch), in order with earlier gestures
   * on the same canvas, to the canvas it was made on, also when the page
   * has opened another one meanwhile; while the server is unreachable they
   * wait (Outbox). Each canvas has its own order: a gesture that waits
   * holds up the later ones of its canvas only.
   */
  private send(cmds: Cmd[]): void {
    if (!this.model) return;
    const at: Target = { cid: this.canvasId(), m: this.model };
    const done = this.outbox.enqueue();
    const next = (this.queues.get(at.cid) || Promise.resolve())
      .then(() => this.sendNow(cmds, 0, at))
      .catch((err) => console.error("sending", cmds, err)) // sendNow says why; the next gesture goes anyway
      .finally(done);
    this.queues.set(at.cid, next);
    void next.then(() => { if (this.queues.get(at.cid) === next) this.queues.delete(at.cid); });
  }

  private async sendNow(cmds: Cmd[], attempt: number, at: Target): Promise<void> {
    const { cid, m } = at;
    for (const c of cmds) this.myCommands.add(c.id);
    const base = m.rev;
    try {
      // Kept and sent again while the server is unreachable: the same envelope, the same key.
      const rev = await this.outbox.deliver(async () => cmds.length === 1
        ? (await this.client.applyResult(cid, cmds[0].type, cmds[0].args, { baseRev: base, cmdId: cmds[0].id, idempotencyKey: cmds[0].id })).rev
        : (await this.client.applyBatch(cid, cmds.map(({ id, type, args }) => ({ id, type: type as any, args })), { baseRev: base, idempotencyKey: cmds[0].id })).current_rev);
      const carries = cmds[0]?.carries;
      if (carries) void this.caughtUp(rev, 0).then(() => this.settle(m, rev, carries));
    } catch (err) {
      if (cid !== this.canvasId()) { // the page is on another canvas: nothing of this one to show or hold
        toast(`${cmds.map((c) => c.type).join(", ")} on ${cid} was not saved: ${why(err)}`, "bad", 8000);
        return;
      }
      if (this.model !== m) { // re-read meanwhile: the scene shows the server's version
        toast(`${cmds.map((c) => c.type).join(", ")} was not saved (the canvas was re-read meanwhile): ${why(err)}`, "warn", 8000);
        return;
      }
      if (err instanceof ConflictError) return this.conflict(cmds, err.conflict, attempt, at);
      toast(`${cmds.map((c) => c.type).join(", ")} was refused: ${why(err)}`, "bad", 8000);
      this.revert(cmds.flatMap((c) => c.nodes)); // the server said no: show what it has
    }
  }

  /**
   * The server holds what the user did: once the model has the commit, the
   * user's elements it carried that the user has not changed since are the
   * server's version, so later commits from others show on them. Those the
   * model has moved on from while they were the user's (the stream brought
   * the commit, and maybe others', before the answer) are shown anew.
   */
  private settle(m: CanvasModel, rev: number, carries: Map<string, string>): void {
    if (this.model !== m || m.rev < rev) return; // a reload shows the server's version anyway
    for (const el of this.ex.getSceneElementsIncludingDeleted()) {
      if (carries.get(el.id) !== stamp(el)) continue;
      const node = nodeOf(el);
      if (this.held.has(node)) continue;
      this.rendered.set(el.id, el.version);
      if (!this.cache.get(node)?.includes(el)) (m.nodes.has(node) ? this.pendingNodes : this.pendingEdges).add(node);
    }
    if (this.pendingNodes.size || this.pendingEdges.size) this.queueFlush();
  }

  /**
   * A 409: when the others' changes since base_rev touched only other fields
   * of those shapes, the same intent is sent again at the new head; otherwise
   * the user's version stays on screen, held, with the conflict explained.
   */
  private async conflict(cmds: Cmd[], body: ConflictResult, attempt: number, at: Target): Promise<void> {
    const { who, deleted, overlap, both } = clashOf(cmds.flatMap((c) => c.fields), cmds.flatMap((c) => c.nodes), body);
    const fresh = cmds.map((c) => ({ ...c, id: newCmdId() }));
    if (!overlap && attempt < 3) {
      await this.caughtUp(body?.current_rev || 0);
      toast(`re-applied your change on top of ${who.join(", ") || "another"}'s edit`, "ok", 3000);
      return this.sendNow(fresh, attempt + 1, at);
    }
    const nodes = [...new Set(cmds.flatMap((c) => c.nodes))];
    for (const n of nodes) this.held.add(n);
    const fields = both.join(", ") || "the same shapes";
    const box = h("div", { class: "conflict", "data-nodes": nodes.join(" ") },
      h("b", { text: "Conflict: " }),
      `${who.join(", ") || "someone"} changed ${fields} of ${nodes.join(", ")} after your view (rev ${body?.base_rev}). ` +
      `Your change (${cmds.map((c) => c.type).join(", ")}) is still shown here, not saved.`,
      h("button", { type: "button", class: "keep", text: deleted ? "Keep mine (recreate)" : "Keep mine", onclick: async () => {
        box.remove();
        await this.caughtUp(body?.current_rev || 0);
        // Planned anew from the scene against the server's version: what the user sees is saved (what was deleted is created).
        for (const n of nodes) {
          this.held.delete(n);
          this.deletedByOthers.delete(n);
        }
        for (const el of this.ex.getSceneElementsIncludingDeleted()) if (nodes.includes(nodeOf(el))) this.sent.delete(el.id);
        this.lastSceneVersion = -1;
        this.changed(this.ex.getSceneElementsIncludingDeleted(), this.ex.getAppState(), this.ex.getFiles());
      } }),
      h("button", { type: "button", class: "theirs", text: "Take theirs", onclick: () => { box.remove(); this.revert(nodes); } }));
    this.conflictBox.append(box);
  }

  /**
   * Waits until the model reached rev (its commits come over the stream),
   * at most ms (by default 15 s: on a slow stream the server's 409 tells
   * again); 0: however long it takes.
   */
  caughtUp(rev: number, ms = 15000): Promise<void> {
    if (!this.model || this.model.rev >= rev) return Promise.resolve();
    return new Promise((resolve) => {
      const w = { rev, resolve: () => { clearTimeout(timer); resolve(); } };
      const timer = ms ? setTimeout(() => { this.waiters.delete(w); resolve(); }, ms) : undefined;
      this.waiters.add(w);
    });
  }

  /** Wakes the caughtUp() waiters the model reached (all of them when it is gone). */
  private wake(): void {
    for (const w of this.waiters) {
      if (!this.model || this.model.rev >= w.rev) {
        this.waiters.delete(w);
        w.resolve();
      }
    }
  }

  /** Drops the user's versions of nodes (and of the edges at them) and shows the server's. */
  private revert(ids: string[]): void {
    if (!this.model) return;
    const nodes = [...new Set([...ids, ...ids.flatMap((n) => [...(this.edgesAt.get(n) || [])])])];
    for (const n of nodes) {
      this.held.delete(n);
      for (const el of this.ex.getSceneElementsIncludingDeleted()) {
        // Counted as shown, so that push() puts the server's version in its place.
        if (nodeOf(el) === n) { this.sent.delete(el.id); this.rendered.set(el.id, el.version); }
      }
      if (this.model.nodes.has(n)) this.build(n);
      else if (this.model.edges.has(n)) this.buildEdge(n);
      else this.cache.delete(n);
    }
    // Elements of nodes that do not exist on the server disappear.
    const scene = this.ex.getSceneElementsIncludingDeleted().filter((el: El) => {
      const n = nodeOf(el);
      return !nodes.includes(n) || this.model!.nodes.has(n) || this.model!.edges.has(n);
    });
    this.ex.updateScene({ elements: scene, captureUpdate: CaptureUpdateAction.NEVER });
    this.push(false);
  }

  // ------------------------------------------------------------ view, selection, people

  /** The part of the canvas on screen, in canvas coordinates. */
  viewport(): Box {
    const a = this.ex.getAppState();
    const z = a.zoom.value;
    const r = (v: number) => Math.round(v * 100) / 100;
    return { x: r(-a.scrollX), y: r(-a.scrollY), w: r(a.width / z), h: r(a.height / z) };
  }

  /**
   * Where a w × h shape fits in the view, gap clear of every element (arrows
   * included) and below Excalidraw's toolbar, nearest the middle: its top
   * left in canvas coordinates, or null when the view has no such room.
   */
  freeSpot(w: number, h: number, gap = 24): { x: number; y: number } | null {
    const z = this.ex.getAppState().zoom.value, v = this.viewport();
    const x0 = v.x + 16 / z, y0 = v.y + 80 / z, x1 = v.x + v.w - 16 / z - w, y1 = v.y + v.h - 16 / z - h;
    const boxes = (this.ex.getSceneElements() as El[]).map((el) => getCommonBounds([el] as any))
      .filter(([bx1, by1, bx2, by2]) => bx2 + gap > x0 && bx1 - gap < x1 + w && by2 + gap > y0 && by1 - gap < y1 + h);
    const cx = v.x + v.w / 2 - w / 2, cy = v.y + v.h / 2 - h / 2, step = Math.max(8 / z, Math.min(w, h) / 10);
    const spots: { x: number; y: number; d: number }[] = [];
    for (let y = y0; y <= y1; y += step) for (let x = x0; x <= x1; x += step) spots.push({ x, y, d: (x - cx) ** 2 + (y - cy) ** 2 });
    spots.sort((p, q) => p.d - q.d);
    const free = spots.find((s) => boxes.every(([bx1, by1, bx2, by2]) => s.x + w + gap <= bx1 || s.x >= bx2 + gap || s.y + h + gap <= by1 || s.y >= by2 + gap));
    return free ? { x: Math.round(free.x), y: Math.round(free.y) } : null;
  }

  /** The right edge of everything on the canvas (canvas coordinates), or null for an empty one. */
  contentRight(): number | null {
    const els = this.ex.getSceneElements() as El[];
    return els.length ? getCommonBounds(els as any)[2] : null;
  }

  /** The selected node ids. */
  selection(): string[] {
    const a = this.ex.getAppState();
    return [...new Set(Object.keys(a.selectedElementIds || {}).filter((k) => a.selectedElementIds[k]).map((k) => partOf(k).node))]
      .filter((id) => this.model?.nodes.has(id));
  }

  /** Pans and zooms smoothly so that box fills the view. */
  setViewport(b: Box, ms = 300): void {
    const a = this.ex.getAppState();
    const z1 = Math.min(Math.max(Math.min(a.width / b.w, a.height / b.h), 0.1), 10);
    const sx1 = -b.x + (a.width / z1 - b.w) / 2, sy1 = -b.y + (a.height / z1 - b.h) / 2;
    const z0 = a.zoom.value, sx0 = a.scrollX, sy0 = a.scrollY;
    const t0 = performance.now();
    const step = () => {
      const t = Math.min(1, (performance.now() - t0) / ms), e = t * (2 - t);
      this.ex.updateScene({ appState: { zoom: { value: z0 + (z1 - z0) * e }, scrollX: sx0 + (sx1 - sx0) * e, scrollY: sy0 + (sy1 - sy0) * e },
        captureUpdate: CaptureUpdateAction.NEVER });
      if (t < 1) requestAnimationFrame(step);
    };
    requestAnimationFrame(step);
  }

  /**
   * Pans to the elements of nodes ids, zooming out as far as needed to show
   * all of them (never in beyond 100 %); false when none is on the canvas.
   */
  showNodes(ids: Set<string>): boolean {
    const els = this.ex.getSceneElements().filter((el: El) => ids.has(partOf(el.id).node));
    if (!els.length) return false;
    // The top 100 px are under Excalidraw's toolbar.
    this.ex.scrollToContent(els, { fitToContent: true, viewportZoomFactor: 0.9, animate: true, canvasOffsets: { top: 100 } });
    return true;
  }

  /** Another actor's cursor and selection, from a gesture. */
  gesture(actor: string, cursor: { x: number; y: number }, selection: string[] | undefined): void {
    const col = actorColor(actor);
    const sel: Record<string, boolean> = {};
    for (const id of selection || []) sel[elementId(id)] = true;
    this.collaborators.set(actor, { pointer: { x: cursor.x, y: cursor.y, tool: "pointer" }, button: "up", username: actor.length > 24 ? actor.slice(0, 23) + "…" : actor,
      selectedElementIds: sel, color: { background: col, stroke: col }, id: actor, socketId: actor });
    this.remoteSel.set(actor, { sel: selection || [], t: Date.now() });
    this.ex?.updateScene({ collaborators: new Map(this.collaborators), captureUpdate: CaptureUpdateAction.NEVER });
  }

  /** Cursors older than 15 s fade out. */
  expireCursors(): void {
    let gone = false;
    for (const [a, s] of this.remoteSel) if (Date.now() - s.t > 15000) { this.collaborators.delete(a); this.remoteSel.delete(a); gone = true; }
    if (gone) this.ex?.updateScene({ collaborators: new Map(this.collaborators), captureUpdate: CaptureUpdateAction.NEVER });
  }

  /** The actors whose cursors are shown (for tests and the status bar). */
  people(): string[] {
    return [...this.collaborators.keys()];
  }

  /**
   * Resolves, with the model's revision, once the scene on stage is the
   * model's (Excalidraw started, the snapshot on stage, no commit waiting
   * to be shown) and Excalidraw has drawn the last scene update: seen
   * drawn on its canvas of the shapes (watchDraws), or two frames after
   * the update (Excalidraw draws an update in a later commit). What a
   * screenshot shows is then the version it reports (under a stream of
   * commits, as on stage after 500 ms). Rejects after ms. A hidden page
   * draws no frames: a timer stands in for them. What waits to be shown
   * and drawn is shown and drawn at once (drawNow()), not in the tasks
   * queued for it, which other tasks may hold up for tens of ms at load.
   */
  async drawn(ms = 15000): Promise<number> {
    const t0 = performance.now(), end = t0 + ms;
    const settled = () => !!this.ex && !!this.model && !this.loading && !this.flushQueued && !this.pendingNodes.size && !this.pendingEdges.size;
    this.drawNow();
    for (;;) {
      // Under a stream of commits (one every frame) the last update may
      // never be drawn before the next: after 500 ms the scene on stage is
      // answered as it is.
      if (settled() && (this.isDrawn() || performance.now() - t0 > 500)) return this.model!.rev;
      if (!settled() && performance.now() > end) throw new Error("the canvas is not on screen yet: try again");
      let d = this.nextDraw;
      if (!d) {
        let resolve!: () => void;
        const seen = new Promise<void>((r) => (resolve = r));
        d = this.nextDraw = { seen, resolve };
      }
      await Promise.race([d.seen, nextFrame()]);
    }
  }

  /**
   * What is on screen, as a key: the model's revision, the scene update and
   * the view; "" while the scene is not drawn yet (see drawn()). A picture
   * of the view taken under one key shows what is on screen as long as the
   * key stays the same.
   */
  screenKey(): string {
    const settled = !!this.ex && !!this.model && !this.loading && !this.flushQueued && !this.pendingNodes.size && !this.pendingEdges.size;
    if (!settled || !this.isDrawn()) return "";
    const v = this.viewport();
    return `${this.model!.rev}|${this.updates}|${v.x},${v.y},${v.w},${v.h}`;
  }

  /**
   * Excalidraw's canvas of the shapes on screen (no selection, no cursors:
   * those are on a canvas of their own) when bounds is the view and a
   * picture w pixels wide would not be larger than it; null otherwise.
   * What it shows is the scene as last drawn: call after drawn().
   */
  private onScreen(b: Box, w: number): HTMLCanvasElement | null {
    const c = this.host.querySelector<HTMLCanvasElement>("canvas.excalidraw__canvas.static");
    const v = this.viewport();
    const close = (x: number, y: number) => Math.abs(x - y) <= 0.5;
    if (!c || !c.width || c.width < w || !close(b.x, v.x) || !close(b.y, v.y) || !close(b.w, v.w) || !close(b.h, v.h)) return null;
    return c;
  }

  /**
   * A PNG of bounds (canvas coordinates; default: the view) at most maxSize
   * pixels (default 800 on the long side): the view as it is on screen when
   * bounds is the view, else drawn by Excalidraw's exporter. ids limits it
   * to those nodes (always exported).
   */
  async picture(bounds?: Box | null, maxSize?: { w: number; h: number } | null, ids?: string[]): Promise<{ dataUrl: string; bounds: Box; drawMs: number; encodeMs: number; from: "screen" | "export" }> {
    const t0 = performance.now();
    let els: El[] = this.ex.getSceneElements();
    if (ids?.length) {
      const want = new Set(ids);
      els = els.filter((el) => want.has(nodeOf(el)));
    }
    let b = bounds || this.viewport();
    if (ids?.length && !bounds && els.length) {
      const [x1, y1, x2, y2] = getCommonBounds(els as any);
      b = { x: x1 - 10, y: y1 - 10, w: x2 - x1 + 20, h: y2 - y1 + 20 };
    }
    const mw = maxSize?.w || 800, mh = maxSize?.h || 800;
    const scale = Math.min(mw / b.w, mh / b.h);
    const W = Math.max(1, Math.round(b.w * scale)), H = Math.max(1, Math.round(b.h * scale));
    const out = document.createElement("canvas");
    out.width = W;
    out.height = H;
    const ctx = out.getContext("2d")!;
    const screen = ids?.length ? null : this.onScreen(b, W);
    if (screen) {
      // The view as drawn on screen: one copy at the thumbnail's size, no
      // export of the scene (which draws every shape again, at load
      // hundreds of ms).
      ctx.imageSmoothingQuality = "high";
      ctx.drawImage(screen, 0, 0, screen.width, screen.height, 0, 0, W, H);
      const t1 = performance.now();
      const dataUrl = out.toDataURL("image/png");
      return { dataUrl, bounds: b, drawMs: t1 - t0, encodeMs: performance.now() - t1, from: "screen" };
    }
    const bg = this.ex.getAppState().viewBackgroundColor || "#ffffff";
    ctx.fillStyle = bg;
    ctx.fillRect(0, 0, W, H);
    const visible = els.filter((el) => {
      const [x1, y1, x2, y2] = getCommonBounds([el] as any);
      return x2 >= b.x && x1 <= b.x + b.w && y2 >= b.y && y1 <= b.y + b.h;
    });
    if (visible.length) {
      const pad = 0;
      const [minX, minY] = getCommonBounds(visible as any);
      const shot = await exportToCanvas({ elements: visible as any, files: this.ex.getFiles(), exportPadding: pad,
        appState: { ...this.ex.getAppState(), exportBackground: false, exportWithDarkMode: false },
        getDimensions: (w: number, hh: number) => ({ width: Math.ceil(w * scale), height: Math.ceil(hh * scale), scale }) });
      ctx.drawImage(shot, (minX - pad - b.x) * scale, (minY - pad - b.y) * scale);
    }
    const t1 = performance.now();
    const dataUrl = out.toDataURL("image/png");
    return { dataUrl, bounds: b, drawMs: t1 - t0, encodeMs: performance.now() - t1, from: "export" };
  }

  /** Adds image files (data URLs) the scene's image elements refer to. */
  addImages(nodes: Iterable<CanvasNode>): void {
    const files: any[] = [];
    const have = this.ex.getFiles();
    for (const n of nodes) {
      const url = typeof n.props?.url === "string" ? n.props.url : "";
      if (n.type !== "image" || !IMAGE_DATA_URL.test(url)) continue;
      const id = imageFileId(url);
      if (!have[id]) files.push({ id, dataURL: url, mimeType: url.slice(5, url.indexOf(";")), created: Date.now() });
    }
    if (files.length) this.ex.addFiles(files);
  }

  unmount(): void {
    this.root?.unmount();
    this.root = null;
  }
}

/** The next animation frame, or 100 ms in a hidden page (which draws none). */
function nextFrame(): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, 100);
    requestAnimationFrame(() => { clearTimeout(t); resolve(); });
  });
}

/**
 * Rebuilt elements keep the fractional index Excalidraw gave their previous
 * version: a changed shape then costs Excalidraw no re-indexing of the scene.
 */
function keepIndices(els: El[], prev: El[] | undefined): void {
  if (!prev) return;
  for (const el of els) {
    const old = prev.find((p) => p.id === el.id);
    if (old?.index) el.index = old.index;
  }
}

/** A planned command with a new id. */
function asCmd(p: Planned): Cmd {
  return { id: newCmdId(), type: p.type, args: p.args, nodes: p.ids, fields: p.fields };
}

/** Element fields an in-place update leaves alone (Excalidraw's bookkeeping and the arrows bound to a shape). */
const IN_PLACE_SKIP = new Set(["id", "type", "version", "versionNonce", "updated", "index", "seed", "boundElements", "isDeleted"]);

/** An element's part of sceneVersion. */
function contribution(el: El): number {
  return (el.version * 31 + (el.versionNonce & 1023)) | 0;
}

/** Fits the bound labels among els to their containers; true when one was sized before its font loaded. */
function fitLabels(els: El[]): boolean {
  let estimated = false;
  for (const el of els) {
    if (el.containerId) {
      const box = els.find((x) => x.id === el.containerId);
      if (box && !fitLabel(el, box)) estimated = true;
    } else if (el.type === "text" && el.autoResize !== false && !el.angle && !partOf(el.id).part && !fitText(el)) estimated = true;
  }
  return estimated;
}

/**
 * Sizes an unturned text whose width follows its text (autoSize) to its
 * lines, as Excalidraw does on edits (a node's w, say the server's default
 * for a text written without one, would cut it off), from its left edge.
 * False when its font has not loaded yet.
 */
function fitText(t: El): boolean {
  const { width, exact } = textMeasure(t.fontSize, t.fontFamily);
  const lines = String(t.originalText ?? t.text).split("\n");
  t.width = Math.max(1, ...lines.map(width));
  t.height = lines.length * t.fontSize * (t.lineHeight || 1.25);
  return exact;
}

/**
 * Wraps and centres a bound label in its container (Excalidraw does it on
 * edits). False when its font has not loaded yet: the size is an estimate.
 */
function fitLabel(t: El, box: El): boolean {
  const lines = String(t.text).split("\n");
  const lh = t.fontSize * (t.lineHeight || 1.25);
  // As Excalidraw bounds a label: an arrow's at 70 % of its length, but at
  // least 11 em; a shape's within its sides.
  const inner = box.type === "arrow" ? Math.max(0.7 * box.width, 11 * t.fontSize) : Math.max(box.width - 10, t.fontSize);
  const { width, exact } = textMeasure(t.fontSize, t.fontFamily);
  const wrapped: string[] = [];
  for (const l of lines) {
    let rest = l;
    while (rest.length > 1 && width(rest) > inner) {
      let fit = 1; // the longest prefix that fits (at least one character)
      for (let lo = 2, hi = rest.length - 1; lo <= hi;) {
        const mid = (lo + hi) >> 1;
        if (width(rest.slice(0, mid)) <= inner) { fit = mid; lo = mid + 1; } else hi = mid - 1;
      }
      const space = rest.lastIndexOf(" ", fit);
      const cut = space > 0 ? space : fit;
      wrapped.push(rest.slice(0, cut));
      rest = rest.slice(cut).replace(/^ /, "");
    }
    wrapped.push(rest);
  }
  const maxLines = Math.max(1, Math.floor((box.height - 10) / lh));
  const shown = t.customData?.readOnly ? wrapped.slice(0, maxLines) : wrapped;
  t.text = shown.join("\n");
  // Excalidraw draws a text element into a box of its width: one narrower
  // than the text cuts it off (a document card's longest line, say).
  t.width = Math.min(inner, Math.max(...shown.map(width)));
  t.height = shown.length * lh;
  t.x = t.textAlign === "left" ? box.x + 5 : box.x + (box.width - t.width) / 2;
  t.y = t.verticalAlign === "top" ? box.y + 5 : box.y + (box.height - t.height) / 2;
  t.angle = box.angle;
  return exact;
}

const FAMILY_NAMES = new Map(Object.entries(FONT_FAMILY).map(([name, n]) => [n as number, name]));
const loadedFamilies = new Set<string>(); // font families seen loaded (a loaded font stays loaded)
// The font faces are looked over again only after a load finished (the
// page registers hundreds of them: once per label, a 20,000-shape canvas
// spent seconds in it). This listener is added before any view's refit.
let fontsChanged = true;
/** Widths measured, by font and line (a canvas repeats its labels); cleared when full or when a font loaded (a face of more glyphs). */
const measured = new Map<string, number>();
const MEASURED_MAX = 50000;
document.fonts?.addEventListener?.("loadingdone", () => { fontsChanged = true; measured.clear(); });
let measureCtx: CanvasRenderingContext2D | null | undefined;

/**
 * Measures lines of text in Excalidraw's font family (a FONT_FAMILY number)
 * at size px, as Excalidraw draws them (exact). Until that font has loaded
 * (or without a canvas) it over-estimates, 0.65 em a character, rather than
 * cut text off.
 */
function textMeasure(size: number, family: number): { width: (line: string) => number; exact: boolean } {
  measureCtx ??= document.createElement("canvas").getContext("2d");
  const name = FAMILY_NAMES.get(family) || "Excalifont";
  const ctx = measureCtx;
  // fonts.check() is also true for a family no font face is registered for yet.
  if (!loadedFamilies.has(name) && fontsChanged) {
    fontsChanged = false;
    document.fonts?.forEach((f) => { if (f.status === "loaded") loadedFamilies.add(f.family.replace(/"/g, "")); });
  }
  if (!ctx || !loadedFamilies.has(name)) return { width: (line) => line.length * size * 0.65, exact: false };
  const font = `${size}px "${name}"`;
  return {
    width: (line) => {
      const key = font + "\n" + line;
      let w = measured.get(key);
      if (w === undefined) {
        ctx.font = font;
        w = Math.ceil(ctx.measureText(line).width);
        if (measured.size >= MEASURED_MAX) measured.clear();
        measured.set(key, w);
      }
      return w;
    },
    exact: true,
  };
}

function sceneVersion(els: readonly El[]): number {
  let v = 0;
  for (const el of els) v = (v + contribution(el)) | 0;
  return v;
}
