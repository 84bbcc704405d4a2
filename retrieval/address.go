package retrieval

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// Address routing: an address typed into a query ("section 6.5.1",
// "Article 7(3)(a)", "Статья 81 часть 3", "часть 3 статьи 81", "Annex II
// 6.3", "Table 1", "Tabla 1.2", "п. 6.2.2") is parsed into steps, each a
// kind and a label, and looked up in every document's element tree: a node
// matches when its own step matches the last step and its ancestors match
// the others, in order.

// Step kinds. Kinds that number the same things in different documents
// (section, clause, paragraph, part, point, пункт, часть, apartado) are one
// kind, kindNum: the tree says which it is.
const (
	kindAnnex   = "annex"
	kindChapter = "chapter"
	kindArticle = "article"
	kindTable   = "table"
	kindFigure  = "figure"
	kindRule    = "rule"
	kindNum     = "num"
)

// rank orders the kinds of one address from the outermost container in.
var rank = map[string]int{kindAnnex: 0, kindChapter: 1, kindArticle: 2, kindRule: 3, kindNum: 4, kindTable: 5, kindFigure: 5}

// addrStep is one step of an address: "article 7", "num 3", "annex ii".
type addrStep struct{ kind, label string }

// address is one address found in a query.
type address struct {
	// steps are outermost first.
	steps []addrStep
	// text is the address as written; start and end its byte offsets.
	text       string
	start, end int
}

// kindWords maps the words that introduce an address step, lower-case, in
// English, Russian (with the inflected forms questions use), Spanish and
// French, to their kind.
var kindWords = map[string]string{}

func init() {
	for kind, ws := range map[string][]string{
		kindAnnex: {"annex", "annexes", "appendix", "приложение", "приложения", "приложении", "приложению",
			"anexo", "anejo", "annexe"},
		kindChapter: {"chapter", "глава", "главы", "главе", "главу", "capítulo", "capitulo", "chapitre"},
		kindArticle: {"article", "articles", "art", "статья", "статьи", "статье", "статью", "статьей", "ст",
			"artículo", "articulo", "artículos"},
		kindTable:  {"table", "tables", "таблица", "таблицы", "таблице", "таблицу", "табл", "tabla", "tablas", "tableau"},
		kindFigure: {"figure", "fig", "рисунок", "рисунка", "рис", "figura"},
		kindRule:   {"rule", "правило", "правила", "regla"},
		kindNum: {"section", "sections", "sec", "§", "clause", "clauses", "paragraph", "para", "part", "point", "points",
			"subparagraph", "item", "раздел", "раздела", "разделе", "пункт", "пункта", "пункте", "п", "пп", "подпункт",
			"подпункта", "часть", "части", "частью", "абзац", "sección", "seccion", "apartado", "punto", "párrafo",
			"parrafo", "alinéa", "paragraphe"},
	} {
		for _, w := range ws {
			kindWords[w] = kind
		}
	}
}

var (
	// reStep is one step: a kind word and a label, or a bare dotted
	// number of three or more parts. Labels: dotted numbers with an
	// optional letter prefix ("A.1", "SI 3"), Roman numerals, single
	// letters, each optionally followed by "(3)(a)" sub-steps.
	reStep = regexp.MustCompile(`(?i)(§|\p{L}+\.?)\s*([A-Z]\.\d+(?:\.\d+)*\.?|(?:[A-Z]{1,3}\s?)?\d+(?:\.\d+)*\.?|[IVXLCivxlc]+\b|\(\s*[\p{L}\d]{1,4}\s*\)|\b\p{L}\b\)?)((?:\s*\(\s*[\p{L}\d]{1,4}\s*\))*)`)
	// reBareNum is a dotted number of three parts or more ("6.5.1").
	reBareNum = regexp.MustCompile(`(?:^|[^\p{L}\p{N}.])(\d+\.\d+\.\d+(?:\.\d+)*)\.?(?:$|[^\p{L}\p{N}.])`)
	// reTrailNum is a number that continues an address ("Annex II 6.3").
	reTrailNum = regexp.MustCompile(`^[\s,]+(\d+(?:\.\d+)*)\.?(?:$|[^\p{L}\p{N}.])`)
	// reSub is one "(3)" sub-step.
	reSub = regexp.MustCompile(`\(\s*([\p{L}\d]{1,4})\s*\)`)
	// reJoin is what may stand between two steps of one address: spaces,
	// commas, "of", "de", "del", and nothing else.
	reJoin = regexp.MustCompile(`^(?i)[\s,]*(?:(?:of|of the|in|de|del|de la|du|des)\s+)?$`)
)

// stepLabel normalizes a label: lower-case, no trailing dot, no spaces, no
// parentheses.
func stepLabel(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.Trim(s, "().")
	return strings.Join(strings.Fields(s), "")
}

