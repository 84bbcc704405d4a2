package retrieval

import (
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/kgsync/kgsync/chunker"
)

// Address routing: the addresses typed into a query ("section 6.5.1",
// "Article 7(3)(a)", "Статья 81 часть 3", "часть 3 статьи 81", "Annex II
// 6.3", "Table 1", "Tabla 1.2", "п. 6.2.2") are read with the chunker's
// address grammar (chunker.FindAddresses) and looked up by their key
// (chunker.AddressKey) among the citations of every document's elements
// (Node.Citation, the same grammar), so a query finds an element however
// the user spells its address.

// addressIndex finds nodes by the key of their citation.
type addressIndex struct {
	x *corpusIndex
	// byKey lists the nodes of each citation key, in document order.
	byKey map[string][]*Node
	// byNumber lists the nodes whose citation ends with a clause number
	// under that number alone ("Annex VIII 6.3" under "6.3"), for a bare
	// "section 6.3" that names no container.
	byNumber map[string][]*Node
}

// addressPatterns holds the patterns of clause-number keys and of the
// addresses queries cite; addressRe compiles them.
type addressPatterns struct {
	reNumberKey, reAppendix, reAppendixSub, reBareNumber *regexp.Regexp
}

// addressRe returns the patterns of clause-number keys and of the
// addresses queries cite, compiled on first use.
var addressRe = sync.OnceValue(func() *addressPatterns {
	return &addressPatterns{
		// reNumberKey is a key that is a clause number: "6.5.1", "a.1", "7".
		reNumberKey: regexp.MustCompile(`^(?:[a-z]\.)?\d+(?:\.\d+)*$`),
		// reAppendix is an appendix or annex cited by a letter; reAppendixSub
		// the ".1" that may follow it in a query.
		reAppendix:    regexp.MustCompile(`^(?:Appendix|Annex|Приложение|Anexo|Anejo) ([A-Z])$`),
		reAppendixSub: regexp.MustCompile(`^(\.\d+(?:\.\d+)*)`),
		// reBareNumber is a query that is a clause number and nothing else.
		reBareNumber: regexp.MustCompile(`^\s*(?:[A-Za-z]\.)?\d+(?:\.\d+)+\.?\s*$`),
	}
})

func newAddressIndex(x *corpusIndex, c *Corpus) *addressIndex {
	a := &addressIndex{x: x, byKey: map[string][]*Node{}, byNumber: map[string][]*Node{}}
	for _, d := range c.Documents {
		for i := range d.Nodes {
			n := &d.Nodes[i]
			if n.Citation == "" {
				continue
			}
			k := chunker.AddressKey(n.Citation)
			a.byKey[k] = append(a.byKey[k], n)
			if f := strings.Fields(k); len(f) > 1 && addressRe().reNumberKey.MatchString(f[len(f)-1]) {
				a.byNumber[f[len(f)-1]] = append(a.byNumber[f[len(f)-1]], n)
			}
		}
	}
	return a
}

// resolve returns the nodes a citation names in the documents docs allows
// (nil: all): those whose citation has its key, or, for a bare clause
// number that no citation is, those whose citation ends with it.
func (a *addressIndex) resolve(citation string, docs map[*Document]bool) []*Node {
	k := chunker.AddressKey(citation)
	if k == "" {
		return nil
	}
	pick := func(list []*Node) []*Node {
		var out []*Node
		for _, n := range list {
			if docs == nil || docs[a.x.docOf[n.ID]] {
				out = append(out, n)
			}
		}
		return out
	}
	out := pick(a.byKey[k])
	if len(out) == 0 && addressRe().reNumberKey.MatchString(k) {
		out = pick(a.byNumber[k])
	}
	return out
}

// queryAddress is an address of a query: the citation, the document it
// names (nil: none), and where it stands.
type queryAddress struct {
	citation   string
	doc        *Document
	text       string
	start, end int
}

