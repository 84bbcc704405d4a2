package retrieval

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/kgsync/kgsync/chunker"
)

// Expansion is one piece of context added to a search hit: part of the
// minimal sufficient context an assistant needs besides the hit itself.
type Expansion struct {
	// ID and Label name the node (an Element or Section).
	ID    string `json:"id"`
	Label string `json:"label"`
	// Reason says why it was added: "same clause as the hit (Article 7)",
	// "mandatory with <id> (note)", "referenced as \"Section 5.2\"",
	// "defines \"proxy\"".
	Reason string `json:"reason"`
	// Text is the node's text (a section: its title and its elements' text
	// that fit the budget).
	Text string `json:"text"`
	// Covers are the leaf elements whose text Text holds.
	Covers []string `json:"covers"`
	// Tokens is the size of Text in tokens.
	Tokens int `json:"tokens"`
}

// DefaultBudget is the token budget of an expanded context when none is
// given: the hits and their expansions together.
const DefaultBudget = 2500

// Expansion kinds, in the order of their priority for a hit: what the
// hit's own words need to be understood first.
const (
	expandQuestionTerm = 1.1  // the definition of a term the question names
	expandTerm         = 1.0  // the definition of a term the hit uses
	expandMandatory    = 0.95 // a MANDATORY neighbour
	expandClause       = 0.9  // the rest of the hit's clause, nearest parts first
	expandRef          = 0.8  // a cross-reference target the hit names
	expandMention      = 0.7  // a section whose heading the hit names ("302 (Found)")
	// expandMore is a hit beyond k (SearchExpand): divided by the square
	// root of its rank, it comes after the first hits' clauses and
	// references and among the later hits' (rank 6: 0.41, rank 20:
	// 0.22). Measured on the golden tuning sets, 1.3 and above cost more
	// answers (context the first hits need) than the extra hits found.
	expandMore = 1.0
)

// clauseDecay is how much a part of the hit's clause weighs less per part
// it stands away from the hit, down to clauseFloor: the parts next to the
// hit come before its references, the far parts of a long article after
// them (tuned on the golden tuning sets).
const (
	clauseDecay = 0.05
	clauseFloor = expandMention + 0.01
)

// maxSectionTokens bounds the text of a referenced section;
// maxDefinitionTokens that of a term's definition.
const (
	maxSectionTokens    = 1000
	maxDefinitionTokens = 250
)

// Context is an expanded search result: the hits that fit the budget, each
// with its expansions, and the total size.
type Context struct {
	Hits []Hit `json:"hits"`
	// Tokens is the size of every hit's text and expansion.
	Tokens int `json:"tokens"`
	// Budget is the budget it was built in.
	Budget int `json:"budget"`
	// Omitted is what was left out for lack of budget, by priority: the
	// first k hits that did not fit, then context a hit needed (hits
	// beyond k that did not fit are not listed).
	Omitted []Omission `json:"omitted,omitempty"`
}

// Omission is a hit or an expansion left out of a context for lack of
// budget.
type Omission struct {
	// ID names the node (a hit's chunk, or the element or section an
	// expansion would have added); Reason says what it was ("hit 4",
	// "defines \"serious incident\"").
	ID     string `json:"id"`
	Reason string `json:"reason"`
	// Tokens is its size in tokens.
	Tokens int `json:"tokens"`
}

// maxOmissions bounds Context.Omitted.
const maxOmissions = 10

// Covered lists the leaf elements whose text the context holds.
func (c *Context) Covered() map[string]bool {
	out := map[string]bool{}
	for _, h := range c.Hits {
		for _, e := range h.Elements {
			out[e] = true
		}
		for _, x := range h.Expansions {
			for _, e := range x.Covers {
				out[e] = true
			}
		}
	}
	return out
}

// item is one candidate piece of a context.
type item struct {
	more     int // with exp nil: the index of a hit beyond k
	hit      int // index of the hit it belongs to
	exp      *Expansion
	priority float64
}

// Expand builds the minimal sufficient context of hits within budget
// tokens (DefaultBudget when budget <= 0); ExpandResult with no question.
func (s *Searcher) Expand(ctx context.Context, hits []Hit, budget int) (*Context, error) {
	return s.expand(ctx, hits, nil, nil, budget)
}

