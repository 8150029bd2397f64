// Turning an edit of a document's text into one document command.

import { splitLines } from "./model.js";
import type { CommandArgs } from "./types.js";

/** The commands docEdit returns. */
type DocCommandType = "replace_lines" | "insert_lines" | "delete_lines" | "update_node";

/** A command that edits a doc node: its type and that type's args (send it with CanvasClient.apply). */
export type DocCommand = { [T in DocCommandType]: { type: T; args: CommandArgs<T> } }[DocCommandType];

/**
 * docEdit returns the command that turns doc node nodeId's text from before
 * (the text as the server has it) into after, or null when they are the same
 * text. It is one line command covering the lines that differ (replace_lines,
 * insert_lines or delete_lines, with the server's 1-based inclusive line
 * numbers) whenever the server's line model can express the edit; an edit
 * that adds or removes the final newline, or a document holding a lone CR,
 * is sent as update_node with the whole text.
 *
 * Line breaks compare equal as "\n" or "\r\n", as an editor that shows lines
 * does (CodeMirror, for one, hands back "\n"): the server writes the lines a
 * command adds with the document's own line ending, and the whole text of an
 * update_node gets it too.
 */
export function docEdit(nodeId: string, before: string, after: string): DocCommand | null {
  const a = before.replace(/\r\n/g, "\n");
  const b = after.replace(/\r\n/g, "\n");
  if (a === b) return null;
  const whole = (): DocCommand => {
    const eol = /\r\n/.test(before.slice(0, before.indexOf("\n") + 1)) ? "\r\n" : "\n";
    return { type: "update_node", args: { id: nodeId, props: { text: eol === "\n" ? b : b.replace(/\n/g, eol) } } };
  };
  if (a.includes("\r") || b.includes("\r")) return whole(); // a lone CR is not a line break to the server
  if (a === "") return { type: "insert_lines", args: { node_id: nodeId, insert_after_line: 0, content: b } };
  const al = splitLines(a); // lines with their "\n": equal units are equal lines, terminated or not alike
  if (b === "") return { type: "delete_lines", args: { node_id: nodeId, start_line: 1, end_line: al.length } };
  if (a.endsWith("\n") !== b.endsWith("\n")) return whole(); // line commands keep the final newline as it is
  const bl = splitLines(b);
  let pre = 0;
  while (pre < al.length && pre < bl.length && al[pre] === bl[pre]) pre++;
  let suf = 0;
  while (suf < al.length - pre && suf < bl.length - pre && al[al.length - 1 - suf] === bl[bl.length - 1 - suf]) suf++;
  const removed = al.length - pre - suf;
  const added = bl.slice(pre, bl.length - suf).join("");
  if (removed === 0) return { type: "insert_lines", args: { node_id: nodeId, insert_after_line: pre, content: added } };
  if (added === "") return { type: "delete_lines", args: { node_id: nodeId, start_line: pre + 1, end_line: pre + removed } };
  return { type: "replace_lines", args: { node_id: nodeId, start_line: pre + 1, end_line: pre + removed, new_content: added } };
}
