// The pages of the agent panel's Pages tab: a host session's pages (by
// default the session of the open canvas's id, whose pages talk to its
// agent) in the canvas host's viewer, in a frame beside the canvas. The
// agent opens it (present show or navigate, which reach the canvas's stream
// as host:present) and closes it (hide); a person opens it with the tab or
// by naming a session. The viewer is loaded under a page ticket minted for
// this page's token (GET /api/host/{session}/viewer), so the token never
// goes in a URL, and it follows the session's present, reload, A2UI and
// invoke events itself.

import type { CanvasClient } from "@canvasd/client";
import { h, toast, why } from "./dom";

export class PagesPanel {
  readonly el: HTMLElement;
  private frame: HTMLIFrameElement | null = null;
  private session = "";
  private readonly title: HTMLElement;
  private readonly tabLink: HTMLAnchorElement;
  private seq = 0;

  constructor(private readonly client: CanvasClient) {
    this.title = h("span", { class: "pages-title muted" });
    this.tabLink = h("a", { id: "pages-tab", text: "open in a tab", target: "_blank", rel: "noopener noreferrer", hidden: true });
    this.el = h("div", { id: "pages-view" }, h("div", { class: "row" }, this.title, h("span", { class: "spacer" }), this.tabLink));
  }

  /** The session whose viewer is open ("" when none). */
  get shown(): string {
    return this.frame ? this.session : "";
  }

  /**
   * Shows session's viewer (at page, a path of the session, when it is not
   * open yet: an open viewer follows the agent's navigations itself).
   */
  async open(session: string, page = ""): Promise<void> {
    if (!session || (this.frame && this.session === session)) return;
    const my = ++this.seq;
    this.session = session;
    this.title.textContent = "Host session " + session;
    try {
      const v = await this.client.hostViewer(session, page || undefined);
      if (my !== this.seq) return;
      this.frame?.remove();
      this.frame = h("iframe", { id: "host-frame", title: "the pages of host session " + session, src: v.url });
      this.tabLink.href = v.url;
      this.tabLink.hidden = false;
      this.el.append(this.frame);
    } catch (err) {
      if (my === this.seq) toast("the pages of " + session + " cannot be shown: " + why(err), "bad");
    }
  }

  /** Closes the viewer. */
  close(): void {
    this.seq++;
    this.frame?.remove();
    this.frame = null;
    this.session = "";
    this.title.textContent = "";
    this.tabLink.hidden = true;
  }
}