// findAddresses returns the addresses in text, in order. Adjacent steps
// ("Article 7(3)", "Annex II 6.3", "часть 3 статьи 81", "Section 6.3 of
// Annex VIII") make one address, outermost step first.
func findAddresses(text string) []address {
	type found struct {
		steps      []addrStep
		start, end int
	}
	var fs []found
	for _, m := range reStep.FindAllStringSubmatchIndex(text, -1) {
		word := strings.ToLower(strings.TrimSuffix(text[m[2]:m[3]], "."))
		kind, ok := kindWords[word]
		if !ok {
			continue
		}
		// The word must start a word: not "…ст 5" inside "пост 5".
		if m[2] > 0 {
			if r := lastRune(text[:m[2]]); unicode.IsLetter(r) || unicode.IsDigit(r) {
				continue
			}
		}
		label := stepLabel(text[m[4]:m[5]])
		if label == "" {
			continue
		}
		steps := []addrStep{{kind, label}}
		for _, sm := range reSub.FindAllStringSubmatch(text[m[6]:m[7]], -1) {
			steps = append(steps, addrStep{kindNum, stepLabel(sm[1])})
		}
		fs = append(fs, found{steps: steps, start: m[0], end: m[1]})
	}
	for _, m := range reBareNum.FindAllStringSubmatchIndex(text, -1) {
		start, end := m[2], m[3]
		inside := false
		for _, f := range fs {
			if start < f.end && end > f.start {
				inside = true
			}
		}
		if !inside {
			fs = append(fs, found{steps: []addrStep{{kindNum, stepLabel(text[start:end])}}, start: start, end: end})
		}
	}
	slices.SortFunc(fs, func(a, b found) int { return a.start - b.start })
	var out []address
	for i := 0; i < len(fs); {
		a := address{steps: fs[i].steps, start: fs[i].start, end: fs[i].end}
		j := i + 1
		for ; j < len(fs) && reJoin.MatchString(text[a.end:fs[j].start]); j++ {
			a.steps = append(a.steps, fs[j].steps...)
			a.end = fs[j].end
		}
		// "Annex II 6.3", "Article 10, 3": a plain number right after
		// a container step is a step of it.
		if last := a.steps[len(a.steps)-1]; last.kind != kindNum && last.kind != kindTable && last.kind != kindFigure {
			if m := reTrailNum.FindStringSubmatchIndex(text[a.end:]); m != nil {
				a.steps = append(a.steps, addrStep{kindNum, stepLabel(text[a.end+m[2] : a.end+m[3]])})
				a.end += m[1]
			}
		}
		a.steps = orderSteps(a.steps)
		a.text = text[a.start:a.end]
		out = append(out, a)
		i = j
	}
	return out
}

// orderSteps sorts an address's steps outermost first; steps of one kind
// keep their order, and sub-steps follow the step they qualify.
func orderSteps(steps []addrStep) []addrStep {
	// Group each step with the kindNum sub-steps that follow it directly
	// when it is not itself a num ("Article 7 (3)(a)").
	type group struct {
		rank  int
		steps []addrStep
	}
	var gs []group
	for _, s := range steps {
		if s.kind == kindNum && len(gs) > 0 && gs[len(gs)-1].rank <= rank[kindArticle] {
			gs[len(gs)-1].steps = append(gs[len(gs)-1].steps, s)
			continue
		}
		gs = append(gs, group{rank: rank[s.kind], steps: []addrStep{s}})
	}
	slices.SortStableFunc(gs, func(a, b group) int { return a.rank - b.rank })
	var out []addrStep
	for _, g := range gs {
		out = append(out, g.steps...)
	}
	return out
}

func lastRune(s string) rune {
	r := []rune(s)
	if len(r) == 0 {
		return 0
	}
	return r[len(r)-1]
}

// reDotted is a node address that is a number: "6.5.1", "A.1", "1.0", "7".
var reDotted = regexp.MustCompile(`^(?i)(?:[A-Z]\.)?\d+(?:\.\d+)*\.?$|^[A-Z]$`)

// reLeadLabel is the number or letter an element's text starts with: "3. …",
// "(a) …", "а) …", "2.1. …".
var reLeadLabel = regexp.MustCompile(`^\s*(?:\(\s*([\p{L}\d]{1,4})\s*\)|(\d+(?:\.\d+)*)\.(?:\s|$)|(\p{L})\)\s)`)