// queryAddresses finds the addresses of a query (chunker.FindAddresses),
// with the document each names ("RFC 7231 4.2.2", "Section 4.2.2 of RFC
// 7231"); a query that is a clause number alone ("6.5.1") is one too.
// Citations relative to an element the query does not name ("(3)",
// "часть 2" alone) are left out.
func (d *corpusData) queryAddresses(query string) []queryAddress {
	var out []queryAddress
	for _, m := range chunker.FindAddresses(query) {
		if m.Citation == "" || relativeCitation(m.Citation) {
			continue
		}
		a := queryAddress{citation: m.Citation, doc: d.documentNamed(m.Doc), text: m.Text, start: m.Start, end: m.End}
		// "Appendix A.1": the grammar stops at the letter; an appendix's
		// sections are cited by letter and number ("A.1").
		if sub := addressRe().reAppendixSub.FindStringSubmatch(query[m.End:]); sub != nil && addressRe().reAppendix.MatchString(m.Citation) {
			letter := addressRe().reAppendix.FindStringSubmatch(m.Citation)[1]
			a.citation = letter + sub[1]
			a.end += len(sub[0])
			a.text = query[a.start:a.end]
		}
		out = append(out, a)
	}
	if len(out) == 0 && addressRe().reBareNumber.MatchString(query) {
		t := strings.TrimSpace(query)
		i := strings.Index(query, t)
		out = append(out, queryAddress{citation: strings.TrimSuffix(t, "."), text: t, start: i, end: i + len(t)})
	}
	return out
}

// relativeCitation reports whether a citation names a part of an element
// it does not name: a paragraph or point alone.
func relativeCitation(c string) bool {
	k := chunker.AddressKey(c)
	return strings.HasPrefix(c, "(") || strings.HasPrefix(k, "part-of-article ") || strings.HasPrefix(k, "point ") ||
		strings.HasPrefix(k, "paragraph ")
}

// documentNamed is the document a name stands for ("RFC 7231", "rfc7231.txt",
// a title), nil when none or several.
func (d *corpusData) documentNamed(name string) *Document {
	n := normalizeDocName(name)
	if len(n) < 3 {
		return nil
	}
	var found *Document
	for _, doc := range d.corpus.Documents {
		for _, id := range append([]string{doc.Key}, doc.Names...) {
			if normalizeDocName(id) == n {
				if found != nil && found != doc {
					return nil
				}
				found = doc
			}
		}
	}
	return found
}

// namedDocuments are the documents the query names by one of their names
// ("RFC 7231", "rfc7231.txt", "MDCG 2019-9", a title), compared without
// case and spaces, or that its addresses name.
func (d *corpusData) namedDocuments(query string, addrs []queryAddress) map[*Document]bool {
	q := normalizeDocName(query)
	out := map[*Document]bool{}
	for _, doc := range d.corpus.Documents {
		for _, name := range append([]string{doc.Key}, doc.Names...) {
			if n := normalizeDocName(name); len(n) >= 4 && strings.Contains(q, n) {
				out[doc] = true
			}
		}
	}
	for _, a := range addrs {
		if a.doc != nil {
			out[a.doc] = true
		}
	}
	return out
}

// withoutRoutes is the query without its addresses and the names of the
// documents it names: the words left ask something.
func (d *corpusData) withoutRoutes(query string) string {
	as := d.queryAddresses(query)
	named := d.namedDocuments(query, as)
	slices.SortFunc(as, func(a, b queryAddress) int { return b.start - a.start })
	for _, a := range as {
		if a.start >= 0 && a.end <= len(query) && a.start < a.end {
			query = query[:a.start] + " " + query[a.end:]
		}
	}
	low := strings.ToLower(query)
	for doc := range named {
		for _, name := range append([]string{doc.Key}, doc.Names...) {
			n := strings.ToLower(strings.Join(strings.Fields(name), " "))
			if i := strings.Index(low, n); i >= 0 && n != "" && len(low) == len(query) {
				query, low = query[:i]+" "+query[i+len(n):], low[:i]+" "+low[i+len(n):]
			}
		}
	}
	return query
}
