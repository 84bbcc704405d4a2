package chunker

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode"

	"github.com/stretchr/testify/require"
)

// TestMarkdownNestingLimit: lists and block quotes nested past MaxNesting
// are refused as too complex, naming the line, before goldmark sees them
// (a 20 KB list nested 10,000 levels used to take over 10 minutes and
// 1.5 GB); nesting up to the limit parses with its text.
func TestMarkdownNestingLimit(t *testing.T) {
	t.Parallel()
	var indented strings.Builder
	for i := range 2000 {
		indented.WriteString(strings.Repeat("  ", i) + "- item\n")
	}
	for name, src := range map[string]string{
		"dash list 10000":     strings.Repeat("- ", 10000) + "x\n",
		"ordered list 10000":  strings.Repeat("1. ", 10000) + "x\n",
		"quote 10000":         strings.Repeat("> ", 10000) + "x\n",
		"quote no blanks":     strings.Repeat(">", 10000) + "x\n",
		"mixed":               strings.Repeat("> - ", 5000) + "x\n",
		"indented list 2000":  indented.String(),
		"after a paragraph":   "Intro.\n\n" + strings.Repeat("* ", 100) + "x\n",
		"tab-indented 100":    strings.Repeat("\t", 40) + "- x\n",
		"CRLF deep list 1000": strings.Repeat("- ", 1000) + "x\r\n",
	} {
		_, err := Parse("md", []byte(src))
		require.ErrorIs(t, err, ErrTooComplex, name)
		var tc *TooComplexError
		require.ErrorAs(t, err, &tc, name)
		require.Contains(t, err.Error(), "MaxNesting 64", name)
		require.Contains(t, err.Error(), "at line ", name)
	}
	root, err := Parse("md", []byte(strings.Repeat("- ", MaxNesting)+"deepest\n"))
	require.NoError(t, err)
	require.Contains(t, root.Children[0].Text, "deepest")
	// Deep indentation inside fenced code is not nesting.
	code := "```\n" + strings.Repeat(" ", 300) + "- not a list\n```\n\nAfter.\n"
	root, err = Parse("md", []byte(code))
	require.NoError(t, err)
	require.Contains(t, root.Children[0].Text, "- not a list")
}

// TestNULIsBinary: text formats holding a NUL byte are refused as binary
// (a file of 100 NULs used to become 8 embedded chunks); UTF-16 with a
// byte order mark still decodes.
func TestNULIsBinary(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"txt", "md", "html"} {
		_, err := Parse(format, []byte("abc\x00def"))
		require.ErrorIs(t, err, ErrBinary, format)
		require.Contains(t, err.Error(), "NUL byte at offset 3", format)
		_, err = Parse(format, make([]byte, 100))
		require.ErrorIs(t, err, ErrBinary, format)
	}
	_, err := Parse("txt", []byte("h\x00e\x00l\x00l\x00o\x00 \x00w\x00o\x00r\x00l\x00d\x00"))
	require.ErrorContains(t, err, "UTF-16 without a byte order mark?")
	root, err := Parse("txt", []byte("\xff\xfeh\x00i\x00"))
	require.NoError(t, err)
	require.Equal(t, "hi", root.Children[0].Text)
}

// TestControlCharactersStripped: C0 controls other than white space, and
// DEL, never reach element text (nor chunks or the embedder); ControlBytes
// counts what is dropped so the pipeline can warn.
func TestControlCharactersStripped(t *testing.T) {
	t.Parallel()
	src := "Alpha \x1b[31mred\x1b[0m beta\x07 gamma\x7f delta\tend\n\nSecond\x01 para.\n"
	for _, format := range []string{"txt", "md", "html"} {
		root, err := Parse(format, []byte(src))
		require.NoError(t, err, format)
		var texts []string
		var walk func(*Element)
		walk = func(e *Element) {
			texts = append(texts, e.Title, e.Text)
			for _, c := range e.Children {
				walk(c)
			}
		}
		walk(root)
		all := strings.Join(texts, "\n")
		require.NotContains(t, all, "\x1b", format)
		require.NotContains(t, all, "\x07", format)
		require.NotContains(t, all, "\x7f", format)
		require.NotContains(t, all, "\x01", format)
		require.Contains(t, all, "[31mred", format)
		chunks, err := Split("k", root, Options{})
		require.NoError(t, err)
		for _, c := range chunks {
			require.Equal(t, c.Text, stripControls(c.Text))
		}
	}
	require.Equal(t, 5, ControlBytes("txt", []byte(src)))
	require.Zero(t, ControlBytes("pdf", []byte(src)), "binary formats are not counted")
	require.Zero(t, ControlBytes("txt", []byte("\xff\xfeh\x00i\x00")), "UTF-16 is counted after decoding")
}

