package chunker

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
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
	// the start of the next chunk when that starts among leaves of the same
	// parent (or inside a leaf), cut forward to a sentence or word boundary
	// (so usually a little less). It must be in [0, MaxTokens). A chunk's
	// whole Text, overlap included, never exceeds MaxTokens +
	// OverlapTokens tokens; a chunk without overlap never exceeds
	// MaxTokens.
	OverlapTokens int
	// Tokenizer counts tokens; nil means DefaultTokenizer() (cl100k_base).
	Tokenizer *Tokenizer
	// TargetTokens sets the reach of the content-defined boundaries (see
	// Split): boundaries are at least TargetTokens/2 tokens apart and
	// about TargetTokens on average before neighbouring pieces that fit
	// MaxTokens together are merged; 0 means half of MaxTokens. It must
	// not exceed MaxTokens.
	TargetTokens int
}

// unit is one packable piece of a leaf: the whole leaf, or a sentence (or
// word window, or table row group) of a leaf longer than MaxTokens.
type unit struct {
	elem   string // address path of the leaf
	key    string // leaf address, "#" and a piece key appended for later pieces
	text   string
	tokens int
	join   string // separator before this unit when it follows a piece of the same leaf
	// header is, for a row group of a table too long for one chunk, the
	// table's caption and header rows, written before the first unit of the
	// table in every chunk; headerTokens is its token count.
	header       string
	headerTokens int
	// cite is the leaf's own citation ("" for most paragraphs); ancCite is
	// the citation of the nearest cited element above the leaf.
	cite, ancCite string
	// frames are the containers from the document down to the leaf's
	// parent (shared between the leaves of one parent; never modified).
	frames []container
}

// container is one container above a leaf.
type container struct {
	path  string // address path
	title string // heading shown for it: a section's or annex's Title, else ""
}

// parent is the address path of the unit's parent element.
func (u *unit) parent() string { return u.frames[len(u.frames)-1].path }

// Split groups the leaves of root into chunks, walking the tree in
// document order.
//
// Packing. The leaves of the whole document (paragraphs, lists, tables,
// code blocks, clauses; a leaf longer than MaxTokens cut into sentences,
// word windows or row groups) form one sequence, and a chunk is a stretch
// of it: neighbouring small elements of one parent, and small
// consecutive sections, share a chunk up to MaxTokens. Where a chunk holds
// the start of a section that is not its first element's, the section's
// heading (and those of the sections entered with it) is written in the
// text before its first element, so the text reads in document order
// under its headings.
//
// Boundaries are content-defined, so that an edit moves only the
// boundaries near it. Each gap between two neighbouring units is scored
// by its structure first — the shallower the deepest element the two
// units share, the stronger (a gap between two articles beats a gap
// between two paragraphs of one article, which beats a gap between two
// sentences of one paragraph) — and then by xxhash64 of the start of the
// text before the gap (its first 32 bytes, white space collapsed; the
// whole text breaks ties), so an edit past the first words of a
// paragraph or sentence changes no gap's rank. A chunk boundary is a gap stronger than every other gap within
// TargetTokens/2 tokens of it on either side (a local maximum; the start
// and end of the document count as the strongest gaps), so boundaries
// are at least that far apart and fall on the strongest structural break
// in reach. Whether a gap is a boundary depends on the text within that
// reach, not on where the previous chunk ended, so an edit changes the
// chunk that holds it and at most a neighbour or two, where greedy
// left-to-right packing would shift every later boundary. A stretch
// between two boundaries longer than MaxTokens is halved at its strongest
// gap among those that leave both halves within MaxTokens and at least a
// quarter of it. Last, the boundary between two neighbouring pieces that
// fit MaxTokens together is dropped where it is weaker than the
// boundaries on either side of the pair: that decision too depends on
// three pieces only, and it packs the pieces the windows left small.
//
// A leaf longer than MaxTokens is split into sentences (and a sentence
// longer than MaxTokens into word windows, a word into rune windows), and
// a table with header rows into row groups that each repeat the header:
// text is never truncated or dropped.
//
// Addresses and ids. Chunk.Address is the address path of the chunk's
// first element plus, for a later piece of a long leaf, "#" and a hash of
// the piece's text ("rfc7231.txt › 6 › 6.5 › 6.5.1 › p2", "… › p2#9b0e");
// Chunk.ID is the hex xxhash64 of that address. Chunk.Parent is the
// deepest element that holds every element of the chunk; Chunk.Context
// the heading path of the first element. Leaves are named by ordinal in
// small parents and by a hash of the start of their text in large ones
// (see assignLeafAddresses), so inserting or deleting a leaf renames at
// most the later leaves of one small parent.
//
// Overlap. A chunk that starts inside a run of leaves of one parent (or
// inside a leaf) starts with the last OverlapTokens tokens of the
// previous chunk's text from that parent (cut forward to a sentence start
// when that keeps at least half of them, else to a word start), then a
// blank line, then its own text. A chunk that starts at a section break
// has no overlap.
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
		opts.TargetTokens = opts.MaxTokens * defaultTargetPercent / 100
	}
	if opts.TargetTokens < 0 || opts.TargetTokens > opts.MaxTokens {
		return nil, fmt.Errorf("split %s: target tokens %d must be in [1, max tokens %d]", docKey, opts.TargetTokens, opts.MaxTokens)
	}
	if opts.Tokenizer == nil {
		opts.Tokenizer = DefaultTokenizer()
	}
	s := &splitter{ctx: ctx, opts: opts, tok: opts.Tokenizer, seen: map[string]int{}}
	cite := root.Citation
	s.walk(root, []container{{path: docKey}}, cite)
	s.pack()
	return s.out, nil
}

