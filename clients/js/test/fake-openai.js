// A local server speaking the OpenAI chat-completions streaming protocol
// (server-sent `data:` chunks, then `data: [DONE]`), as canvasd's own Go
// tests use: it answers each request with the next scripted reply and
// records the requests and when it wrote the first token.

import http from "node:http";

/**
 * Starts the fake model. replies: [{chunks: [string], delayMs?}] — each
 * chunk is one delta of the assistant's content, delayMs apart. Resolves to
 * {url (the OpenAI base URL, .../v1), requests, firstTokenAt: [ms per
 * request], close()}.
 */
export async function startFakeOpenAI(replies) {
  const requests = [];
  const firstTokenAt = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (b) => (body += b));
    req.on("end", async () => {
      if (req.url !== "/v1/chat/completions" || req.headers.authorization !== "Bearer sk-test") {
        res.writeHead(401, { "Content-Type": "application/json" });
        return res.end(JSON.stringify({ error: { message: "bad path or key" } }));
      }
      const parsed = JSON.parse(body);
      const i = requests.length;
      requests.push(parsed);
      const rep = replies[i] ?? { chunks: ['{"actions":[]}'] };
      res.writeHead(200, { "Content-Type": "text/event-stream" });
      const chunk = (delta, finish) => res.write("data: " + JSON.stringify({
        id: `chatcmpl-${i}`, object: "chat.completion.chunk", created: 1, model: parsed.model,
        choices: [{ index: 0, delta, finish_reason: finish ?? null }],
      }) + "\n\n");
      chunk({ role: "assistant" });
      for (const [k, c] of rep.chunks.entries()) {
        if (k > 0 && rep.delayMs) await new Promise((r) => setTimeout(r, rep.delayMs));
        if (res.destroyed) return;
        if (k === 0) firstTokenAt[i] = Date.now();
        chunk({ content: c });
      }
      chunk({}, "stop");
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${server.address().port}/v1`,
    requests,
    firstTokenAt,
    close: () => new Promise((r) => {
      server.closeAllConnections();
      server.close(r);
    }),
  };
}

/** The image URLs of a chat-completions request's messages. */
export function imagesOf(request) {
  const out = [];
  for (const m of request.messages ?? []) {
    if (Array.isArray(m.content)) for (const p of m.content) if (p.type === "image_url") out.push(p.image_url.url);
  }
  return out;
}

/**
 * A reply of three actions, delayMs apart: a note "first" (complete in the
 * first delta), a set_viewport, a note "second".
 */
export function notesAndViewportReply(delayMs) {
  const note = (id, x, text) => JSON.stringify({ name: "create_shape", params: { id, type: "note", x, y: 0, props: { text } } });
  return {
    chunks: [
      `{"actions":[${note("first", 0, "first")}`,
      `,{"name":"set_viewport","params":{"x":100,"y":50,"w":800,"h":600}}`,
      `,${note("second", 300, "second")}]}`,
    ],
    delayMs,
  };
}