// TestHugeRunSplitsInLinearTime: a run of megabytes without white space
// (a one-line base64 blob) is tokenized a bounded number of times per
// byte (about 5 here); halving the whole run tokenized it once per halving
// (14 times per byte at 256 KiB, more as the run grows; 8 MB took 17.5 s).
func TestHugeRunSplitsInLinearTime(t *testing.T) {
	t.Parallel()
	const n = 256 << 10
	b := make([]byte, n)
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for i := range b {
		b[i] = alphabet[(i*7919+i/3)%64]
	}
	for name, text := range map[string]string{"base64": string(b), "one letter": strings.Repeat("x", n)} {
		root, err := Parse("txt", []byte(text))
		require.NoError(t, err)
		tok := *DefaultTokenizer()
		tok.tokenized = &atomic.Int64{}
		chunks, err := Split("blob.txt", root, Options{MaxTokens: 512, OverlapTokens: 64, Tokenizer: &tok})
		require.NoError(t, err)
		require.NotEmpty(t, chunks)
		var own int
		for _, c := range chunks {
			require.LessOrEqual(t, c.Tokens, 512+64, name)
			_, body, _ := strings.Cut(c.Text, "\n\n")
			if c.Position == 0 {
				body = c.Text
			}
			own += len(body)
		}
		require.Equal(t, n, own, "%s: every byte is in exactly one chunk's own text", name)
		require.LessOrEqual(t, tok.tokenized.Load(), int64(8*n), "%s: bytes tokenized for a %d-byte run", name, n)
	}
}

// TestParseContextStopsGoldmark: goldmark is quadratic on unclosed link
// destinations ("[a](" repeated: 400 KB took about two minutes); a
// cancelled ParseContext stops it within one inline marker.
func TestParseContextStopsGoldmark(t *testing.T) {
	t.Parallel()
	src := []byte(strings.Repeat("[a](", 100000))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := ParseContext(ctx, "md", src)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	done, stop := context.WithCancel(context.Background())
	stop()
	_, err = ParseContext(done, "txt", []byte("text"))
	require.ErrorIs(t, err, context.Canceled)
	root, err := ParseContext(context.Background(), "md", []byte("# T\n\nBody [link](x).\n"))
	require.NoError(t, err)
	require.Equal(t, "T", root.Children[0].Title)
}

func TestSplitContextStops(t *testing.T) {
	t.Parallel()
	root, err := Parse("txt", []byte(strings.Repeat("Some words here. ", 20000)))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = SplitContext(ctx, "k", root, Options{})
	require.ErrorIs(t, err, context.Canceled)
	chunks, err := SplitContext(context.Background(), "k", root, Options{})
	require.NoError(t, err)
	require.NotEmpty(t, chunks)
}

func TestTextExpansionBound(t *testing.T) {
	t.Parallel()
	root := &Element{Kind: KindDocument, Children: []*Element{{Kind: KindParagraph, Text: strings.Repeat("x", MaxTextSlack+100)}}}
	err := checkExpansion(root, 1)
	require.ErrorIs(t, err, ErrTooComplex)
	require.True(t, errors.Is(err, ErrTooComplex))
	require.NoError(t, checkExpansion(root, 100))
}

// BenchmarkParseManyParagraphs: parse time per paragraph stays flat as a
// section grows (numbering a leaf once scanned its siblings: 40,000
// paragraphs took 1.42 s, 10,000 took 0.12 s).
func BenchmarkParseManyParagraphs(b *testing.B) {
	for _, n := range []int{10000, 40000} {
		src := []byte(strings.Repeat("A short paragraph here.\n\n", n))
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				if _, err := Parse("txt", src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestNormalizeSpaceMatchesFields: the one-pass normalizeSpace equals
// joining strings.FieldsFunc's words, which allocated a slice header per
// word (160 MB for an 8 MB line of words).
func TestNormalizeSpaceMatchesFields(t *testing.T) {
	t.Parallel()
	ref := func(s string) string {
		return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == '\u00a0' }), " ")
	}
	alpha := []string{"a", "b", " ", "  ", "\n", "\t", "\u00a0", "é", "\xff", "\u2028", "x y", "\r\n"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		var b strings.Builder
		for j := r.IntN(12); j > 0; j-- {
			b.WriteString(alpha[r.IntN(len(alpha))])
		}
		s := b.String()
		require.Equal(t, ref(s), normalizeSpace(s), "%q", s)
	}
}
