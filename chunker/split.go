package chunker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"
)

// PathSep separates the parts of address paths and heading paths.
const PathSep = " › "

// Defaults applied by Split to zero Options fields.
const (
	// DefaultMaxTokens is Options.MaxTokens when it is 0 (the same default
	// as config.Chunking.MaxTokens).
	DefaultMaxTokens = 512
	// MinMaxTokens is the smallest MaxTokens accepted: a single character can
	// take several tokens, and the splitter must always make progress.
	MinMaxTokens = 16
)

// Options configure Split.
type Options struct {
	// MaxTokens bounds a chunk's own text (its elements, without the
	// overlap) in tokens; 0 means DefaultMaxTokens, and values below
	// MinMaxTokens are an error.
	MaxTokens int
	// OverlapTokens is how many tokens at the end of a chunk are repeated at
	// the start of the next chunk of the same parent, cut forward to a
	// sentence or word boundary (so usually a little less). It must be in
	// [0, MaxTokens). A chunk's whole Text, overlap included, never exceeds
	// MaxTokens + OverlapTokens tokens; the first chunk of a parent never
	// exceeds MaxTokens.
	OverlapTokens int
	// Tokenizer counts tokens; nil means DefaultTokenizer() (cl100k_base).
	Tokenizer *Tokenizer
	// TargetTokens is the expected size of a chunk's own text, the mean of
	// the content-defined boundaries (see Split); 0 means MaxTokens/2. It
	// must not exceed MaxTokens.
	TargetTokens int
}

// unit is one packable piece of a leaf: the whole leaf, or a sentence (or
// word window) of a leaf longer than MaxTokens.
type unit struct {
	elem   string // address path of the leaf
	key    string // leaf address, "#" and a piece key appended for later pieces
	text   string
	tokens int
	join   string // separator before this unit inside one chunk
	// header is, for a row group of a table too long for one chunk, the
	// table's caption and header rows, written before the first unit of the
	// table in every chunk; headerTokens is its token count.
	header       string
	headerTokens int
	// cite is the leaf's own citation ("" for most paragraphs).
	cite string
}

// Split groups the leaves of root into chunks, walking the tree in
// document order.
//
// Grouping. Only neighbouring leaves of one parent (paragraphs, lists,
// tables, code blocks between two headings) share a chunk. Within such a
// run, a chunk ends after a unit u when adding the next unit would exceed
// MaxTokens, or when a content-defined cut hits: xxhash64(u.text)/2^64 <
// tokens(u)/TargetTokens. The cut after a unit therefore depends on that
// unit's text alone, not on where the previous chunk ended, so an edit moves
// at most the boundaries next to the edited unit and the grouping
// re-synchronises at the next cut; greedy left-to-right packing would
// instead shift every later boundary of the section. Each token is a cut
// point with probability 1/TargetTokens, so chunks average about
// TargetTokens tokens (fewer where MaxTokens forces an earlier cut).
//
// A leaf longer than MaxTokens is split into sentences (and a sentence
// longer than MaxTokens into word windows, a word into rune windows), which
// are grouped like leaves: text is never truncated or dropped.
//
// Addresses and ids. Chunk.Address is the parent's address path plus the
// key of the chunk's first unit ("rfc7231.txt › 6 › 6.5 › 6.5.1 › p2",
// "… › p2#9b0e" for a later piece of a long leaf, named by a hash of the
// piece's text); Chunk.ID is the hex xxhash64 of that address. Leaves are
// named by ordinal in small parents and by a hash of the start of their
// text in large ones (see assignLeafAddresses), so inserting or deleting
// a leaf renames at most the later leaves of one small parent.
//
// Overlap. Every chunk after the first of a run starts with the last
// OverlapTokens tokens of the previous chunk's own text (cut forward to a
// sentence start when that keeps at least half of them, else to a word
// start), then a blank line, then its own text.
//
// A root without text yields no chunks and no error. Errors: nil root,
// Options out of range.
func Split(docKey string, root *Element, opts Options) ([]Chunk, error) {
	return split(nil, docKey, root, opts)
}

