// Runs "eval" invokes for the canvas host shell inside a sandboxed, opaque
// origin (no cookies, storage or API credentials), answering by postMessage.
"use strict";
window.addEventListener("message", function (e) {
  var m = e.data;
  if (!m || m.type !== "canvas-eval" || typeof m.id !== "string") return;
  function reply(ok, value) {
    var out;
    try { out = JSON.parse(JSON.stringify(value === undefined ? null : value)); }
    catch (err) { out = String(value); }
    e.source.postMessage({ type: "canvas-eval-result", id: m.id, ok: ok, value: out }, "*");
  }
  try {
    var r = (0, eval)(String(m.js));
    Promise.resolve(r).then(function (v) { reply(true, v); }, function (err) { reply(false, String(err && err.message || err)); });
  } catch (err) {
    reply(false, String(err && err.message || err));
  }
});
