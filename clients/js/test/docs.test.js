// docEdit against a real canvasd: for every pair of texts (LF and CRLF
// documents, with and without a final newline, empty, blank lines), the
// command it makes turns the server's text into the edited one, and is a
// line command whenever the line model can express the edit.

import { test } from "node:test";
import assert from "node:assert/strict";
import { docEdit } from "../dist/index.js";
import { serverForTests } from "./harness.js";

const env = serverForTests();

const lf = (s) => s.replace(/\r\n/g, "\n");

/** Creates a doc holding text, applies docEdit(text → edited) and returns the command and the server's text after it. */
async function roundTrip(canvasId, id, text, edited) {
  await env.c.apply(canvasId, "create_node", { id, type: "doc", name: id, props: { text } });
  const cmd = docEdit(id, text, edited);
  if (cmd) await env.c.apply(canvasId, cmd.type, cmd.args);
  const st = await env.c.getState(canvasId);
  return { cmd, got: st.state.nodes.find((n) => n.id === id).props.text ?? "" };
}

test("docEdit: line commands where the line model allows, the whole text otherwise; the server ends with the edited text", async () => {
  const canvasId = (await env.c.createCanvas({ title: "docEdit" })).canvas_id;
  const cases = [
    ["", "hi"], ["", "hi\n"], ["", "\n"], ["# Notes\n", "# Notes\nhello\n"], ["a\nb\n", ""], ["a", ""],
    ["a\nb\n", "a\nB\n"], ["a\nb", "a\nB"], ["a", "a\nb"], ["a\nb", "a"], ["a\n\n", "a\n"], ["a\nb\n", "x"],
    ["a\nb\n", "a\nb"], ["a\nb", "a\nb\n"], ["a\nb", "a\nb\n\n"], ["a\nb\nc\n", "a\nc\n"], ["a\nb\nc\n", "a\nb\nb\nc\n"],
    ["a\n\nb\n", "a\n\n\nb\n"], ["a\r\nb\r\nc\r\n", "a\nB\nc\n"], ["a\r\nb\r\n", "a\nb\nc\n"], ["a\r\nb", "a\nb\n"],
    ["x\ry\n", "x\ry\nz\n"],
  ];
  // Random pairs over a small alphabet hit the corners (blank lines, final newlines) often.
  let seed = 11;
  const rnd = (n) => ((seed = (seed * 1103515245 + 12345) >>> 0) % n);
  const text = () => Array.from({ length: rnd(7) }, () => ["a", "b", "\n", "\n", "\r\n"][rnd(5)]).join("");
  for (let i = 0; i < 60; i++) {
    const t = text();
    cases.push([t, rnd(3) === 0 ? text() : t.replace(/a/, "x").replace(/\n$/, rnd(2) ? "" : "\n")]);
  }
  let lineCommands = 0;
  for (const [i, [from, to]] of cases.entries()) {
    const { cmd, got } = await roundTrip(canvasId, "d" + i, from, to);
    assert.equal(lf(got), lf(to), `${JSON.stringify(from)} → ${JSON.stringify(to)} with ${JSON.stringify(cmd)}`);
    if (lf(from) === lf(to)) assert.equal(cmd, null);
    if (cmd && cmd.type !== "update_node") lineCommands++;
    const lineModel = from !== "" && to !== "" && !/\r(?!\n)/.test(from + to) && lf(from).endsWith("\n") === lf(to).endsWith("\n");
    if (cmd && (lineModel || from === "" || to === "")) assert.notEqual(cmd.type, "update_node", `${JSON.stringify(from)} → ${JSON.stringify(to)}`);
  }
  assert.ok(lineCommands > 40, `${lineCommands} line commands`);
});

test("docEdit: a CRLF document keeps its line ending in the lines a command writes, and in a whole text", async () => {
  const canvasId = (await env.c.createCanvas({ title: "docEdit crlf" })).canvas_id;
  let r = await roundTrip(canvasId, "c1", "a\r\nb\r\n", "a\nB\nc\n");
  assert.equal(r.cmd.type, "replace_lines");
  assert.equal(r.got, "a\r\nB\r\nc\r\n");
  r = await roundTrip(canvasId, "c2", "a\r\nb\r\n", "a\nb");
  assert.equal(r.cmd.type, "update_node");
  assert.equal(r.got, "a\r\nb");
  assert.deepEqual(docEdit("c3", "a\r\nb", "a\nb"), null);
  assert.deepEqual(docEdit("c4", "a\nb\nc\n", "a\nB\nc\n"), { type: "replace_lines", args: { node_id: "c4", start_line: 2, end_line: 2, new_content: "B\n" } });
});