// SplitContext is Split that stops within one leaf (or one window of a
// huge leaf) once ctx is done, returning an error that wraps ctx.Err().
func SplitContext(ctx context.Context, docKey string, root *Element, opts Options) (_ []Chunk, err error) {
	defer func() {
		if err != nil && ctx.Err() != nil {
			err = fmt.Errorf("split %s: %w", docKey, err)
		}
	}()
	defer recoverStop(&err)
	return split(ctx, docKey, root, opts)
}

func split(ctx context.Context, docKey string, root *Element, opts Options) ([]Chunk, error) {
	if root == nil {
		return nil, errors.New("split: nil root element")
	}
	if opts.MaxTokens == 0 {
		opts.MaxTokens = DefaultMaxTokens
	}
	if opts.MaxTokens < MinMaxTokens {
		return nil, fmt.Errorf("split %s: max tokens %d is below %d", docKey, opts.MaxTokens, MinMaxTokens)
	}
	if opts.OverlapTokens < 0 || opts.OverlapTokens >= opts.MaxTokens {
		return nil, fmt.Errorf("split %s: overlap tokens %d must be in [0, max tokens %d)", docKey, opts.OverlapTokens, opts.MaxTokens)
	}
	if opts.TargetTokens == 0 {
		opts.TargetTokens = opts.MaxTokens / 2
	}
	if opts.TargetTokens < 0 || opts.TargetTokens > opts.MaxTokens {
		return nil, fmt.Errorf("split %s: target tokens %d must be in [1, max tokens %d]", docKey, opts.TargetTokens, opts.MaxTokens)
	}
	if opts.Tokenizer == nil {
		opts.Tokenizer = DefaultTokenizer()
	}
	s := &splitter{ctx: ctx, opts: opts, tok: opts.Tokenizer, seen: map[string]int{}}
	s.walk(root, docKey, nil, "")
	return s.out, nil
}

type splitter struct {
	ctx  context.Context // nil: never cancelled
	opts Options
	tok  *Tokenizer
	out  []Chunk
	seen map[string]int // chunk addresses, to keep them unique
}

func (s *splitter) walk(e *Element, path string, headings []string, cite string) {
	if (e.Kind == KindSection || e.Kind == KindAnnex) && e.Title != "" {
		headings = append(headings[:len(headings):len(headings)], e.Title)
	}
	if e.Citation != "" {
		cite = e.Citation
	}
	var run []*Element
	flush := func() {
		if len(run) > 0 {
			s.run(path, headings, cite, run)
			run = nil
		}
	}
	for _, c := range e.Children {
		if len(c.Children) == 0 && !isContainer(c.Kind) {
			run = append(run, c)
			continue
		}
		flush()
		s.walk(c, path+PathSep+c.Address, headings, cite)
	}
	flush()
}

// run chunks one run of neighbouring leaves under the parent at path.
func (s *splitter) run(path string, headings []string, cite string, leaves []*Element) {
	var units []unit
	for _, l := range leaves {
		checkStop(s.ctx)
		text := strings.TrimSpace(l.Text)
		if text == "" {
			continue
		}
		if l.Kind == KindTable && l.Title != "" {
			text = l.Title + "\n" + text
		}
		elem := path + PathSep + l.Address
		n := s.tok.Count(text)
		if n <= s.opts.MaxTokens {
			units = append(units, unit{elem: elem, key: l.Address, text: text, tokens: n, join: "\n\n", cite: l.Citation})
			continue
		}
		if rows, ok := s.tableRows(l, elem); ok {
			units = append(units, rows...)
			continue
		}
		for k, p := range s.pieces(text) {
			key, join := l.Address, "\n\n"
			if k > 0 {
				key = l.Address + "#" + pieceKey(p.text)
				join = p.join
			}
			n := p.tokens
			if n == 0 {
				n = s.tok.Count(p.text)
			}
			units = append(units, unit{elem: elem, key: key, text: p.text, tokens: n, join: join, cite: l.Citation})
		}
	}
	context := strings.Join(headings, PathSep)
	prevBody := ""
	for i := 0; i < len(units); {
		j := s.groupEnd(units, i)
		var body, text string
		var tokens int
		// The per-unit sums estimate the size; tokenising the joined text
		// can differ at the joins, so count the real text and give back
		// units while it is over the limit.
		for {
			body = joinUnits(units[i:j])
			if prevBody != "" && s.opts.OverlapTokens > 0 {
				text, tokens = s.withOverlap(prevBody, body)
				if tokens <= s.opts.MaxTokens+s.opts.OverlapTokens || j-i == 1 {
					break
				}
			} else {
				text, tokens = body, s.tok.Count(body)
				if tokens <= s.opts.MaxTokens || j-i == 1 {
					break
				}
			}
			j--
		}
		address := path + PathSep + units[i].key
		if n := s.seen[address]; n > 0 {
			s.seen[address] = n + 1
			address += "~" + strconv.Itoa(n+1)
		} else {
			s.seen[address] = 1
		}
		var elems []string
		for _, u := range units[i:j] {
			if len(elems) == 0 || elems[len(elems)-1] != u.elem {
				elems = append(elems, u.elem)
			}
		}
		citation := units[i].cite
		if citation == "" {
			citation = cite
		}
		s.out = append(s.out, Chunk{
			ID:       fmt.Sprintf("%016x", xxhash.Sum64String(address)),
			Address:  address,
			Context:  context,
			Text:     text,
			Position: len(s.out),
			Tokens:   tokens,
			Parent:   path,
			Elements: elems,
			Citation: citation,
		})
		prevBody = body
		i = j
	}
}

