package reducer

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/canvasd/canvasd/canvas"
)

// NumberedLine is one line of a document with its 1-indexed number.
type NumberedLine struct {
	Number  int    `json:"number"`
	Content string `json:"content"`
}

// DocContent is a document (or a line range of it) with numbered lines.
// Content is the text of the range (the whole text, byte for byte, when no
// range is asked for); LineCount is the line count of the whole document.
type DocContent struct {
	Success       bool           `json:"success"`
	NodeID        string         `json:"node_id,omitempty"`
	Language      string         `json:"language"`
	Content       string         `json:"content"`
	LineCount     int            `json:"line_count"`
	StartLine     int            `json:"start_line"`
	EndLine       int            `json:"end_line"`
	NumberedLines []NumberedLine `json:"numbered_lines"`
	Rev           int64          `json:"rev"`
}

// Content returns lines [start, end] of text (0 for start means 1, 0 for end
// means the last line). A range outside the document is a *canvas.FieldError
// (ErrUnprocessable) on "start_line" or "end_line" naming the valid range.
func Content(text string, start, end int) (DocContent, error) {
	n := LineCount(text)
	whole := start == 0 && end == 0
	if start == 0 {
		start = 1
	}
	if end == 0 {
		end = n
	}
	out := DocContent{Success: true, LineCount: n, NumberedLines: []NumberedLine{}}
	if n == 0 {
		if !whole {
			return out, canvas.Unprocessable("start_line", "the document is empty (0 lines)")
		}
		return out, nil
	}
	if start < 1 || start > n {
		return out, canvas.Unprocessable("start_line", "must be between 1 and %d (the document has %d lines), got %d", n, n, start)
	}
	if end < start || end > n {
		return out, canvas.Unprocessable("end_line", "must be between start_line (%d) and %d (the document has %d lines), got %d", start, n, n, end)
	}
	from, _ := lineOffset(text, 0, 1, start)
	to, _ := lineOffset(text, from, start, end+1)
	out.StartLine, out.EndLine = start, end
	out.NumberedLines = make([]NumberedLine, 0, end-start+1)
	for pos, ln := from, start; pos < to; ln++ {
		line, next := lineAt(text, pos)
		out.NumberedLines = append(out.NumberedLines, NumberedLine{Number: ln, Content: line})
		pos = next
	}
	if whole {
		out.Content = text
	} else {
		out.Content = text[from:to]
	}
	return out, nil
}

// Selection is the selected text of a document.
type Selection struct {
	Content     string `json:"content"`
	StartLine   int    `json:"start_line"`
	EndLine     int    `json:"end_line"`
	StartColumn int    `json:"start_column,omitempty"`
	EndColumn   int    `json:"end_column,omitempty"`
	Language    string `json:"language"`
}

// SelectionSurroundings is the text around a selection.
type SelectionSurroundings struct {
	Before      string `json:"before"`
	After       string `json:"after"`
	FullContent string `json:"full_content"`
}

// SelectionContext is the "Add to Chat" context of a selection.
type SelectionContext struct {
	Success          bool                  `json:"success"`
	Selection        Selection             `json:"selection"`
	Context          SelectionSurroundings `json:"context"`
	FormattedForChat string                `json:"formatted_for_chat"`
}

// SelectionContextLines is how many lines before and after a selection its context holds.
const SelectionContextLines = 5

// SelectContext returns the selection of lines [startLine, endLine] of text,
// narrowed by columns when given: startCol (1-indexed, in characters) on the
// start line, endCol (exclusive, as in Monaco) on the end line; 0 means the
// line's start or end. Before and After hold up to SelectionContextLines
// lines, and FormattedForChat is
// "[Selected from lines S-E]:\n```language\n<selection>\n```\n\nUser question: ".
// Bad ranges are *canvas.FieldError (ErrUnprocessable) naming the field.
func SelectContext(text, language string, startLine, endLine, startCol, endCol int) (SelectionContext, error) {
	lines := Lines(text)
	n := len(lines)
	if n == 0 {
		return SelectionContext{}, canvas.Unprocessable("start_line", "the document is empty (0 lines)")
	}
	if startLine < 1 || startLine > n {
		return SelectionContext{}, canvas.Unprocessable("start_line", "must be between 1 and %d (the document has %d lines), got %d", n, n, startLine)
	}
	if endLine == 0 {
		endLine = startLine
	}
	if endLine < startLine || endLine > n {
		return SelectionContext{}, canvas.Unprocessable("end_line", "must be between start_line (%d) and %d, got %d", startLine, n, endLine)
	}
	sel := append([]string(nil), lines[startLine-1:endLine]...)
	firstLen := utf8.RuneCountInString(sel[0])
	lastLen := utf8.RuneCountInString(sel[len(sel)-1])
	if startCol < 0 || startCol > firstLen+1 {
		return SelectionContext{}, canvas.Unprocessable("start_column", "must be between 1 and %d on line %d, got %d", firstLen+1, startLine, startCol)
	}
	if endCol < 0 || endCol > lastLen+1 || (endCol > 0 && startLine == endLine && startCol > 0 && endCol < startCol) {
		lo := 1
		if startLine == endLine && startCol > 0 {
			lo = startCol
		}
		return SelectionContext{}, canvas.Unprocessable("end_column", "must be between %d and %d on line %d (exclusive end), got %d", lo, lastLen+1, endLine, endCol)
	}
	// Cut the end first: on a single line both columns count from its start.
	if endCol > 0 {
		sel[len(sel)-1] = runePrefix(sel[len(sel)-1], endCol-1)
	}
	if startCol > 0 {
		sel[0] = runeSuffix(sel[0], startCol-1)
	}
	content := strings.Join(sel, "\n")
	before := lines[max(0, startLine-1-SelectionContextLines) : startLine-1]
	after := lines[endLine:min(n, endLine+SelectionContextLines)]
	out := SelectionContext{
		Success: true,
		Selection: Selection{Content: content, StartLine: startLine, EndLine: endLine,
			StartColumn: startCol, EndColumn: endCol, Language: language},
		Context: SelectionSurroundings{Before: strings.Join(before, "\n"), After: strings.Join(after, "\n"), FullContent: text},
	}
	out.FormattedForChat = fmt.Sprintf("[Selected from lines %d-%d]:\n```%s\n%s\n```\n\nUser question: ", startLine, endLine, language, content)
	return out, nil
}

// runePrefix returns the first k runes of s; runeSuffix drops the first k.
func runePrefix(s string, k int) string {
	for i := range s {
		if k == 0 {
			return s[:i]
		}
		k--
	}
	return s
}

func runeSuffix(s string, k int) string {
	for i := range s {
		if k == 0 {
			return s[i:]
		}
		k--
	}
	return ""
}