// nodeSteps are the steps a node's own place can be named by. Strong
// steps come from its address ("Статья 81", "6.5.1", "Table 13") and title
// ("ANNEX II", "6.3. Rule 11", "Table 1 — …") and name it anywhere; weak
// steps come from the number or letter a paragraph's text starts with
// ("3. …", "(a) …", "а) …") and name it only below a named ancestor
// ("Статья 81 часть 3", "Article 7(3)(a)").
func nodeSteps(n *Node) (strong, weak []addrStep) {
	add := func(list *[]addrStep, s addrStep) {
		if s.label != "" && !slices.Contains(*list, s) {
			*list = append(*list, s)
		}
	}
	lead := func(list *[]addrStep, text string) {
		for _, a := range findAddresses(text) {
			if a.start < 3 { // at the start, not a reference inside the text
				for _, s := range a.steps {
					add(list, s)
				}
			}
			break
		}
	}
	addr := strings.TrimSpace(n.Address)
	numbered := n.Label == LabelSection || n.Kind == "clause" || n.Kind == "table" || n.Kind == "caption"
	switch {
	case reDotted.MatchString(addr) && numbered:
		add(&strong, addrStep{kindNum, stepLabel(addr)})
	case reDotted.MatchString(addr):
		add(&weak, addrStep{kindNum, stepLabel(addr)})
	default:
		lead(&strong, addr)
	}
	if t := strings.TrimSpace(n.Title); t != "" {
		lead(&strong, t)
		// "6.3.   Rule 11", "1.1 Политика", "2) Определения": a leading number.
		if f := strings.Fields(t); len(f) > 0 && reDotted.MatchString(strings.TrimRight(f[0], ":)")) {
			add(&strong, addrStep{kindNum, stepLabel(strings.TrimRight(f[0], ":)"))})
			if len(f) > 1 {
				lead(&strong, strings.Join(f[1:], " "))
			}
		}
	}
	if n.Label == LabelElement {
		if m := reLeadLabel.FindStringSubmatch(n.Text); m != nil {
			add(&weak, addrStep{kindNum, stepLabel(m[1] + m[2] + m[3])})
		}
	}
	return strong, weak
}

// matchStep reports whether a node step answers a query step: the same
// kind and label, where a num step also answers "section", "part" and the
// like of any kind that is not a container.
func matchStep(node, query addrStep) bool {
	if node.label != query.label {
		return false
	}
	if node.kind == query.kind {
		return true
	}
	// "Section 6.5.1" and "п. 6.2.2" name numbered headings whatever the
	// document calls them; a table's number is never a section's.
	return (node.kind == kindNum || query.kind == kindNum) && node.kind != kindTable && query.kind != kindTable &&
		node.kind != kindFigure && query.kind != kindFigure
}

// addressIndex finds nodes by their steps.
type addressIndex struct {
	x            *corpusIndex
	strong, weak map[string][]addrStep // node id → its steps
	// byLabel lists the nodes with a step of each label.
	byLabel map[string][]*Node
}

func newAddressIndex(x *corpusIndex, c *Corpus) *addressIndex {
	a := &addressIndex{x: x, strong: map[string][]addrStep{}, weak: map[string][]addrStep{}, byLabel: map[string][]*Node{}}
	for _, d := range c.Documents {
		for i := range d.Nodes {
			n := &d.Nodes[i]
			strong, weak := nodeSteps(n)
			a.strong[n.ID], a.weak[n.ID] = strong, weak
			seen := map[string]bool{}
			for _, s := range append(append([]addrStep{}, strong...), weak...) {
				if !seen[s.label] {
					seen[s.label] = true
					a.byLabel[s.label] = append(a.byLabel[s.label], n)
				}
			}
		}
	}
	return a
}

// resolve returns the nodes an address names, in document order, in the
// documents docs allows (nil: all). A node matches when one of its steps
// matches the address's last step and the other steps match ancestors,
// outermost first; a weak step counts only below a matched ancestor. Of a
// node and its descendant that both match, the node is kept.
func (a *addressIndex) resolve(addr address, docs map[*Document]bool) []*Node {
	if len(addr.steps) == 0 {
		return nil
	}
	last := addr.steps[len(addr.steps)-1]
	outer := addr.steps[:len(addr.steps)-1]
	var out []*Node
	for _, n := range a.byLabel[last.label] {
		if docs != nil && !docs[a.x.docOf[n.ID]] {
			continue
		}
		if !(a.matches(n, last, false) || len(outer) > 0 && a.matches(n, last, true)) || !a.ancestorsMatch(n, outer) {
			continue
		}
		out = append(out, n)
	}
	keep := out[:0]
	for _, n := range out {
		inside := false
		for p := a.x.parent(n.ID); p != ""; p = a.x.parent(p) {
			if slices.ContainsFunc(out, func(m *Node) bool { return m.ID == p }) {
				inside = true
				break
			}
		}
		if !inside {
			keep = append(keep, n)
		}
	}
	return keep
}

func (a *addressIndex) matches(n *Node, q addrStep, weak bool) bool {
	steps := a.strong[n.ID]
	if weak {
		steps = a.weak[n.ID]
	}
	for _, s := range steps {
		if matchStep(s, q) {
			return true
		}
	}
	return false
}

// ancestorsMatch reports whether steps (outermost first) match distinct
// ancestors of n, innermost step nearest to n; an ancestor answers a step
// by a strong step, or by a weak one when a further step matched above it.
func (a *addressIndex) ancestorsMatch(n *Node, steps []addrStep) bool {
	i := len(steps) - 1
	for p := a.x.parent(n.ID); p != "" && i >= 0; p = a.x.parent(p) {
		pn, ok := a.x.nodes[p]
		if !ok {
			break
		}
		if a.matches(pn, steps[i], false) || i > 0 && a.matches(pn, steps[i], true) {
			i--
		}
	}
	return i < 0
}