// defaultTargetPercent is TargetTokens as a percentage of MaxTokens when
// it is 0.
const defaultTargetPercent = 50

type splitter struct {
	ctx   context.Context // nil: never cancelled
	opts  Options
	tok   *Tokenizer
	units []unit
	out   []Chunk
	seen  map[string]int // chunk addresses, to keep them unique
}

// walk appends the units of the leaves under e (whose containers from the
// root down to e are frames) in document order.
func (s *splitter) walk(e *Element, frames []container, cite string) {
	path := frames[len(frames)-1].path
	for _, c := range e.Children {
		if len(c.Children) == 0 && !isContainer(c.Kind) {
			s.leaf(c, path, frames, cite)
			continue
		}
		f := container{path: path + PathSep + c.Address}
		if (c.Kind == KindSection || c.Kind == KindAnnex) && c.Title != "" {
			f.title = c.Title
		}
		cc := cite
		if c.Citation != "" {
			cc = c.Citation
		}
		s.walk(c, append(frames[:len(frames):len(frames)], f), cc)
	}
}

// leaf appends the units of one leaf.
func (s *splitter) leaf(l *Element, path string, frames []container, cite string) {
	checkStop(s.ctx)
	text := strings.TrimSpace(l.Text)
	if text == "" {
		return
	}
	if l.Kind == KindTable && l.Title != "" {
		text = l.Title + "\n" + text
	}
	elem := path + PathSep + l.Address
	base := unit{elem: elem, key: l.Address, join: "\n\n", cite: l.Citation, ancCite: cite, frames: frames}
	n := s.tok.Count(text)
	if n <= s.opts.MaxTokens {
		u := base
		u.text, u.tokens = text, n
		s.units = append(s.units, u)
		return
	}
	if rows, ok := s.tableRows(l, base); ok {
		s.units = append(s.units, rows...)
		return
	}
	for k, p := range s.pieces(text) {
		u := base
		if k > 0 {
			u.key = l.Address + "#" + pieceKey(p.text)
			u.join = p.join
		}
		u.text, u.tokens = p.text, p.tokens
		if u.tokens == 0 {
			u.tokens = s.tok.Count(p.text)
		}
		s.units = append(s.units, u)
	}
}

// shared is how deep units a and b (neighbours) are in the same element:
// the number of containers they share, plus one when they are pieces of
// the same leaf.
func shared(a, b *unit) int {
	if a.elem == b.elem {
		return len(a.frames) + 1
	}
	n := 0
	for n < len(a.frames) && n < len(b.frames) && a.frames[n].path == b.frames[n].path {
		n++
	}
	return n
}

// gap is the break between units k and k+1.
type gap struct {
	depth int    // shared(units[k], units[k+1]): lower is a stronger break
	hash  uint64 // xxhash64 of the start of units[k].text (gapKeyBytes)
	tie   uint64 // xxhash64 of units[k].text: breaks ties between equal starts
	at    int    // estimated tokens from the first unit to the end of units[k]
}

// stronger reports whether gap a beats gap b as a chunk boundary.
func (a gap) stronger(b gap) bool {
	if a.depth != b.depth {
		return a.depth < b.depth
	}
	if a.hash != b.hash {
		return a.hash > b.hash
	}
	return a.tie > b.tie
}

// gapKeyBytes is how much of the start of the text before a gap (white
// space collapsed, about its first five words) decides the gap's rank
// among gaps of one depth: an edit further into a paragraph or sentence
// leaves the ranks of every gap unchanged, so it moves no boundary
// unless it changes which pieces fit MaxTokens.
const gapKeyBytes = 32

// entered is the heading text written before units[k] when it follows
// units[k-1] in one chunk: the titles of the sections units[k] is in that
// units[k-1] is not, outermost first, one a line ("" when none).
func (s *splitter) entered(k int) string {
	if k == 0 {
		return ""
	}
	a, b := &s.units[k-1], &s.units[k]
	if a.elem == b.elem {
		return ""
	}
	var titles []string
	for _, f := range b.frames[shared(a, b):] {
		if f.title != "" {
			titles = append(titles, f.title)
		}
	}
	return strings.Join(titles, "\n")
}