// ExpandResult builds the minimal sufficient context of a search result
// within budget tokens (DefaultBudget when budget <= 0). The hits' own
// text comes first, in rank order, as many as fit: context never takes a
// hit's place. Then, by priority, what they need: the definitions of the
// terms the question names (res.Terms) and of those each hit uses, the
// MANDATORY neighbours of its elements and their sections, the rest of its
// clause (an article's or a section's other parts, nearest first), the
// targets of its cross-references (one hop) and the sections whose heading
// it names; a hit's rank weighs its needs (1/√rank). Nothing is repeated:
// an element already in the context is not added again. What did not fit
// is listed in Context.Omitted.
func (s *Searcher) ExpandResult(ctx context.Context, res *Result, budget int) (*Context, error) {
	return s.expand(ctx, res.Hits, nil, res.Terms, budget)
}

// SearchExpand searches query (as Search) and builds the context of its
// result within budget tokens (DefaultBudget when budget <= 0) as
// ExpandResult does, with the next-ranked hits beyond opts.K (up to
// MoreHits of them; whole, else cut to the part the query matched) among
// the candidates, at a priority below the first hits' clauses and
// references: more candidates raise the chance that the answer is in
// what the user receives when it is not in the first k. The Result has
// the first k hits only; the Context's hits beyond them come after the
// first k, in rank order. A declined search is returned with a nil
// Context.
func (s *Searcher) SearchExpand(ctx context.Context, query string, opts Options, budget int) (*Result, *Context, error) {
	k := opts.K
	if k <= 0 {
		k = s.config().K
	}
	if k <= 0 {
		k = 5
	}
	opts.K = k
	res, err := s.Search(ctx, query, opts)
	if err != nil || len(res.Hits) == 0 {
		return res, nil, err
	}
	// A search for more hits ranks more candidates per signal, so its
	// first k may differ from the result's: the result's stay, the wider
	// search's others follow in its order.
	wide := opts
	wide.K, wide.NoFloor = k+MoreHits, true
	w, err := s.Search(ctx, query, wide)
	if err != nil {
		return nil, nil, err
	}
	d, err := s.load(ctx)
	if err != nil {
		return nil, nil, err
	}
	var more []Hit
	for _, h := range w.Hits {
		// The wider search may rank another copy of a result's hit
		// first: it is that hit again, not one more passage.
		if !slices.ContainsFunc(res.Hits, func(r Hit) bool { return r.ID == h.ID || d.sameRendition(r, h) }) && len(more) < MoreHits {
			more = append(more, h)
		}
	}
	c, err := s.expand(ctx, res.Hits, more, res.Terms, budget)
	return res, c, err
}

// MoreHits is how many hits beyond k SearchExpand may add to a context
// when its budget allows.
const MoreHits = 15

