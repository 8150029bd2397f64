package canvas

// OpEdit is a Change op that splices a string prop of a node line by line
// (document edits) instead of carrying the whole new text. Change.Edit holds
// the splice; Apply sets updated_rev/updated_by as for a patch.
const OpEdit Op = "edit"

// TextEdit is a line splice of one string prop of a node (for "doc" nodes,
// Prop is "text"). The prop's value is viewed as a sequence of lines, each
// line including its terminator ("\n" or "\r\n"; only the last line may lack
// one): "" has 0 lines, "a\nb" has 2, "a\n" has 1. Hunks are applied in one
// pass; their line numbers refer to the text before the edit, they are in
// ascending order and do not overlap. A client holding the text can apply an
// edit with: split into lines keeping terminators, replace lines
// [Line, Line+Del) of each hunk by Ins (already terminated as it must be),
// join.
type TextEdit struct {
	Prop  string     `json:"prop"`
	Hunks []TextHunk `json:"hunks"`
}

// TextHunk replaces Del lines starting at Line (1-indexed; Line may be the
// line count + 1 to append) with the text Ins, which carries its own line
// terminators exactly as they are to appear in the document.
type TextHunk struct {
	Line int    `json:"line"`
	Del  int    `json:"del"`
	Ins  string `json:"ins"`
}