// tableRows cuts a table too long for one chunk into row units that carry
// the table's caption and header rows (see unit.header), so every chunk
// holding rows of the table starts with its header. A row longer than the
// room left beside the header is cut like a long sentence. ok is false for
// a table without header rows or with a header over half of MaxTokens;
// such a table is cut like text.
func (s *splitter) tableRows(l *Element, elem string) ([]unit, bool) {
	lines := strings.Split(strings.TrimSpace(l.Text), "\n")
	if l.HeaderRows <= 0 || l.HeaderRows >= len(lines) {
		return nil, false
	}
	head := lines[:l.HeaderRows]
	if l.Title != "" {
		head = append([]string{l.Title}, head...)
	}
	header := strings.Join(head, "\n")
	ht := s.tok.Count(header)
	if ht > s.opts.MaxTokens/2 {
		return nil, false
	}
	var out []unit
	for _, row := range lines[l.HeaderRows:] {
		if strings.TrimSpace(row) == "" {
			continue
		}
		for _, p := range s.fitLimit(row, "\n", s.opts.MaxTokens-ht-1) {
			key := l.Address
			if len(out) > 0 {
				key += "#" + pieceKey(p.text)
			}
			join := p.join
			if len(out) == 0 {
				join = "\n\n"
			}
			out = append(out, unit{elem: elem, key: key, text: p.text, tokens: s.tok.Count(p.text), join: join, header: header, headerTokens: ht, cite: l.Citation})
		}
	}
	return out, len(out) > 0
}

// pieceKey names a piece of a long leaf (a sentence, a table row) by four
// hex digits of the xxhash64 of its text, so that a sentence inserted into
// a long paragraph renames no other piece.
func pieceKey(text string) string {
	return fmt.Sprintf("%04x", xxhash.Sum64String(text)>>48)
}

// startsTable reports whether us[k] is the first row unit of its table
// within a chunk made of us.
func startsTable(us []unit, k int) bool {
	return us[k].header != "" && (k == 0 || us[k-1].elem != us[k].elem)
}

// groupEnd returns the end (exclusive) of the chunk that starts at units[i].
func (s *splitter) groupEnd(units []unit, i int) int {
	total := 0
	j := i
	for j < len(units) {
		add := units[j].tokens
		if j > i {
			add++ // the separator
		}
		if startsTable(units[i:], j-i) {
			add += units[j].headerTokens + 1
		}
		if j > i && total+add > s.opts.MaxTokens {
			break
		}
		total += add
		j++
		if s.cutAfter(units[j-1]) {
			break
		}
	}
	return j
}

// cutAfter is the content-defined boundary test: true with probability
// tokens/TargetTokens, decided by the unit's own text.
func (s *splitter) cutAfter(u unit) bool {
	p := float64(u.tokens) / float64(s.opts.TargetTokens)
	if p >= 1 {
		return true
	}
	return float64(xxhash.Sum64String(u.text)) < p*math.Exp2(64)
}