func (s *Searcher) expand(ctx context.Context, hits, more []Hit, terms []string, budget int) (*Context, error) {
	d, err := s.load(ctx)
	if err != nil {
		return nil, fmt.Errorf("expand: %w", err)
	}
	if budget <= 0 {
		budget = DefaultBudget
	}
	tok := chunker.DefaultTokenizer()
	out := &Context{Budget: budget}
	omit := func(id, reason string, n int) {
		if len(out.Omitted) < maxOmissions && !slices.ContainsFunc(out.Omitted, func(o Omission) bool { return o.ID == id }) {
			out.Omitted = append(out.Omitted, Omission{ID: id, Reason: reason, Tokens: n})
		}
	}
	in := map[int]bool{}
	present := map[string]bool{}
	hits = slices.Clone(hits)
	for i, h := range hits {
		if len(h.Elements) > 0 && !slices.ContainsFunc(h.Elements, func(e string) bool { return !present[e] }) {
			continue // an earlier hit holds it already
		}
		n := h.Tokens
		if n == 0 {
			n = tok.Count(h.Text)
		}
		if out.Tokens+n > budget && len(in) > 0 {
			// A hit that does not fit whole comes cut to the part its
			// query matched (its clause or paragraph), rather than not
			// at all.
			t, ok := d.matchedPart(h, tok)
			if !ok || out.Tokens+t.Tokens > budget {
				omit(h.ID, fmt.Sprintf("hit %d", i+1), n)
				continue
			}
			hits[i], n = t, t.Tokens
		}
		in[i] = true
		out.Tokens += n
		for _, e := range h.Elements {
			present[e] = true
		}
	}
	var items []item
	for i, h := range hits {
		if !in[i] {
			continue
		}
		rank := 1 / math.Sqrt(float64(i+1))
		for _, x := range d.expansions(h, tok) {
			items = append(items, item{hit: i, exp: x.exp, priority: rank * x.priority})
		}
	}
	items = append(items, d.questionTerms(terms, hits, in, tok)...)
	for j := range more {
		items = append(items, item{more: j, priority: expandMore / math.Sqrt(float64(len(hits)+j+1))})
	}
	slices.SortStableFunc(items, func(a, b item) int {
		switch {
		case a.priority > b.priority:
			return -1
		case a.priority < b.priority:
			return 1
		}
		return 0
	})
	exps := map[int][]Expansion{}
	// A hit beyond k: whole, else cut to the part the query matched.
	var extra []Hit
	addMore := func(j int) {
		h := more[j]
		keep := slices.DeleteFunc(slices.Clone(h.Elements), func(e string) bool { return present[e] })
		if len(keep) == 0 {
			return // the context holds it already
		}
		if len(keep) < len(h.Elements) {
			h = d.x.cut(h, keep, tok)
		}
		if out.Tokens+h.Tokens > budget {
			if t, ok := d.matchedPart(h, tok); ok {
				h = t
			}
		}
		if out.Tokens+h.Tokens > budget {
			return // a candidate, not something the first hits need: not listed in Omitted
		}
		out.Tokens += h.Tokens
		for _, e := range h.Elements {
			present[e] = true
		}
		extra = append(extra, h)
	}
	for _, it := range items {
		if it.exp == nil {
			addMore(it.more)
			continue
		}
		x := *it.exp
		x.Covers = slices.DeleteFunc(slices.Clone(x.Covers), func(e string) bool { return present[e] })
		if len(x.Covers) == 0 {
			continue
		}
		if len(x.Covers) < len(it.exp.Covers) {
			x.Text, x.Tokens = d.x.textOf(x.ID, x.Covers, tok)
		}
		if out.Tokens+x.Tokens > budget {
			omit(x.ID, x.Reason, x.Tokens)
			continue
		}
		out.Tokens += x.Tokens
		for _, e := range x.Covers {
			present[e] = true
		}
		exps[it.hit] = append(exps[it.hit], x)
	}
	for i, h := range hits {
		if in[i] {
			h.Expansions = d.x.merge(exps[i], tok)
			out.Hits = append(out.Hits, h)
		}
	}
	out.Hits = append(out.Hits, extra...)
	return out, nil
}

// matchedPart is a hit cut to its elements in the node its query
// matched (Hit.Match); ok is false when that is the whole hit.
func (d *corpusData) matchedPart(h Hit, tok *chunker.Tokenizer) (Hit, bool) {
	if h.Match == nil {
		return h, false
	}
	m := d.x.leaves(h.Match.ID)
	keep := slices.DeleteFunc(slices.Clone(h.Elements), func(e string) bool { return !slices.Contains(m, e) })
	if len(keep) == 0 || len(keep) == len(h.Elements) {
		return h, false
	}
	t := d.x.cut(h, keep, tok)
	// It is still named by its match, at the match's place in the cut text.
	match := *h.Match
	match.Offset = 0
	if n := d.x.nodes[match.ID]; n != nil && n.Label == LabelElement {
		match.Offset = max(strings.Index(t.Text, n.Text), 0)
	}
	t.Match = &match
	return t, true
}

// cut is a hit whose text is its context line and the text of the given
// elements of it, in their order; its Match is dropped (the caller names
// it again when the matched node is kept).
func (x *corpusIndex) cut(h Hit, keep []string, tok *chunker.Tokenizer) Hit {
	var b strings.Builder
	b.WriteString(h.Context)
	for _, e := range keep {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(x.nodes[e].Text)
	}
	h.Text, h.Elements, h.Match = b.String(), keep, nil
	h.Tokens = tok.Count(h.Text)
	return h
}

// questionTerms are the definitions of the terms a question names, each
// attached to the first hit in the context from the term's document (else
// the first hit).
func (d *corpusData) questionTerms(names []string, hits []Hit, in map[int]bool, tok *chunker.Tokenizer) []item {
	var out []item
	first := -1
	for i := range hits {
		if in[i] {
			first = i
			break
		}
	}
	if first < 0 {
		return nil
	}
	for _, name := range names {
		for _, t := range d.x.terms {
			if t.Name != name {
				continue
			}
			at := first
			for i, h := range hits {
				if in[i] && d.x.docOf[firstOr(h.Elements, h.ID)] == d.x.docOf[t.DefinedIn] {
					at = i
					break
				}
			}
			id, leaves := d.x.definition(t.DefinedIn, tok)
			if len(leaves) == 0 {
				continue
			}
			text, n := d.x.textOf(id, leaves, tok)
			out = append(out, item{hit: at, priority: expandQuestionTerm, exp: &Expansion{ID: id, Label: d.x.label(id),
				Reason: fmt.Sprintf("defines %q, which the question names", t.Name), Text: text, Covers: leaves, Tokens: n}})
		}
	}
	return out
}

