package chunker

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// Limits on the work one document may cost, against hostile or broken
// input (docs/reliability.md, "Hostile documents"). Every parser is linear
// in its input within these limits; beyond them Parse refuses the document
// with an error that wraps ErrTooComplex or ErrBinary and names the limit.
const (
	// MaxNesting is the deepest list or block-quote nesting Parse accepts
	// in Markdown (levels). CommonMark sets no limit; real documents nest a
	// few levels, and the HTML parser already stops at 512 open elements.
	MaxNesting = 64
	// MaxTextExpansion bounds the text of a parsed tree (titles and
	// texts, bytes) at this multiple of the input's size, plus
	// MaxTextSlack: the memory side of a document's budget.
	MaxTextExpansion = 16
	// MaxTextSlack is the constant part of the text bound (bytes).
	MaxTextSlack = 64 << 20
)

// ErrTooComplex is wrapped by the errors of documents refused for their
// complexity (nesting deeper than MaxNesting, text beyond the expansion
// bound, a parse over its time budget). Such a document is skipped and
// reported; the rest of its source goes on.
var ErrTooComplex = errors.New("too complex")

// ErrBinary is wrapped by the error of a text document (txt, md, html)
// that holds a NUL byte: like git and grep, kgsync takes such content for
// binary data, not text, and skips it.
var ErrBinary = errors.New("binary content")

// TooComplexError says why a document is too complex; it matches
// ErrTooComplex with errors.Is and reads "too complex (reason)".
type TooComplexError struct {
	// Reason names the limit and where it was hit, e.g. "list or quote
	// nesting of 65 levels at line 65, over MaxNesting 64".
	Reason string
}

func (e *TooComplexError) Error() string { return "too complex (" + e.Reason + ")" }

// Is reports target == ErrTooComplex.
func (e *TooComplexError) Is(target error) bool { return target == ErrTooComplex }

// tooComplex returns a *TooComplexError with a formatted reason.
func tooComplex(format string, args ...any) error {
	return &TooComplexError{Reason: fmt.Sprintf(format, args...)}
}

// checkNUL refuses decoded text holding a NUL character (ErrBinary). NULs
// at every other byte are the mark of UTF-16 text without a byte order
// mark, which the message suggests.
func checkNUL(s string) error {
	i := strings.IndexByte(s, 0)
	if i < 0 {
		return nil
	}
	hint := ""
	if n := strings.Count(s[:min(len(s), 4096)], "\x00"); n*3 >= min(len(s), 4096) {
		hint = " (UTF-16 without a byte order mark?)"
	}
	return fmt.Errorf("%w: NUL byte at offset %d%s", ErrBinary, i, hint)
}

// isStripped reports the control characters the builder removes from
// element text: C0 controls other than tab, line feed, vertical tab, form
// feed and carriage return (which are white space), and DEL. They carry no
// text, and embedders and Cypher literals should never see them.
func isStripped(r rune) bool {
	return (r < 0x20 && r != '\t' && r != '\n' && r != '\v' && r != '\f' && r != '\r') || r == 0x7f
}

// stripControls removes the characters isStripped reports from s.
func stripControls(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			if isStripped(rune(c)) {
				return strings.Map(func(r rune) rune {
					if isStripped(r) {
						return -1
					}
					return r
				}, s)
			}
		}
	}
	return s
}

// ControlBytes counts the control characters of a text format's content
// (txt, md, html; 0 for other formats and content Decode refuses) that
// element text drops (see isStripped): the pipeline warns about them.
func ControlBytes(format string, content []byte) int {
	switch format {
	case "txt", "md", "html":
	default:
		return 0
	}
	if bytes.HasPrefix(content, []byte{0xFF, 0xFE}) || bytes.HasPrefix(content, []byte{0xFE, 0xFF}) {
		s, _, err := Decode(content)
		if err != nil {
			return 0
		}
		content = []byte(s)
	}
	n := 0
	for _, c := range content {
		if isStripped(rune(c)) {
			n++
		}
	}
	return n
}