func joinUnits(us []unit) string {
	var sb strings.Builder
	for k, u := range us {
		if k > 0 {
			sb.WriteString(u.join)
		}
		if startsTable(us, k) {
			sb.WriteString(u.header)
			sb.WriteByte('\n')
		}
		sb.WriteString(u.text)
	}
	return sb.String()
}

// withOverlap prefixes body with the tail of prev, shrinking the tail until
// the whole text fits MaxTokens + OverlapTokens; it returns the text and its
// token count.
func (s *splitter) withOverlap(prev, body string) (string, int) {
	limit := s.opts.MaxTokens + s.opts.OverlapTokens
	for want := s.opts.OverlapTokens; want > 0; want = want * 3 / 4 {
		tail := s.tail(prev, want)
		if tail == "" {
			break
		}
		text := tail + "\n\n" + body
		if n := s.tok.Count(text); n <= limit {
			return text, n
		}
	}
	return body, s.tok.Count(body)
}

// tailBytesPerToken bounds how many bytes of the previous chunk tail
// tokenises to find its last tokens: cl100k and o200k average about 4 bytes
// a token for English and 2–3 for Cyrillic, so 12 leaves room; only the
// tail is tokenised, not the whole previous chunk.
const tailBytesPerToken = 12

// sentenceEnd matches the end of a sentence and the white space after it,
// or a line break. A full stop after a digit or another full stop does not
// end a sentence, so clause numbers ("4.3.6. CONNECT") and dot leaders stay
// whole; the match includes the character before the punctuation.
var sentenceEnd = regexp.MustCompile(`(?:[^\d\s.][.]|[!?…;。])["'»”’)\]]*\s+|\n`)

// tail is the end of text holding at most about n tokens, starting at a
// sentence start when that keeps at least n/2 tokens, else at a word start.
func (s *splitter) tail(text string, n int) string {
	if limit := n * tailBytesPerToken; len(text) > limit {
		cut := len(text) - limit
		// Start the window at a word so the suffix tokenises as it does in place.
		if k := strings.IndexFunc(text[cut:], unicode.IsSpace); k >= 0 {
			cut += k
		}
		text = strings.TrimLeftFunc(text[cut:], unicode.IsSpace)
	}
	toks := s.tok.Tokens(text)
	if len(toks) <= n {
		return text
	}
	off := 0
	for _, t := range toks[:len(toks)-n] {
		off += len(t)
	}
	rest := text[off:]
	half := 0
	for _, t := range toks[len(toks)-n : len(toks)-n/2] {
		half += len(t)
	}
	if loc := sentenceEnd.FindStringIndex(rest); loc != nil && loc[1] <= half {
		return strings.TrimSpace(rest[loc[1]:])
	}
	if k := strings.IndexFunc(rest, unicode.IsSpace); k >= 0 {
		return strings.TrimSpace(rest[k:])
	}
	// One long word: start at the next whole character.
	for len(rest) > 0 && !utf8.RuneStart(rest[0]) {
		rest = rest[1:]
	}
	return rest
}

// piece is a part of an over-long leaf and the white space before it.
type piece struct {
	text string
	join string
	// tokens is text's token count when fitLimit counted it, else 0.
	tokens int
}

// pieces splits text (longer than MaxTokens) into sentences, and any
// sentence still longer than MaxTokens into word windows, keeping the
// white space between pieces so that joining them restores the text.
func (s *splitter) pieces(text string) []piece {
	var out []piece
	start, join := 0, ""
	emit := func(end, next int) {
		if seg := text[start:end]; strings.TrimSpace(seg) != "" {
			out = append(out, s.fit(seg, join)...)
		}
		join = text[end:next]
		start = next
	}
	for _, loc := range sentenceEnd.FindAllStringIndex(text, -1) {
		// Keep the sentence's punctuation; the white space becomes the join.
		end := loc[0] + len(strings.TrimRightFunc(text[loc[0]:loc[1]], unicode.IsSpace))
		emit(end, loc[1])
	}
	emit(len(text), len(text))
	if len(out) > 0 && out[0].join != "" {
		out[0].join = ""
	}
	return out
}

// fit returns seg as one piece when it fits MaxTokens, else as greedy word
// windows that do (a window is checked by tokenising it; a single word
// longer than the limit is cut at character boundaries by bisection).
func (s *splitter) fit(seg, join string) []piece {
	return s.fitLimit(seg, join, s.opts.MaxTokens)
}

