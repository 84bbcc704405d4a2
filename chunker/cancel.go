package chunker

import (
	"context"
	"fmt"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// ContextParser is a Parser that stops, with ctx's error, soon after ctx
// is done. ParseContext uses it when a format's parser implements it.
type ContextParser interface {
	Parser
	ParseContext(ctx context.Context, content []byte) (*Element, error)
}

// ParseContext is Parse that gives up when ctx is done: a format whose
// parser is a ContextParser (Markdown) stops within one line or inline
// marker of the cancellation and returns an error wrapping ctx.Err();
// other parsers run to completion (each is linear in its input within the
// limits of limits.go), and the error then also wraps ctx.Err(). The
// pipeline gives each document a time budget this way (chunking.
// document_timeout).
func ParseContext(ctx context.Context, format string, content []byte) (*Element, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("parse %s: %w", format, err)
	}
	root, err := parse(ctx, format, content)
	if err == nil && ctx.Err() != nil {
		return nil, fmt.Errorf("parse %s: %w", format, ctx.Err())
	}
	return root, err
}

// stopped is the panic value that unwinds goldmark when its parse is
// cancelled; parseMarkdown recovers it into err.
type stopped struct{ err error }

// mdCancelKey holds the parse's context.Context in goldmark's parser
// context.
var mdCancelKey = parser.NewContextKey()

// checkStop panics with stopped when ctx is done.
func checkStop(ctx context.Context) {
	if ctx != nil {
		if err := ctx.Err(); err != nil {
			panic(stopped{err})
		}
	}
}

// stopReader is goldmark's block-level reader, checking for cancellation
// at every line.
type stopReader struct {
	text.Reader
	ctx context.Context
}

func (r stopReader) AdvanceLine() {
	checkStop(r.ctx)
	r.Reader.AdvanceLine()
}

// stopInline is an inline parser with the highest priority that parses
// nothing: it checks for cancellation at every character that starts
// inline markup (links, emphasis, code spans, autolinks, raw HTML), where
// goldmark's superlinear cases on hostile input spend their time (for
// example "[a](" repeated: a scan to the end of the paragraph per "(").
type stopInline struct{}

func (stopInline) Trigger() []byte { return []byte{'[', ']', '!', '*', '_', '`', '<', '&', '\\'} }

func (stopInline) Parse(_ ast.Node, _ text.Reader, pc parser.Context) ast.Node {
	if ctx, ok := pc.Get(mdCancelKey).(context.Context); ok {
		checkStop(ctx)
	}
	return nil
}

// recoverStop turns a stopped panic into *err; other panics go on.
func recoverStop(err *error) {
	if p := recover(); p != nil {
		s, ok := p.(stopped)
		if !ok {
			panic(p)
		}
		*err = s.err
	}
}