// merge joins the expansions that have the same reason (the parts of one
// clause, added one by one) into one, and puts each expansion's elements
// and the expansions themselves in document order.
func (x *corpusIndex) merge(exps []Expansion, tok *chunker.Tokenizer) []Expansion {
	var out []Expansion
	at := map[string]int{}
	for _, e := range exps {
		if i, ok := at[e.Reason]; ok && strings.HasPrefix(e.Reason, "same clause") {
			out[i].Covers = append(out[i].Covers, e.Covers...)
			continue
		}
		at[e.Reason] = len(out)
		out = append(out, e)
	}
	for i := range out {
		e := &out[i]
		slices.SortFunc(e.Covers, func(a, b string) int { return x.pos[a] - x.pos[b] })
		if strings.HasPrefix(e.Reason, "same clause") {
			if c := x.clauseOf(e.Covers[0]); c != "" {
				e.ID, e.Label = c, LabelSection
			}
			var b strings.Builder
			for _, c := range e.Covers {
				if b.Len() > 0 {
					b.WriteString("\n\n")
				}
				b.WriteString(x.nodes[c].Text)
			}
			e.Text = b.String()
			e.Tokens = tok.Count(e.Text)
		}
	}
	slices.SortStableFunc(out, func(a, b Expansion) int { return x.pos[a.Covers[0]] - x.pos[b.Covers[0]] })
	return out
}

// candidate is one expansion of a hit with its kind's weight.
type candidate struct {
	exp      *Expansion
	priority float64
}

