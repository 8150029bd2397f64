// canvasd A2UI v0.8 shell: renders the standard catalog from the session's
// /sse/host/{session} stream and posts userActions back. No build step, no
// external network, no innerHTML with agent data (text only).
"use strict";
(function () {
  var session = document.querySelector('meta[name="canvas-session"]').content;
  var base = document.querySelector('meta[name="canvas-base"]').content; // /host/{session}/__canvas__/
  var params = new URLSearchParams(location.search);
  // The token: opened through a page ticket (/host/{session}/~{ticket}/__canvas__/),
  // the server put it in the URL fragment, which is never sent to a server;
  // "root=1" there means this shell stands in for the session root.
  // Older links carry it as ?access_token=.
  var frag = new URLSearchParams(location.hash.replace(/^#/, ""));
  var token = frag.get("access_token") || params.get("access_token") || "";
  var standsForRoot = frag.get("root") === "1";
  var ticketMatch = location.pathname.match(/^\/host\/[^\/]+\/(~[^\/]+)\//);
  var ticketBase = ticketMatch ? "/host/" + session + "/" + ticketMatch[1] + "/" : ""; // session files, read with the ticket
  var enc = encodeURIComponent;
  var surfaces = new Map(); // id -> {id, components: Map, root, rendering, data, styles, el, tabs: Map}
  var main = document.getElementById("surfaces");
  var statusEl = document.getElementById("status");
  var pageFrame = document.getElementById("page");
  var evalFrame = document.getElementById("evalframe");
  var actionsSent = 0;

  function setStatus(state, text) { statusEl.dataset.state = state; statusEl.textContent = text; }
  function withToken(url) {
    if (!token) return url;
    return url + (url.indexOf("?") < 0 ? "?" : "&") + "access_token=" + enc(token);
  }
  function headers() {
    var h = { "Content-Type": "application/json" };
    if (token) h.Authorization = "Bearer " + token;
    return h;
  }

  // ---- data model (JSON pointer paths; templates bind relative paths) ----
  function tokens(path) {
    path = String(path || "").replace(/^\/+|\/+$/g, "");
    if (!path) return [];
    return path.split("/").map(function (t) { return t.replace(/~1/g, "/").replace(/~0/g, "~"); });
  }
  function absPath(path, scope) {
    if (String(path).charAt(0) === "/" || !scope) return tokens(path);
    return scope.concat(tokens(path));
  }
  function getAt(data, toks) {
    var cur = data;
    for (var i = 0; i < toks.length; i++) {
      if (cur === null || typeof cur !== "object") return undefined;
      cur = cur[toks[i]];
    }
    return cur;
  }
  function setAt(s, toks, value) {
    if (toks.length === 0) { s.data = value && typeof value === "object" ? value : {}; return; }
    var cur = s.data;
    for (var i = 0; i < toks.length - 1; i++) {
      if (cur[toks[i]] === null || typeof cur[toks[i]] !== "object") cur[toks[i]] = {};
      cur = cur[toks[i]];
    }
    cur[toks[toks.length - 1]] = value;
  }
  function fromContents(list) {
    var out = {};
    (list || []).forEach(function (e) {
      if ("valueString" in e) out[e.key] = e.valueString;
      else if ("valueNumber" in e) out[e.key] = e.valueNumber;
      else if ("valueBoolean" in e) out[e.key] = e.valueBoolean;
      else if ("valueMap" in e) out[e.key] = fromContents(e.valueMap);
    });
    return out;
  }
  function literalOf(b) {
    if (!b || typeof b !== "object") return undefined;
    if ("literalString" in b) return b.literalString;
    if ("literalNumber" in b) return b.literalNumber;
    if ("literalBoolean" in b) return b.literalBoolean;
    if ("literalArray" in b) return b.literalArray;
    return undefined;
  }
  function resolve(s, b, scope) {
    if (!b || typeof b !== "object") return undefined;
    if (typeof b.path === "string") {
      var v = getAt(s.data, absPath(b.path, scope));
      return v === undefined ? literalOf(b) : v;
    }
    return literalOf(b);
  }
  function bindSet(s, b, scope, value) {
    if (b && typeof b.path === "string") setAt(s, absPath(b.path, scope), value);
  }
  // Path + literal is the initialization shorthand: seed the model once per definition.
  function initShorthand(s, props) {
    Object.keys(props || {}).forEach(function (k) {
      var b = props[k];
      if (b && typeof b === "object" && typeof b.path === "string" && b.path.charAt(0) === "/" && literalOf(b) !== undefined) {
        setAt(s, tokens(b.path), literalOf(b));
      }
    });
  }

  // ---- messages ----
  function surface(id) {
    var s = surfaces.get(id);
    if (!s) {
      s = { id: id, components: new Map(), root: "", rendering: false, data: {}, styles: null, el: null, tabs: new Map() };
      surfaces.set(id, s);
    }
    return s;
  }
  function handle(msg) {
    if (msg.surfaceUpdate) {
      var s = surface(msg.surfaceUpdate.surfaceId);
      msg.surfaceUpdate.components.forEach(function (c) {
        s.components.set(c.id, c);
        var type = Object.keys(c.component)[0];
        initShorthand(s, c.component[type]);
      });
      if (s.rendering) render(s);
    } else if (msg.dataModelUpdate) {
      var d = msg.dataModelUpdate, s2 = surface(d.surfaceId);
      setAt(s2, tokens(d.path), fromContents(d.contents));
      if (s2.rendering) render(s2);
    } else if (msg.beginRendering) {
      var b = msg.beginRendering, s3 = surface(b.surfaceId);
      s3.root = b.root; s3.rendering = true; s3.styles = b.styles || null;
      render(s3);
    } else if (msg.deleteSurface) {
      var s4 = surfaces.get(msg.deleteSurface.surfaceId);
      if (s4 && s4.el) s4.el.remove();
      surfaces.delete(msg.deleteSurface.surfaceId);
    }
    document.getElementById("empty").hidden = main.querySelector(".a2ui-surface") !== null;
  }

  // ---- rendering ----
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function render(s) {
    if (!s.el) {
      s.el = el("section", "a2ui-surface");
      s.el.dataset.surfaceId = s.id;
      main.appendChild(s.el);
    }
    if (s.styles && typeof s.styles.primaryColor === "string" && /^#[0-9a-fA-F]{6}$/.test(s.styles.primaryColor)) {
      s.el.style.setProperty("--primary", s.styles.primaryColor);
    }
    if (s.styles && typeof s.styles.font === "string") s.el.style.fontFamily = s.styles.font;
    var tree = build(s, s.root, null, []);
    s.el.replaceChildren(tree);
  }
  function childrenOf(s, spec, scope, stack) {
    var out = [];
    if (!spec) return out;
    if (Array.isArray(spec.explicitList)) {
      spec.explicitList.forEach(function (id) { out.push(build(s, id, scope, stack)); });
    } else if (spec.template) {
      var p = absPath(spec.template.dataBinding, scope);
      var items = getAt(s.data, p);
      if (items && typeof items === "object") {
        Object.keys(items).forEach(function (k) { out.push(build(s, spec.template.componentId, p.concat([k]), stack)); });
      }
    }
    return out;
  }
  var icons = { accountCircle: "👤", add: "+", arrowBack: "←", arrowForward: "→", attachFile: "📎", calendarToday: "📅",
    call: "📞", camera: "📷", check: "✓", close: "✕", "delete": "🗑", download: "⬇", edit: "✎", event: "📅", error: "⚠",
    favorite: "♥", favoriteOff: "♡", folder: "📁", help: "?", home: "⌂", info: "ℹ", locationOn: "📍", lock: "🔒",
    lockOpen: "🔓", mail: "✉", menu: "☰", moreVert: "⋮", moreHoriz: "⋯", notificationsOff: "🔕", notifications: "🔔",
    payment: "💳", person: "👤", phone: "📱", photo: "🖼", print: "🖨", refresh: "↻", search: "🔍", send: "➤",
    settings: "⚙", share: "⇪", shoppingCart: "🛒", star: "★", starHalf: "⯨", starOff: "☆", upload: "⬆",
    visibility: "👁", visibilityOff: "◌", warning: "⚠" };
  var justify = { start: "flex-start", center: "center", end: "flex-end", spaceBetween: "space-between",
    spaceAround: "space-around", spaceEvenly: "space-evenly" };
  var align = { start: "flex-start", center: "center", end: "flex-end", stretch: "stretch" };
  function safeURL(u) {
    u = String(u || "");
    return /^(https?:|data:image\/|blob:|\/|\.\/|[A-Za-z0-9_\-][^:]*$)/.test(u) ? u : "";
  }

  function build(s, id, scope, stack) {
    var c = s.components.get(id);
    if (!c) return el("span", "a2ui-error", "missing component " + id);
    if (stack.indexOf(id) >= 0 || stack.length > 64) return el("span", "a2ui-error", "component cycle at " + id);
    stack = stack.concat([id]);
    var type = Object.keys(c.component)[0], p = c.component[type] || {}, e;
    var str = function (b) { var v = resolve(s, b, scope); return v === undefined || v === null ? "" : String(v); };
    switch (type) {
      case "Text": {
        var hint = p.usageHint || "body";
        e = el(/^h[1-5]$/.test(hint) ? hint : "p", "a2ui-text " + hint, str(p.text));
        break;
      }
      case "Image":
        e = el("img", "a2ui-image " + (p.usageHint || ""));
        e.src = safeURL(str(p.url)); e.alt = ""; if (p.fit) e.style.objectFit = p.fit;
        break;
      case "Icon": {
        var name = str(p.name);
        e = el("span", "a2ui-icon", icons[name] || name); e.title = name; e.setAttribute("aria-label", name);
        break;
      }
      case "Video":
      case "AudioPlayer": {
        // Plain fallback: a link to the media, no player.
        e = el("span", "a2ui-media");
        e.appendChild(el("span", null, type === "Video" ? "🎞 Video:" : "🔊 Audio:"));
        var url = safeURL(str(p.url)), a = el("a", null, type === "AudioPlayer" && p.description ? str(p.description) : url);
        if (url) { a.href = url; a.target = "_blank"; a.rel = "noopener noreferrer"; }
        e.appendChild(a);
        break;
      }
      case "Row":
      case "Column":
      case "List": {
        e = el("div", "a2ui-" + type.toLowerCase() + (p.direction === "horizontal" ? " horizontal" : ""));
        if (p.distribution) e.style.justifyContent = justify[p.distribution] || "";
        if (p.alignment) e.style.alignItems = align[p.alignment] || "";
        childrenOf(s, p.children, scope, stack).forEach(function (ch) { e.appendChild(ch); });
        break;
      }
      case "Card":
        e = el("div", "a2ui-card"); e.appendChild(build(s, p.child, scope, stack));
        break;
      case "Tabs": {
        e = el("div", "a2ui-tabs");
        var bar = el("div", "tabbar"), panel = el("div", "tabpanel"), items = p.tabItems || [];
        var sel = Math.min(s.tabs.get(id) || 0, Math.max(items.length - 1, 0));
        items.forEach(function (t, i) {
          var b = el("button", null, str(t.title));
          b.type = "button"; b.setAttribute("role", "tab"); b.setAttribute("aria-selected", String(i === sel));
          b.addEventListener("click", function () { s.tabs.set(id, i); render(s); });
          bar.appendChild(b);
        });
        if (items[sel]) panel.appendChild(build(s, items[sel].child, scope, stack));
        e.appendChild(bar); e.appendChild(panel);
        break;
      }
      case "Divider":
        e = p.axis === "vertical" ? el("div", "a2ui-divider vertical") : el("hr", "a2ui-divider");
        break;
      case "Modal": {
        e = el("div", "a2ui-modal-entry");
        var dlg = el("dialog", "a2ui-modal"), close = el("button", "a2ui-button", "Close");
        dlg.appendChild(build(s, p.contentChild, scope, stack));
        close.type = "button"; close.addEventListener("click", function () { dlg.close(); });
        dlg.appendChild(close);
        e.appendChild(build(s, p.entryPointChild, scope, stack));
        e.addEventListener("click", function (ev) { if (!dlg.open && !dlg.contains(ev.target)) dlg.showModal(); });
        e.appendChild(dlg);
        break;
      }
      case "Button": {
        e = el("button", "a2ui-button" + (p.primary ? " primary" : ""));
        e.type = "button";
        e.appendChild(build(s, p.child, scope, stack));
        e.addEventListener("click", function () { sendAction(s, id, p.action, scope, e); });
        break;
      }
      case "CheckBox": {
        e = el("label", "a2ui-field a2ui-checkbox");
        e.style.flexDirection = "row";
        var cb = el("input"); cb.type = "checkbox"; cb.checked = !!resolve(s, p.value, scope);
        cb.addEventListener("change", function () { bindSet(s, p.value, scope, cb.checked); });
        e.appendChild(cb); e.appendChild(el("span", null, str(p.label)));
        break;
      }
      case "TextField": {
        e = el("label", "a2ui-field");
        e.appendChild(el("span", null, str(p.label)));
        var t = p.textFieldType || "shortText", input;
        if (t === "longText") input = el("textarea");
        else { input = el("input"); input.type = { number: "number", date: "date", obscured: "password" }[t] || "text"; }
        input.value = str(p.text);
        var re = null;
        try { if (p.validationRegexp) re = new RegExp("^(?:" + p.validationRegexp + ")$"); } catch (err) { re = null; }
        input.addEventListener("input", function () {
          bindSet(s, p.text, scope, input.value);
          e.classList.toggle("invalid", !!re && !re.test(input.value));
        });
        e.appendChild(input);
        break;
      }
      case "DateTimeInput": {
        e = el("label", "a2ui-field");
        var di = el("input");
        di.type = p.enableDate === false ? "time" : (p.enableTime ? "datetime-local" : "date");
        di.value = str(p.value);
        di.addEventListener("change", function () { bindSet(s, p.value, scope, di.value); });
        e.appendChild(di);
        break;
      }
      case "MultipleChoice": {
        e = el("fieldset", "a2ui-field a2ui-choice");
        var selected = resolve(s, p.selections, scope);
        selected = Array.isArray(selected) ? selected.slice() : (selected && typeof selected === "object" ? Object.values(selected) : []);
        var single = p.maxAllowedSelections === 1;
        (p.options || []).forEach(function (o) {
          var row = el("label"), box = el("input");
          box.type = single ? "radio" : "checkbox"; box.name = "mc-" + id; box.value = o.value;
          box.checked = selected.indexOf(o.value) >= 0;
          box.addEventListener("change", function () {
            if (single) selected = [o.value];
            else if (box.checked) {
              if (p.maxAllowedSelections && selected.length >= p.maxAllowedSelections) { box.checked = false; return; }
              selected.push(o.value);
            } else selected = selected.filter(function (v) { return v !== o.value; });
            bindSet(s, p.selections, scope, selected.slice());
          });
          row.appendChild(box); row.appendChild(el("span", null, str(o.label)));
          e.appendChild(row);
        });
        break;
      }
      case "Slider": {
        e = el("label", "a2ui-field");
        var sl = el("input"); sl.type = "range";
        if (typeof p.minValue === "number") sl.min = p.minValue;
        if (typeof p.maxValue === "number") sl.max = p.maxValue;
        sl.value = str(p.value);
        var out = el("output", null, sl.value);
        sl.addEventListener("input", function () { out.textContent = sl.value; bindSet(s, p.value, scope, Number(sl.value)); });
        e.appendChild(sl); e.appendChild(out);
        break;
      }
      default:
        e = el("span", "a2ui-error", "unsupported component " + type);
    }
    e.dataset.componentId = id;
    if (typeof c.weight === "number") e.style.flexGrow = String(c.weight);
    return e;
  }

  function sendAction(s, id, action, scope, button) {
    var ctx = {};
    ((action && action.context) || []).forEach(function (kv) { ctx[kv.key] = resolve(s, kv.value, scope); });
    var body = { userAction: { name: action.name, surfaceId: s.id, sourceComponentId: id,
      timestamp: new Date().toISOString(), context: ctx } };
    button.disabled = true;
    fetch("/api/host/" + enc(session) + "/actions", { method: "POST", headers: headers(), body: JSON.stringify(body) })
      .then(function (r) {
        actionsSent++;
        document.body.dataset.actionsSent = String(actionsSent);
        setStatus(r.ok ? "open" : "error", r.ok ? "action sent: " + action.name : "action failed: HTTP " + r.status);
      })
      .catch(function (err) { setStatus("error", "action failed: " + err); })
      .then(function () { button.disabled = false; });
  }

  // ---- present, reload, invoke ----
  function present(p) {
    if (p.action === "hide") { document.body.classList.add("hidden-panel"); return; }
    document.body.classList.remove("hidden-panel");
    if (p.placement) document.body.dataset.placement = JSON.stringify(p.placement);
    if (p.path && p.path !== "/") {
      // Through the ticket, so the agent-written page in the frame never sees the token.
      var rel = String(p.path).replace(/^\/+/, "");
      pageFrame.src = ticketBase ? ticketBase + rel : withToken("/host/" + enc(session) + "/" + rel);
      pageFrame.hidden = false; main.hidden = true;
    } else if (p.action === "navigate") {
      pageFrame.hidden = true; pageFrame.removeAttribute("src"); main.hidden = false;
    }
  }
  function reload(ev) {
    if (!pageFrame.hidden && pageFrame.src) { pageFrame.src = pageFrame.src; return; }
    if (!/^index\.html?$/.test(ev.path || "")) return;
    // The session root got an index page: show it, without the fragment (the token).
    if (standsForRoot && ticketBase) location.replace(ticketBase);
    else if (location.pathname === "/host/" + session + "/" || location.pathname === ticketBase) {
      location.replace(location.pathname + location.search);
    }
  }
  var evalWaiters = new Map(), evalSeq = 0, evalReady = null;
  function evalInSandbox(js, timeoutMs) {
    if (!evalReady) {
      evalReady = new Promise(function (res) { evalFrame.addEventListener("load", res, { once: true }); });
      evalFrame.src = base + "eval.html";
    }
    return evalReady.then(function () {
      return new Promise(function (res) {
        var id = "e" + (++evalSeq);
        evalWaiters.set(id, res);
        setTimeout(function () { if (evalWaiters.delete(id)) res({ ok: false, value: "eval timed out" }); }, timeoutMs);
        evalFrame.contentWindow.postMessage({ type: "canvas-eval", id: id, js: js }, "*");
      });
    });
  }
  window.addEventListener("message", function (e) {
    var m = e.data;
    if (e.source !== evalFrame.contentWindow || !m || m.type !== "canvas-eval-result") return;
    var res = evalWaiters.get(m.id);
    if (res) { evalWaiters.delete(m.id); res(m); }
  });
  function answer(id, body) {
    return fetch("/api/invoke/" + enc(id), { method: "POST", headers: headers(), body: JSON.stringify(body) });
  }
  function invoke(req) {
    var p = req.payload, work;
    switch (req.action) {
      case "eval": {
        var js = typeof p === "string" ? p : (p && p.js);
        work = evalInSandbox(String(js || ""), Math.max(100, (req.timeout_ms || 10000) - 100))
          .then(function (r) { return r.ok ? { ok: true, result: r.value } : { ok: false, error: r.value }; });
        break;
      }
      case "snapshot":
        work = Promise.resolve({ ok: true, result: {
          kind: "dom", title: document.title, width: innerWidth, height: innerHeight,
          text: main.innerText, html: main.innerHTML, surfaces: Array.from(surfaces.keys()) } });
        break;
      case "a2ui.state":
        work = Promise.resolve({ ok: true, result: Array.from(surfaces.values()).map(function (s) {
          return { surfaceId: s.id, root: s.root, rendering: s.rendering, components: s.components.size, data: s.data };
        }) });
        break;
      default:
        work = Promise.resolve({ ok: false, error: "unsupported action " + req.action + "; the shell handles eval, snapshot, a2ui.state" });
    }
    work.then(function (b) { return answer(req.invoke_id, b); }).catch(function () {});
  }

  // ---- stream ----
  function parse(e) { try { return JSON.parse(e.data); } catch (err) { return null; } }
  var es = new EventSource(withToken("/sse/host/" + enc(session)));
  es.addEventListener("open", function () {
    // The server replays the current surfaces after every (re)connect.
    surfaces.forEach(function (s) { if (s.el) s.el.remove(); });
    surfaces.clear();
    setStatus("open", "connected");
  });
  es.addEventListener("error", function () {
    if (!token) setStatus("error", "no access token: reopen /host/" + session + "/?access_token=<token>");
    else setStatus("error", "disconnected, retrying…");
  });
  es.addEventListener("a2ui", function (e) { var m = parse(e); if (m) handle(m); });
  es.addEventListener("present", function (e) { var m = parse(e); if (m) present(m); });
  es.addEventListener("reload", function (e) { reload(parse(e) || {}); });
  es.addEventListener("invoke", function (e) { var m = parse(e); if (m) invoke(m); });
  window.__canvasHost = { surfaces: surfaces, session: session };
})();