// pack cuts s.units into chunks (see Split) and appends them to s.out.
func (s *splitter) pack() {
	n := len(s.units)
	if n == 0 {
		return
	}
	// Estimated size of each unit inside a chunk that does not start with
	// it: separator, headings entered, a table's header, its text.
	size := make([]int, n)
	enter := make([]string, n)
	gaps := make([]gap, n-1)
	at := 0
	for k := range s.units {
		u := &s.units[k]
		size[k] = u.tokens
		if k > 0 {
			size[k]++
			if enter[k] = s.entered(k); enter[k] != "" {
				size[k] += s.tok.Count(enter[k]) + 1
			}
		}
		if u.header != "" && (k == 0 || s.units[k-1].elem != u.elem) {
			size[k] += u.headerTokens + 1
		}
		at += size[k]
		if k < n-1 {
			gaps[k] = gap{depth: shared(u, &s.units[k+1]), hash: xxhash.Sum64String(textKey(u.text, gapKeyBytes)), tie: xxhash.Sum64String(u.text), at: at}
		}
	}
	window := max(s.opts.TargetTokens/2, 1)
	var cuts []int // chunk starts after the first
	maxT := s.opts.MaxTokens
	var cut func(lo, hi int)
	// cut adds the boundaries of units[lo:hi] when it is over MaxTokens:
	// it is halved at its strongest gap among those that leave both
	// halves within MaxTokens (for a stretch of up to twice MaxTokens)
	// and at least a quarter of it, and the halves are cut in turn.
	cut = func(lo, hi int) {
		if hi-lo < 2 || s.span(size, lo, hi) <= maxT {
			return
		}
		start := 0
		if lo > 0 {
			start = gaps[lo-1].at
		}
		end := gaps[hi-2].at + size[hi-1]
		l := end - start
		from, to := start+l/4, start+3*l/4
		if l <= 2*maxT {
			from, to = start+max(l-maxT, l/4), start+min(maxT, 3*l/4)
		}
		best := -1
		for g := lo; g < hi-1; g++ {
			if x := gaps[g].at; x >= from && x <= to && (best < 0 || gaps[g].stronger(gaps[best])) {
				best = g
			}
		}
		if best < 0 { // no gap in the middle: the one nearest to it
			mid := start + l/2
			for g := lo; g < hi-1; g++ {
				if best < 0 || abs(gaps[g].at-mid) < abs(gaps[best].at-mid) {
					best = g
				}
			}
		}
		checkStop(s.ctx)
		cut(lo, best+1)
		cuts = append(cuts, best+1)
		cut(best+1, hi)
	}
	// The whole document: stretches between boundaries of the full window.
	prev := 0
	end := at
	for g := range gaps {
		checkStop(s.ctx)
		x := gaps[g].at
		if x < window || end-x < window || !s.localMax(gaps, g, 0, n-1, window) {
			continue
		}
		cut(prev, g+1)
		cuts = append(cuts, g+1)
		prev = g + 1
	}
	cut(prev, n)
	cuts = append(cuts, n)
	cuts = s.merge(size, gaps, cuts)
	i := 0
	prevStart := -1
	for _, j := range cuts {
		for i < j {
			k := s.emit(i, j, prevStart, enter)
			prevStart = i
			i = k
		}
	}
}

// merge drops the boundaries between two neighbouring pieces that fit
// MaxTokens together where the boundary is weaker than the boundaries on
// either side of the pair (the document's ends the strongest), so that no
// two neighbouring boundaries are dropped and each decision depends on
// three pieces. cuts are the ends of the pieces, the last n.
func (s *splitter) merge(size []int, gaps []gap, cuts []int) []int {
	out := make([]int, 0, len(cuts))
	start := func(k int) int {
		if k == 0 {
			return 0
		}
		return cuts[k-1]
	}
	for k := 0; k < len(cuts)-1; k++ {
		b := cuts[k] // boundary between piece k and k+1
		fits := s.span(size, start(k), cuts[k+1]) <= s.opts.MaxTokens
		weaker := (k == 0 || gaps[cuts[k-1]-1].stronger(gaps[b-1])) && (k+2 >= len(cuts) || gaps[cuts[k+1]-1].stronger(gaps[b-1]))
		if fits && weaker {
			continue
		}
		out = append(out, b)
	}
	return append(out, cuts[len(cuts)-1])
}