// expansions are the candidate expansions of one hit, best first within
// each kind.
func (d *corpusData) expansions(h Hit, tok *chunker.Tokenizer) []candidate {
	x := d.x
	var out []candidate
	seen := map[string]bool{}
	for _, e := range h.Elements {
		seen[e] = true
	}
	add := func(id, reason string, priority float64, leaves []string) {
		leaves = slices.DeleteFunc(leaves, func(e string) bool { return seen[e] })
		if len(leaves) == 0 {
			return
		}
		for _, e := range leaves {
			seen[e] = true
		}
		text, n := x.textOf(id, leaves, tok)
		label := x.label(id)
		out = append(out, candidate{&Expansion{ID: id, Label: label, Reason: reason, Text: text, Covers: leaves, Tokens: n}, priority})
	}
	// The rest of the clause: the nearest titled section above the hit's
	// elements (an article, a numbered section), when the hit holds part
	// of it.
	var clause []string
	if len(h.Elements) > 0 {
		// A packed chunk covers parts of several clauses: the one an
		// address or a term of the query named, else the first.
		at0 := h.Elements[0]
		if h.Match != nil && (h.Match.By == MatchAddress || h.Match.By == MatchTerm) {
			for _, e := range x.leaves(h.Match.ID) {
				if slices.Contains(h.Elements, e) {
					at0 = e
					break
				}
			}
		}
		if c := x.clauseOf(at0); c != "" {
			leaves := x.leaves(c)
			clause = slices.Clone(leaves)
			if len(leaves) <= 60 {
				// Nearest leaves first, so that a budget cut keeps the
				// neighbours of the hit.
				at := slices.Index(leaves, at0)
				slices.SortStableFunc(leaves, func(a, b string) int {
					return abs(slices.Index(leaves, a)-at) - abs(slices.Index(leaves, b)-at)
				})
				title := x.nodes[c].Address
				if t := x.nodes[c].Title; t != "" {
					title = t
				}
				for _, e := range leaves {
					// Nearer parts first, but every part of the clause
					// before a section the hit names in passing: the
					// clause is what the answer is cited by.
					d := abs(slices.Index(clause, e) - slices.Index(clause, at0))
					add(e, fmt.Sprintf("same clause as the hit (%s)", oneLine(title, 60)), max(expandClause-clauseDecay*float64(d), clauseFloor), []string{e})
				}
			}
		}
	}
	// MANDATORY neighbours of the covered elements and their sections.
	visited := map[string]bool{}
	for _, e := range h.Elements {
		for id := e; id != "" && !visited[id]; id = x.parent(id) {
			visited[id] = true
			for _, m := range x.mandatory[id] {
				reason := "mandatory with " + id
				if m.Text != "" {
					reason += " (" + m.Text + ")"
				}
				add(m.To, reason, expandMandatory, x.boundedLeaves(m.To, tok))
			}
		}
	}
	// Cross-reference targets, one hop: from the hit's elements, then
	// (weighing less) from the rest of its clause.
	for _, e := range h.Elements {
		for _, r := range x.refs[e] {
			add(r.To, fmt.Sprintf("referenced as %q", r.Text), expandRef, x.boundedLeaves(r.To, tok))
		}
	}
	for _, e := range clause {
		for _, r := range x.refs[e] {
			add(r.To, fmt.Sprintf("referenced as %q in the same clause", r.Text), expandRef*0.8, x.boundedLeaves(r.To, tok))
		}
	}
	// Addresses in the hit's text that the document's references did not
	// resolve ("§3.1.4", "(Section 5.2)"), looked up in its document.
	if doc := d.x.docOf[firstOr(h.Elements, h.ID)]; doc != nil {
		for _, e := range h.Elements {
			for _, a := range d.textAddresses(e) {
				for _, n := range d.addr.resolve(a.citation, map[*Document]bool{doc: true}) {
					if !ancestorOf(x, n.ID, e) {
						add(n.ID, fmt.Sprintf("referenced as %q", a.text), expandRef, x.boundedLeaves(n.ID, tok))
					}
				}
			}
		}
	}
	// Sections whose heading the hit names: "302 (Found)" names "6.4.3.
	// 302 Found", "the Retry-After header field" names "7.1.3.
	// Retry-After" — a reference written without its number.
	body := h.Text
	if h.Context != "" {
		body = strings.TrimPrefix(body, h.Context+"\n\n")
	}
	ancestors := map[string]bool{}
	for _, e := range h.Elements {
		for p := x.parent(e); p != ""; p = x.parent(p) {
			ancestors[p] = true
		}
	}
	for _, m := range d.headings.find(body, d.langOf(h)) {
		if d.x.docOf[m] == d.x.docOf[firstOr(h.Elements, h.ID)] && !ancestors[m] {
			n := x.nodes[m]
			add(m, fmt.Sprintf("names the heading %q", oneLine(n.Title, 60)), expandMention*x.mentionWeight(m), x.boundedLeaves(m, tok))
		}
	}
	// And (weighing less) the headings the rest of its clause names, as
	// its references: "201 (Created)" two paragraphs below a PUT hit.
	for _, e := range clause {
		if slices.Contains(h.Elements, e) {
			continue
		}
		n := x.nodes[e]
		if n == nil || len(clause) > 60 {
			break
		}
		for _, m := range d.headings.find(n.Text, d.langOf(h)) {
			if d.x.docOf[m] == d.x.docOf[e] && !ancestors[m] && !ancestorOf(x, m, e) {
				n := x.nodes[m]
				add(m, fmt.Sprintf("names the heading %q in the same clause", oneLine(n.Title, 60)), expandMention*0.8*x.mentionWeight(m), x.boundedLeaves(m, tok))
			}
		}
	}
	// Definitions of the terms the hit uses, in its own document.
	low := strings.ToLower(h.Text)
	hitDoc := d.x.docOf[firstOr(h.Elements, h.ID)]
	for _, t := range x.terms {
		// A term most chunks use ("GET" in an HTTP specification) is
		// the document's vocabulary, not context a hit needs.
		if d.x.docOf[t.DefinedIn] == hitDoc && termIn(low, strings.ToLower(t.Name), d.patterns()) && !d.commonTerm(t) {
			// The definition, not the whole section a term heads (an
			// HTTP method's section defines it in its first paragraph).
			id, leaves := x.definition(t.DefinedIn, tok)
			add(id, fmt.Sprintf("defines %q", t.Name), expandTerm, leaves)
		}
	}
	return out
}

// commonTerm reports whether more than a tenth of its document's chunks
// (and more than three) use a term (cached).
func (d *corpusData) commonTerm(t Term) bool {
	d.termsMu.Lock()
	c, ok := d.termUse[t.ID]
	d.termsMu.Unlock()
	if !ok {
		doc := d.x.docOf[t.DefinedIn]
		name := strings.ToLower(t.Name)
		n, in := 0, 0
		for _, u := range d.units {
			if doc == nil || d.x.docOf[firstOr(u.Elements, "")] != doc {
				continue
			}
			n++
			if termIn(strings.ToLower(u.Text), name, d.patterns()) {
				in++
			}
		}
		c = in > 3 && 10*in > n
		d.termsMu.Lock()
		d.termUse[t.ID] = c
		d.termsMu.Unlock()
	}
	return c
}

