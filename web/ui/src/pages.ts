// The pages panel: the agent's pages of the open canvas (host session of the
// canvas's id) in the canvas host's viewer, in a frame beside the canvas.
// The agent opens it (present show or navigate, which reach the canvas's
// stream as host:present), closes it (hide), and a person may open it with
// the Pages button. The viewer is loaded under a page ticket minted for this
// page's token (GET /api/host/{session}/viewer): the token never goes in a
// URL, and the viewer follows the session's present, reload, A2UI and
// invoke events itself.

import type { CanvasClient, HostPresentNotice } from "@canvasd/client";
import { h, toast, why } from "./dom";

export class PagesPanel {
  readonly el: HTMLElement;
  private frame: HTMLIFrameElement | null = null;
  private session = "";
  private readonly title: HTMLElement;
  private readonly tabLink: HTMLAnchorElement;
  private seq = 0;

  constructor(private readonly client: CanvasClient) {
    this.title = h("span", { class: "pages-title", text: "Pages" });
    this.tabLink = h("a", { id: "pages-tab", text: "open in a tab", target: "_blank", rel: "noopener noreferrer" });
    this.el = h("section", { id: "pages-panel", hidden: true, "aria-label": "The agent's pages" },
      h("header", { class: "pages-bar" }, this.title, h("span", { class: "spacer" }), this.tabLink,
        h("button", { type: "button", id: "pages-close", text: "×", title: "Close the pages panel", onclick: () => this.close() })));
  }

  /** The session the panel shows ("" when closed). */
  get shown(): string {
    return this.el.hidden ? "" : this.session;
  }

  /** Follows a host:present event of the open canvas. */
  present(p: HostPresentNotice): void {
    if (p.action === "hide") this.close();
    else void this.open(p.session, p.path && p.path !== "/" ? p.path : "");
  }

  /**
   * Shows session's viewer (at page, a path of the session, when it is not
   * open yet; an open viewer follows the agent's navigations itself).
   */
  async open(session: string, page = ""): Promise<void> {
    if (!session) return;
    if (this.frame && this.session === session) {
      this.el.hidden = false;
      return;
    }
    const my = ++this.seq;
    this.session = session;
    this.title.textContent = "Pages · " + session;
    this.el.hidden = false;
    try {
      const v = await this.client.hostViewer(session, page || undefined);
      if (my !== this.seq) return;
      this.frame?.remove();
      this.frame = h("iframe", { id: "pages-frame", title: "the agent's pages of " + session, src: v.url });
      this.tabLink.href = v.url;
      this.el.append(this.frame);
    } catch (err) {
      if (my === this.seq) toast("the pages of " + session + " cannot be shown: " + why(err), "bad");
    }
  }

  /** Closes the panel and its viewer. */
  close(): void {
    this.seq++;
    this.el.hidden = true;
    this.frame?.remove();
    this.frame = null;
    this.session = "";
  }
}