// localMax reports whether gaps[g] is stronger than every other gap in
// gaps[lo:hi] within window tokens of it.
func (s *splitter) localMax(gaps []gap, g, lo, hi, window int) bool {
	x := gaps[g].at
	for k := g - 1; k >= lo && x-gaps[k].at <= window; k-- {
		if !gaps[g].stronger(gaps[k]) {
			return false
		}
	}
	for k := g + 1; k < hi && gaps[k].at-x <= window; k++ {
		if !gaps[g].stronger(gaps[k]) {
			return false
		}
	}
	return true
}

// span is the estimated size of a chunk made of units[lo:hi].
func (s *splitter) span(size []int, lo, hi int) int {
	t := s.units[lo].tokens
	if u := s.units[lo]; u.header != "" {
		t += u.headerTokens + 1
	}
	for k := lo + 1; k < hi; k++ {
		t += size[k]
	}
	return t
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// emit appends the chunk that starts at units[i] and ends at units[j-1]
// or, when its real text is over the limit, earlier; it returns the end
// (exclusive) of the chunk it made. prevStart is the first unit of the
// previous chunk (-1: none).
func (s *splitter) emit(i, j, prevStart int, enter []string) int {
	checkStop(s.ctx)
	first := &s.units[i]
	// Overlap: the tail of the previous chunk's text from this unit's parent.
	prevBody := ""
	if i > 0 && prevStart >= 0 && s.opts.OverlapTokens > 0 && s.units[i-1].parent() == first.parent() {
		k := i - 1
		for k > prevStart && s.units[k-1].parent() == first.parent() {
			k--
		}
		prevBody = s.join(k, i, nil)
	}
	var body, text string
	var tokens int
	// The estimates can differ from the joined text's count at the joins:
	// count the real text and give back units while it is over the limit.
	for {
		body = s.join(i, j, enter)
		if prevBody != "" {
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
	address := first.parent() + PathSep + first.key
	if n := s.seen[address]; n > 0 {
		s.seen[address] = n + 1
		address += "~" + strconv.Itoa(n+1)
	} else {
		s.seen[address] = 1
	}
	var elems []string
	common := len(first.frames)
	for k := i; k < j; k++ {
		u := &s.units[k]
		if len(elems) == 0 || elems[len(elems)-1] != u.elem {
			elems = append(elems, u.elem)
		}
		if k > i {
			common = min(common, shared(&s.units[k-1], u))
		}
	}
	var headings []string
	for _, f := range first.frames {
		if f.title != "" {
			headings = append(headings, f.title)
		}
	}
	citation := first.cite
	if citation == "" {
		citation = first.ancCite
	}
	s.out = append(s.out, Chunk{
		ID:       fmt.Sprintf("%016x", xxhash.Sum64String(address)),
		Address:  address,
		Context:  strings.Join(headings, PathSep),
		Text:     text,
		Position: len(s.out),
		Tokens:   tokens,
		Parent:   first.frames[common-1].path,
		Elements: elems,
		Citation: citation,
	})
	return j
}

// join is the text of units[i:j] as one chunk: the units' texts with
// their separators, a table's header before its first row group, and
// (with enter) the headings of sections entered after the first unit.
func (s *splitter) join(i, j int, enter []string) string {
	var sb strings.Builder
	for k := i; k < j; k++ {
		u := &s.units[k]
		if k > i {
			if s.units[k-1].elem == u.elem {
				sb.WriteString(u.join)
			} else {
				sb.WriteString("\n\n")
			}
			if enter != nil && enter[k] != "" {
				sb.WriteString(enter[k])
				sb.WriteByte('\n')
			}
		}
		if u.header != "" && (k == i || s.units[k-1].elem != u.elem) {
			sb.WriteString(u.header)
			sb.WriteByte('\n')
		}
		sb.WriteString(u.text)
	}
	return sb.String()
}

// tableRows cuts a table too long for one chunk into row units that carry
// the table's caption and header rows (see unit.header), so every chunk
// holding rows of the table starts with its header. A row longer than the
// room left beside the header is cut like a long sentence. ok is false for
// a table without header rows or with a header over half of MaxTokens;
// such a table is cut like text.
func (s *splitter) tableRows(l *Element, base unit) ([]unit, bool) {
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
			u := base
			u.key, u.text, u.tokens, u.join, u.header, u.headerTokens = key, p.text, s.tok.Count(p.text), join, header, ht
			out = append(out, u)
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

// sentenceEnd returns the pattern of the end of a sentence and the white
// space after it, or a line break, compiled on first use. A full stop after
// a digit or another full stop does not end a sentence, so clause numbers
// ("4.3.6. CONNECT") and dot leaders stay whole; the match includes the
// character before the punctuation.
var sentenceEnd = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:[^\d\s.][.]|[!?…;。])["'»”’)\]]*\s+|\n`)
})

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
	if loc := sentenceEnd().FindStringIndex(rest); loc != nil && loc[1] <= half {
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
	for _, loc := range sentenceEnd().FindAllStringIndex(text, -1) {
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