// fitLimit is fit with limit tokens in place of MaxTokens (limit >= 1).
func (s *splitter) fitLimit(seg, join string, limit int) []piece {
	limit = max(limit, 1)
	if len(seg) > hugeSegmentTokens*limit {
		return s.fitHuge(seg, join, limit)
	}
	if n := s.tok.Count(seg); n <= limit {
		return []piece{{text: seg, join: join, tokens: n}}
	}
	words := wordSpans(seg)
	if len(words) <= 1 {
		mid := len(seg) / 2
		for mid > 0 && !utf8.RuneStart(seg[mid]) {
			mid--
		}
		if mid == 0 {
			return []piece{{text: seg, join: join}}
		}
		return append(s.fitLimit(seg[:mid], join, limit), s.fitLimit(seg[mid:], "", limit)...)
	}
	var windows [][2]int // byte spans of greedy word windows
	first, total := 0, 0
	for k, w := range words {
		n := s.tok.Count(" " + seg[w[0]:w[1]])
		if k > first && total+n > limit {
			windows = append(windows, [2]int{words[first][0], words[k-1][1]})
			first, total = k, 0
		}
		total += n
	}
	windows = append(windows, [2]int{words[first][0], words[len(words)-1][1]})
	if len(windows) == 1 {
		// The estimate said the words fit but the text does not: halve.
		mid := len(words) / 2
		windows = [][2]int{{words[0][0], words[mid-1][1]}, {words[mid][0], words[len(words)-1][1]}}
	}
	var out []piece
	prevEnd := -1
	for _, w := range windows {
		j := join
		if prevEnd >= 0 {
			j = seg[prevEnd:w[0]]
		}
		out = append(out, s.fitLimit(seg[w[0]:w[1]], j, limit)...)
		prevEnd = w[1]
	}
	return out
}

// hugeSegmentTokens: a segment longer than this many bytes per token of
// the limit (32 KiB at 512 tokens; no sentence of a real document is that
// long) is cut by fitHuge before fitLimit's word windows and halving.
const hugeSegmentTokens = 64

// hugeSampleBytes is how much of a huge segment fitHuge counts to estimate
// its bytes per token.
const hugeSampleBytes = 64 << 10

// fitHuge cuts a huge segment (a line of megabytes, a base64 blob) into
// windows of about limit tokens, estimated from the bytes per token of the
// segment's first hugeSampleBytes and ended at the last white space of the
// window's second half (or a rune boundary), and fits each window. Each
// byte is counted a bounded number of times, so its cost is linear in the
// segment's length, where word-by-word counting and halving of the whole
// run are not.
func (s *splitter) fitHuge(seg, join string, limit int) []piece {
	sample := seg[:min(len(seg), hugeSampleBytes)]
	for len(sample) < len(seg) && !utf8.RuneStart(seg[len(sample)]) {
		sample = seg[:len(sample)+1]
	}
	tokens := max(s.tok.Count(sample), 1)
	width := max(int(float64(limit)*float64(len(sample))/float64(tokens)*0.9), 1)
	var out []piece
	for start := 0; start < len(seg); {
		checkStop(s.ctx)
		end := min(start+width, len(seg))
		if end < len(seg) {
			if ws := strings.LastIndexFunc(seg[start+width/2:end], unicode.IsSpace); ws >= 0 {
				end = start + width/2 + ws
			}
			for end < len(seg) && !utf8.RuneStart(seg[end]) {
				end++
			}
		}
		next := end
		for next < len(seg) && unicode.IsSpace(rune(seg[next])) {
			next++
		}
		if w := seg[start:end]; strings.TrimSpace(w) != "" {
			out = append(out, s.fitLimit(w, join, limit)...)
			join = seg[end:next]
		}
		start = next
	}
	return out
}

// wordSpans are the [start, end) byte spans of the white-space separated
// words of s.
func wordSpans(s string) [][2]int {
	var out [][2]int
	start := -1
	for i, r := range s {
		if unicode.IsSpace(r) {
			if start >= 0 {
				out = append(out, [2]int{start, i})
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		out = append(out, [2]int{start, len(s)})
	}
	return out
}