// checkNesting refuses Markdown whose list or block-quote nesting exceeds
// MaxNesting. It scans each line once (linear time) and takes an upper
// bound of what a CommonMark parser opens there: every leading '>' and
// list marker ("-", "+", "*", "1." or "1)" followed by a blank), plus one
// level per two columns of indentation before the first marker (a nested
// list item sits at least two columns right of its parent's marker).
// Lines inside fenced code blocks are not containers and are skipped.
func checkNesting(src []byte) error {
	line := 0
	fence, fenceLen := byte(0), 0
	for start := 0; start < len(src); {
		end := start
		for end < len(src) && src[end] != '\n' {
			end++
		}
		line++
		l := src[start:end]
		start = end + 1

		col, i := 0, 0
		for i < len(l) && (l[i] == ' ' || l[i] == '\t') {
			if l[i] == '\t' {
				col += 4 - col%4
			} else {
				col++
			}
			i++
		}
		if c, n := fenceRun(l[i:]); n >= 3 {
			switch {
			case fence == 0:
				fence, fenceLen = c, n
				continue
			case c == fence && n >= fenceLen:
				fence = 0
				continue
			}
		}
		if fence != 0 {
			continue
		}
		markers := 0
		for i < len(l) {
			n := containerMarker(l[i:])
			if n == 0 {
				break
			}
			markers++
			i += n
			for i < len(l) && (l[i] == ' ' || l[i] == '\t') {
				i++
			}
		}
		if markers == 0 {
			continue
		}
		if depth := markers + col/2; depth > MaxNesting {
			return tooComplex("list or quote nesting of up to %d levels at line %d, over MaxNesting %d", depth, line, MaxNesting)
		}
	}
	return nil
}

// fenceRun returns the fence character and run length at the start of l
// ("```" or "~~~"), or 0, 0.
func fenceRun(l []byte) (byte, int) {
	if len(l) == 0 || (l[0] != '`' && l[0] != '~') {
		return 0, 0
	}
	n := 0
	for n < len(l) && l[n] == l[0] {
		n++
	}
	return l[0], n
}

// containerMarker returns the length of a block-quote marker ('>') or a
// list marker followed by a blank or the end of line at the start of l,
// else 0.
func containerMarker(l []byte) int {
	if len(l) == 0 {
		return 0
	}
	blankAfter := func(k int) bool { return k == len(l) || l[k] == ' ' || l[k] == '\t' || l[k] == '\r' }
	switch c := l[0]; {
	case c == '>':
		return 1
	case c == '-' || c == '+' || c == '*':
		if blankAfter(1) {
			return 1
		}
	case c >= '0' && c <= '9':
		k := 0
		for k < len(l) && k < 9 && l[k] >= '0' && l[k] <= '9' {
			k++
		}
		if k < len(l) && (l[k] == '.' || l[k] == ')') && blankAfter(k+1) {
			return k + 1
		}
	}
	return 0
}

// checkExpansion refuses a parsed tree whose text exceeds MaxTextExpansion
// times the input's size plus MaxTextSlack.
func checkExpansion(root *Element, inputBytes int) error {
	limit := int64(MaxTextExpansion)*int64(inputBytes) + MaxTextSlack
	var total int64
	var walk func(e *Element) bool
	walk = func(e *Element) bool {
		total += int64(len(e.Text) + len(e.Title))
		if total > limit {
			return false
		}
		for _, c := range e.Children {
			if !walk(c) {
				return false
			}
		}
		return true
	}
	if !walk(root) {
		return tooComplex("the parsed text exceeds %d bytes, %d times the %d-byte input plus %d MiB (MaxTextExpansion)",
			limit, MaxTextExpansion, inputBytes, MaxTextSlack>>20)
	}
	return nil
}
