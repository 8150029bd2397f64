package agent

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/client"
)

// The document agent: when the target of a session is a document (a doc
// node in its selection), each turn gives the model the document's numbered
// lines and the diff of the session's edits so far, with the document-editor
// system prompt and the document verbs.

// Bounds of the numbered lines put in a prompt.
const (
	maxPromptDocLines = 3000
	maxPromptDocBytes = 256 << 10
)

// docTargetOf returns the first doc node of selection on the canvas, or "".
func docTargetOf(nodes []*canvas.Node, selection []string) string {
	docs := map[string]bool{}
	for _, n := range nodes {
		if n.Type == "doc" {
			docs[n.ID] = true
		}
	}
	for _, id := range selection {
		if docs[id] {
			return id
		}
	}
	return ""
}

// DocumentSystemPrompt is the static system message of a document turn:
// the editing principles of the document agent, the output protocol and
// the document verbs with their JSON Schemas.
func DocumentSystemPrompt() string {
	var b strings.Builder
	b.WriteString(`You are the canvas agent, editing a text or code document on a shared canvas that people edit at the same time as you.
The document is your working memory: you receive an editing instruction and make precise, line-by-line changes with the document verbs below.
`)
	b.WriteString(OutputProtocol)
	b.WriteString(`
Editing principles:
1. Preserve context: do not break the surrounding code or text.
2. Keep the indentation and formatting of the lines around your edit.
3. Make the smallest change that achieves the goal; never rewrite lines you do not need to change.
4. Say what you change and why in a think action, and give each edit a short reason.
5. If the instruction is unclear or would destroy much of the document, ask with think instead of editing.
6. Consider the whole document: update what depends on the lines you change.
Line numbers are 1-indexed and inclusive, as numbered in the context. Your edits apply in order, each to the document as your previous edits left it: edit from the bottom of the document upwards, so that the line numbers you read stay valid.
Every change is recorded with a diff and can be undone (undo); save_snapshot before a large change.
Use todo {text, status} for work left (the same text again updates it; status done or skipped resolves it).
Action catalog (JSON):
`)
	b.Write(catalogJSON(func(v Verb) bool { return v.Doc || v.Name == "think" || v.Name == "todo" || v.Name == "add_detail" }))
	return b.String()
}

// docPrompt is the document part of a turn's prompt: the numbered lines
// (bounded) and the unified diff of the session's changes, when there are any.
func docPrompt(dc client.DocContent, name string, diff client.DocDiff) string {
	var b strings.Builder
	lang := dc.Language
	if lang == "" {
		lang = "text"
	}
	fmt.Fprintf(&b, "Document node_id=%s name=%q language=%s, %d lines (revision %d):\n", dc.NodeID, name, lang, dc.LineCount, dc.Rev)
	size := 0
	for i, l := range dc.NumberedLines {
		if i >= maxPromptDocLines || size > maxPromptDocBytes {
			fmt.Fprintf(&b, "(lines %d to %d are not shown)\n", l.Number, dc.LineCount)
			break
		}
		size += len(l.Content)
		fmt.Fprintf(&b, "%5d | %s\n", l.Number, l.Content)
	}
	if diff.HasChanges {
		b.WriteString("\nYour changes to it so far in this session (unified diff):\n")
		b.WriteString(truncUTF8(diff.Diff, maxPromptDocBytes/4))
		b.WriteString("\n")
	}
	return b.String()
}

// selectionNote is the prompt line of the person's selection in the
// document: what the instruction is about.
func selectionNote(ls canvas.LineSpan) string {
	if ls.StartLine == ls.EndLine {
		return fmt.Sprintf("The person has selected line %d of it (the instruction is about it unless it says otherwise).\n", ls.StartLine)
	}
	return fmt.Sprintf("The person has selected lines %d to %d of it (the instruction is about them unless it says otherwise).\n", ls.StartLine, ls.EndLine)
}