// ancestorOf reports whether id is e or one of its ancestors.
func ancestorOf(x *corpusIndex, id, e string) bool {
	for p := e; p != ""; p = x.parent(p) {
		if p == id {
			return true
		}
	}
	return false
}

// textAddresses are the addresses an element's text names (cached).
func (d *corpusData) textAddresses(id string) []queryAddress {
	d.textAddrMu.Lock()
	defer d.textAddrMu.Unlock()
	if a, ok := d.textAddr[id]; ok {
		return a
	}
	var out []queryAddress
	if n, ok := d.x.nodes[id]; ok && n.Text != "" {
		for _, m := range chunker.FindAddresses(n.Text) {
			if m.Citation != "" && m.Doc == "" && !relativeCitation(m.Citation) {
				out = append(out, queryAddress{citation: m.Citation, text: m.Text})
			}
		}
	}
	d.textAddr[id] = out
	return out
}

func firstOr(list []string, alt string) string {
	if len(list) > 0 {
		return list[0]
	}
	return alt
}

// langOf is the language of a hit's document ("" unknown).
func (d *corpusData) langOf(h Hit) string {
	if doc := d.x.docOf[firstOr(h.Elements, h.ID)]; doc != nil {
		return doc.Lang
	}
	return ""
}

// headingIndex finds sections by the words of their heading: the heading
// without its leading number, as tokens (see headingTokens), when it is
// specific enough to be a name — two tokens or more, or one with a digit or
// a hyphen ("302 Found", "Retry-After", "Method sets"; not "Introduction"
// or "Examples").
type headingIndex struct {
	byFirst map[string][]headingName
}

type headingName struct {
	id     string
	tokens []string
}

// reLeadNumber returns the pattern of a heading's own number ("6.4.3. ",
// "A.1 ", "2) "), compiled on first use.
var reLeadNumber = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\s*(?:[A-Z]\.)?\d+(?:\.\d+)*[.):]?\s*(?:-\s+)?`)
})

// genericHeadings are heading words that name no one thing.
var genericHeadings = map[string]bool{"introduct": true, "overview": true, "exampl": true, "descript": true,
	"intent": true, "rational": true, "scope": true, "note": true, "general": true, "definit": true,
	"term": true, "refer": true, "summari": true, "background": true}

// headingTokens splits text into the tokens headings are matched by: runs
// of letters, digits and inner hyphens, lower-cased; a plain word is
// stemmed and stop words dropped, a hyphenated one ("Retry-After",
// "User-Agent") is kept whole, so "user agent" does not name "User-Agent".
func headingTokens(text, lang string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-'
	}) {
		f = strings.Trim(f, "-")
		if f == "" {
			continue
		}
		if strings.Contains(f, "-") {
			out = append(out, f)
			continue
		}
		out = append(out, Terms(f, lang)...)
	}
	return out
}

// newHeadingIndex indexes the section headings a text can name. A
// heading that several sections of one document share ("Verification
// Material(s):" under every requirement) names none of them, so it is
// left out.
func newHeadingIndex(c *Corpus) *headingIndex {
	hx := &headingIndex{byFirst: map[string][]headingName{}}
	for _, d := range c.Documents {
		var names []headingName
		shared := map[string]int{}
		for _, n := range d.Nodes {
			if n.Label != LabelSection || n.Title == "" {
				continue
			}
			toks := headingTokens(reLeadNumber().ReplaceAllString(n.Title, ""), d.Lang)
			names = append(names, headingName{n.ID, toks})
			shared[strings.Join(toks, " ")]++
		}
		for _, h := range names {
			toks := h.tokens
			if len(toks) == 0 || len(toks) > 6 || genericHeadings[toks[0]] && len(toks) < 3 {
				continue
			}
			if len(toks) == 1 && !strings.ContainsAny(toks[0], "-0123456789") || shared[strings.Join(toks, " ")] > 1 {
				continue
			}
			hx.byFirst[toks[0]] = append(hx.byFirst[toks[0]], h)
		}
	}
	return hx
}

// find returns the sections whose heading tokens occur in the tokens of
// text as a run.
func (hx *headingIndex) find(text, lang string) []string {
	toks := headingTokens(text, lang)
	var out []string
	for i, t := range toks {
		for _, h := range hx.byFirst[t] {
			if i+len(h.tokens) <= len(toks) && slices.Equal(toks[i:i+len(h.tokens)], h.tokens) && !slices.Contains(out, h.id) {
				out = append(out, h.id)
			}
		}
	}
	return out
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// clauseOf is the nearest section above an element that has a title (a
// heading: an article, a numbered section), "" when there is none below
// the document.
func (x *corpusIndex) clauseOf(id string) string {
	for p := x.parent(id); p != ""; p = x.parent(p) {
		n, ok := x.nodes[p]
		if !ok {
			return ""
		}
		if n.Label == LabelSection && strings.TrimSpace(n.Title) != "" {
			return p
		}
	}
	return ""
}

// boundedLeaves are a node's leaves, as many as fit maxSectionTokens (an
// element is its own leaf).
func (x *corpusIndex) boundedLeaves(id string, tok *chunker.Tokenizer) []string {
	return x.boundedLeavesN(id, tok, maxSectionTokens)
}

// mentionWeight is how much a section whose heading a hit names weighs as
// context: a section with sections of its own ("3.1. Representation
// Metadata", named as a phrase in passing) half as much as a leaf section
// ("6.3.2. 201 Created").
func (x *corpusIndex) mentionWeight(id string) float64 {
	for _, c := range x.sub[id] {
		if n := x.nodes[c]; n != nil && n.Label == LabelSection {
			return 0.5
		}
	}
	return 1
}

// definition is the node and leaves that define a term defined in the
// node id: id's first leaves within maxDefinitionTokens, or — when id is
// the first paragraph of an untitled numbered point whose other parts
// continue it ("(65) 'serious incident' means … any of the following:"
// and its points (a) to (c)) — the whole point, when it fits.
func (x *corpusIndex) definition(id string, tok *chunker.Tokenizer) (string, []string) {
	if n, ok := x.nodes[id]; ok && n.Label == LabelElement {
		if p := x.parent(id); p != "" && x.clauseOf(id) != p && x.label(p) == LabelSection {
			if all := x.leaves(p); len(all) > 1 && all[0] == id {
				if leaves := x.boundedLeavesN(p, tok, maxDefinitionTokens); len(leaves) == len(all) {
					return p, leaves
				}
			}
		}
	}
	return id, x.boundedLeavesN(id, tok, maxDefinitionTokens)
}

// boundedLeavesN are a node's first leaves that fit n tokens (at least one).
func (x *corpusIndex) boundedLeavesN(id string, tok *chunker.Tokenizer, n int) []string {
	leaves := x.leaves(id)
	total := 0
	for i, e := range leaves {
		total += tok.Count(x.nodes[e].Text)
		if total > n && i > 0 {
			return leaves[:i]
		}
	}
	return leaves
}

// textOf is the text of a node's given leaves, with its title when it is a
// section, and its size in tokens.
func (x *corpusIndex) textOf(id string, leaves []string, tok *chunker.Tokenizer) (string, int) {
	var b strings.Builder
	if n, ok := x.nodes[id]; ok && n.Label == LabelSection && n.Title != "" {
		b.WriteString(n.Title)
	}
	for _, e := range leaves {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(x.nodes[e].Text)
	}
	t := b.String()
	return t, tok.Count(t)
}

// text is a node's text: an element's own text, or a section's title and
// the text of its elements (bounded).
func (x *corpusIndex) text(id string) string {
	t, _ := x.textOf(id, x.boundedLeaves(id, chunker.DefaultTokenizer()), chunker.DefaultTokenizer())
	return t
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// termIn reports whether term occurs in text as a whole word or phrase;
// patterns caches the compiled expressions by term.
func termIn(text, term string, patterns *patternCache) bool {
	if len([]rune(term)) < 3 || !strings.Contains(text, term) {
		return false
	}
	return patterns.get(term).MatchString(text)
}

// patternCache holds the compiled whole-word expressions of terms.
type patternCache struct {
	mu sync.Mutex
	m  map[string]*regexp.Regexp
}

func (p *patternCache) get(term string) *regexp.Regexp {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]*regexp.Regexp{}
	}
	re, ok := p.m[term]
	if !ok {
		re = regexp.MustCompile(`(?:^|[^\p{L}\p{N}])` + regexp.QuoteMeta(term) + `(?:$|[^\p{L}\p{N}])`)
		p.m[term] = re
	}
	return re
}

func (d *corpusData) patterns() *patternCache { return &d.pat }

// LookupResult is a node an address names.
type LookupResult struct {
	ID       string `json:"id"`
	Label    string `json:"label"`
	Document string `json:"document"`
	Title    string `json:"title,omitempty"`
	Text     string `json:"text"`
}

// Lookup finds the nodes an address names: "RFC 7231 6.5.1",
// "constitutionrf.txt Статья 81 часть 3", "Article 7(3)(a)", "Annex II
// 6.3". A document identifier at its start (the longest that fits) limits
// the look-up to that document; without one every document is searched
// and every match returned. A bare identifier names the document.
func (s *Searcher) Lookup(ctx context.Context, address string) ([]LookupResult, error) {
	d, err := s.load(ctx)
	if err != nil {
		return nil, fmt.Errorf("lookup: %w", err)
	}
	nodes, doc, err := d.lookup(address)
	if err != nil {
		return nil, err
	}
	if doc != nil && nodes == nil {
		return []LookupResult{{ID: doc.ID, Label: doc.Label, Document: doc.ID, Title: doc.Title}}, nil
	}
	var out []LookupResult
	for _, n := range nodes {
		out = append(out, LookupResult{ID: n.ID, Label: n.Label, Document: d.x.docOf[n.ID].ID, Title: n.Title, Text: d.x.text(n.ID)})
	}
	return out, nil
}

// lookup resolves an address to nodes. It returns the document the address
// names, with nil nodes when the address is the document's name alone.
func (d *corpusData) lookup(addr string) ([]*Node, *Document, error) {
	norm := strings.Join(strings.Fields(addr), " ")
	var best *Document
	rest := norm
	bestLen := -1
	for _, doc := range d.corpus.Documents {
		for _, id := range append([]string{doc.Key}, doc.Names...) {
			id = strings.Join(strings.Fields(id), " ")
			if len(id) > bestLen && len(norm) >= len(id) && strings.EqualFold(norm[:len(id)], id) &&
				(len(norm) == len(id) || norm[len(id)] == ' ') {
				best, bestLen, rest = doc, len(id), strings.TrimSpace(norm[len(id):])
			}
		}
	}
	if best != nil && rest == "" {
		return nil, best, nil
	}
	rest = strings.TrimSpace(strings.TrimPrefix(rest, "›"))
	var nodes []*Node
	if best == nil {
		// No identifier prefixes it: the grammar may still find one
		// ("Article 7 of Regulation (EU) 2017/745", "6.5.1 RFC 7231").
		if a, ok := chunker.ParseAddress(addr); ok && a.Doc != "" {
			if doc := d.documentNamed(a.Doc); doc != nil {
				best, rest = doc, a.Citation
				if rest == "" {
					return nil, best, nil
				}
			}
		}
	}
	var docs map[*Document]bool
	if best != nil {
		docs = map[*Document]bool{best: true}
	}
	nodes = d.addr.resolve(rest, docs)
	if len(nodes) == 0 && best != nil {
		// The document's own address keys: "p3", a heading slug, a title.
		if n, ok := d.x.byAddress[best][chunker.AddressKey(rest)]; ok {
			nodes = []*Node{n}
		} else {
			for i := range best.Nodes {
				if n := &best.Nodes[i]; n.Label == LabelSection && strings.EqualFold(strings.TrimSpace(n.Title), rest) {
					nodes = append(nodes, n)
				}
			}
			// A defined term names its definition.
			for _, t := range best.Terms {
				if n, ok := d.x.nodes[t.DefinedIn]; ok && len(nodes) == 0 && strings.EqualFold(strings.TrimSpace(t.Name), rest) {
					nodes = append(nodes, n)
				}
			}
		}
	}
	if len(nodes) == 0 {
		if best == nil {
			return nil, nil, fmt.Errorf("lookup %q: no document has an identifier that starts the address (known: %s), and no element of any document has that address",
				addr, knownNames(d.corpus))
		}
		return nil, best, fmt.Errorf("lookup %q: document %s has no element with that address", addr, best.ID)
	}
	return nodes, best, nil
}

func knownNames(c *Corpus) string {
	var ids []string
	for _, d := range c.Documents {
		if len(d.Names) > 0 {
			ids = append(ids, fmt.Sprintf("%q", d.Names[0]))
		}
		if len(ids) == 8 {
			ids = append(ids, "…")
			break
		}
	}
	return strings.Join(ids, ", ")
}