// docInstruction is the instruction of a document turn.
func (s *session) docInstruction(t task) string {
	switch t.kind {
	case TurnFollowup:
		return "Follow-up pass for the task: " + s.rec.Message + "\nAdd: " + t.text +
			"\nThe document above already has your earlier edits (see the diff); do not make them again."
	case TurnReplan:
		return "While you worked, someone else changed " + t.conflict + ". Their edits stand. The numbered lines above are fresh: " +
			"plan your line edits against them, and do not make again the edits the diff shows. Continue the task: " + t.text
	case TurnMessage:
		return messageInstruction(t)
	}
	return "Task: " + t.text
}

// fakeDocEdit matches the instructions the debug/fake model turns into line
// edits of the target document (see fakeDocReply).
var fakeDocEdit = struct{ replaceLines, insertAfter, deleteLines, replaceText *regexp.Regexp }{
	replaceLines: regexp.MustCompile(`(?is)\breplace lines? (\d+)(?:\s*(?:-|–|to)\s*(\d+))? with:?\s?(.*)`),
	insertAfter:  regexp.MustCompile(`(?is)\binsert after line (\d+):?\s?(.*)`),
	deleteLines:  regexp.MustCompile(`(?i)\bdelete lines? (\d+)(?:\s*(?:-|–|to)\s*(\d+))?`),
	replaceText:  regexp.MustCompile(`(?s)\breplace "(.+?)" with "(.*?)"`),
}

// fakeDocReply is the debug/fake model's reply on a document: it knows four
// instructions, "replace line(s) N[-M] with: TEXT", "insert after line N:
// TEXT", "delete line(s) N[-M]" and `replace "A" with "B"` (TEXT runs to a
// blank line or the end; it becomes whole lines), in the first paragraph of
// the task that is one of them. Anything else, and every
// follow-up or re-plan turn, gets a think.
func fakeDocReply(req ModelRequest) string {
	think := func(text string) string {
		return `{"actions":[{"name":"think","params":{"text":` + jsonString(text) + `}}]}`
	}
	if req.Kind != TurnInitial && req.Kind != TurnMessage {
		return think("The edit is in place; nothing more to change.")
	}
	doc := jsonString(req.Document)
	lines := func(text string) string {
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		return jsonString(text)
	}
	edit := func(name, params string) string {
		return `{"actions":[{"name":"think","params":{"text":"Editing the document as asked."}},{"name":"` + name + `","params":{"node_id":` + doc + `,` + params + `}}]}`
	}
	rangeOf := func(m []string) (string, string) {
		if m[2] == "" {
			return m[1], m[1]
		}
		return m[1], m[2]
	}
	// The instruction is the first paragraph that is one (others are
	// context: a "Context:" paragraph, lines added to the chat before it).
	task := ""
	for _, p := range strings.Split(req.Task, "\n\n") {
		if fakeDocEdit.replaceText.MatchString(p) || fakeDocEdit.replaceLines.MatchString(p) || fakeDocEdit.insertAfter.MatchString(p) || fakeDocEdit.deleteLines.MatchString(p) {
			task = p
			break
		}
	}
	switch {
	case task == "":
	case fakeDocEdit.replaceText.MatchString(task):
		m := fakeDocEdit.replaceText.FindStringSubmatch(task)
		return edit("search_replace", `"search_pattern":`+jsonString(m[1])+`,"replace_with":`+jsonString(m[2]))
	case fakeDocEdit.replaceLines.MatchString(task):
		m := fakeDocEdit.replaceLines.FindStringSubmatch(task)
		start, end := rangeOf(m)
		return edit("replace_lines", `"start_line":`+start+`,"end_line":`+end+`,"new_content":`+lines(m[3]))
	case fakeDocEdit.insertAfter.MatchString(task):
		m := fakeDocEdit.insertAfter.FindStringSubmatch(task)
		return edit("insert_lines", `"insert_after_line":`+m[1]+`,"content":`+lines(m[2]))
	case fakeDocEdit.deleteLines.MatchString(task):
		m := fakeDocEdit.deleteLines.FindStringSubmatch(task)
		start, end := rangeOf(m)
		return edit("delete_lines", `"start_line":`+start+`,"end_line":`+end)
	}
	return think(`The debug/fake model edits documents only when told "replace line N with: TEXT", "insert after line N: TEXT", "delete lines N-M" or replace "A" with "B".`)
}

func jsonString(s string) string {
	b, _ := json.Marshal(strings.ToValidUTF8(s, ""))
	return string(b)
}
