package config

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/kgsync/kgsync/sink"
)

// relPattern is a relationship type or property name written by kgsync.
var relPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// csvTypes are the column types a CSV table accepts (besides ref:/reflist:).
var csvTypes = map[string]bool{"text": true, "int": true, "numeric": true, "bool": true, "date": true, "choicelist": true}

// otherSources validates the csv, grist and http source sections.
func (ck *checker) otherSources(at string, s *Source) {
	if g := s.Grist; g != nil {
		gat := at + ".grist"
		if u, err := url.Parse(g.Server); g.Server == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			ck.add(gat+".server", "must be an http(s) URL such as \"https://docs.getgrist.com\", got %q", g.Server)
		}
		if g.DocID == "" {
			ck.add(gat+".doc_id", "required: the document id from the document's URL")
		}
		if g.APIKey == "" {
			ck.add(gat+".api_key", "required: use ${GRIST_API_KEY}")
		}
		if g.MaxInFlight < 0 || g.MaxInFlight > 10 {
			ck.add(gat+".max_in_flight", "must be 1..10 (Grist allows 10 requests in flight per document), got %d", g.MaxInFlight)
		}
		if g.PageSize < 0 {
			ck.add(gat+".page_size", "must be > 0, got %d", g.PageSize)
		}
	}
	if c := s.CSV; c != nil {
		cat := at + ".csv"
		if len(c.Tables) == 0 {
			ck.add(cat+".tables", "at least one table is required")
		}
		tables := map[string]int{}
		for j, t := range c.Tables {
			tat := fmt.Sprintf("%s.tables[%d]", cat, j)
			if t.Path == "" {
				ck.add(tat+".path", "required: the CSV file")
			}
			if t.Table != "" {
				if !labelPattern.MatchString(t.Table) {
					ck.add(tat+".table", "must match %s, got %q", labelPattern, t.Table)
				}
				if k, dup := tables[t.Table]; dup {
					ck.add(tat+".table", "%q is used twice (also tables[%d])", t.Table, k)
				}
				tables[t.Table] = j
			}
			for col, typ := range t.Columns {
				base, target, isRef := strings.Cut(typ, ":")
				switch {
				case isRef && (base == "ref" || base == "reflist") && target != "":
				case !isRef && csvTypes[typ]:
				default:
					ck.add(fmt.Sprintf("%s.columns[%q]", tat, col), "unknown type %q: want text, int, numeric, bool, date, choicelist, ref:<table> or reflist:<table>", typ)
				}
			}
			if len(t.Delimiter) > 1 {
				ck.add(tat+".delimiter", "must be one character, got %q", t.Delimiter)
			}
		}
	}
	if h := s.HTTP; h != nil {
		hat := at + ".http"
		if u, err := url.Parse(h.URL); h.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			ck.add(hat+".url", "must be an http(s) URL, got %q", h.URL)
		}
		if h.Records == "" {
			ck.add(hat+".records", "required: the jq expression yielding a page's records, e.g. \".data[]\"")
		}
		if h.Key == "" {
			ck.add(hat+".key", "required: the jq expression of a record's key, e.g. \".id | tostring\"")
		}
		if !labelPattern.MatchString(h.Anchor) {
			ck.add(hat+".anchor", "must be a table id matching %s, got %q", labelPattern, h.Anchor)
		}
	}
}

// model validates a pipeline's data model.
func (ck *checker) model(at string, m *Model) {
	if m.LongTextTokens < 0 {
		ck.add(at+".long_text_tokens", "must be >= 0, got %d", m.LongTextTokens)
	}
	anchors := map[string]int{}
	tables := map[string]string{}
	rels := map[string]string{}
	useRel := func(path, name string) {
		if !relPattern.MatchString(name) {
			ck.add(path, "must be a relationship type matching %s, got %q", relPattern, name)
			return
		}
		if prev, dup := rels[name]; dup {
			ck.add(path, "relationship type %q is used twice (also %s): each link needs its own type", name, prev)
			return
		}
		rels[name] = path
	}
	for i, a := range m.Anchors {
		aat := fmt.Sprintf("%s.anchors[%d]", at, i)
		if !labelPattern.MatchString(a.Name) {
			ck.add(aat+".name", "must be a node label matching %s, got %q", labelPattern, a.Name)
		}
		if j, dup := anchors[a.Name]; dup {
			ck.add(aat+".name", "%q is used twice (also anchors[%d])", a.Name, j)
		}
		anchors[a.Name] = i
		table := a.Table
		if table == "" {
			table = a.Name
		}
		if prev, dup := tables[table]; dup {
			ck.add(aat+".table", "table %q is already mapped by anchor %q", table, prev)
		}
		tables[table] = a.Name
		attrs := map[string]bool{}
		for j, attr := range a.Attributes {
			tat := fmt.Sprintf("%s.attributes[%d]", aat, j)
			switch {
			case !relPattern.MatchString(attr.Name):
				ck.add(tat+".name", "must be a property name matching %s, got %q", relPattern, attr.Name)
			case attrs[attr.Name]:
				ck.add(tat+".name", "%q is listed twice", attr.Name)
			case sink.ReservedProperty(attr.Name):
				ck.add(tat+".name", "%q is reserved (id and names starting with _ are kgsync's)", attr.Name)
			}
			attrs[attr.Name] = true
		}
		for j, l := range a.Links {
			useRel(fmt.Sprintf("%s.links[%d].name", aat, j), l.Name)
		}
	}
	for i, mt := range m.MandatoryTables {
		mat := fmt.Sprintf("%s.mandatory_tables[%d]", at, i)
		if mt.Table == "" {
			ck.add(mat+".table", "required: the table whose rows are mandatory links")
		} else if prev, dup := tables[mt.Table]; dup {
			ck.add(mat+".table", "table %q is already mapped by anchor %q", mt.Table, prev)
		}
		if mt.From == "" || mt.To == "" {
			ck.add(mat, "from and to are required: the columns holding the two element addresses")
		}
	}
	for i, lt := range m.LinkTables {
		lat := fmt.Sprintf("%s.link_tables[%d]", at, i)
		useRel(lat+".name", lt.Name)
		if lt.Table == "" {
			ck.add(lat+".table", "required: the table whose rows are the edges")
		} else if prev, dup := tables[lt.Table]; dup {
			ck.add(lat+".table", "table %q is already mapped by anchor %q", lt.Table, prev)
		}
		for _, end := range []struct {
			name string
			e    LinkEnd
		}{{"from", lt.From}, {"to", lt.To}} {
			if end.e.Anchor == "" || !labelPattern.MatchString(end.e.Anchor) {
				ck.add(lat+"."+end.name+".anchor", "must name an anchor, got %q", end.e.Anchor)
			}
			if end.e.Column == "" {
				ck.add(lat+"."+end.name+".column", "required: the column holding the %s anchor's key", end.name)
			}
		}
	}
}

// mandatory validates a pipeline's mandatory links.
func (ck *checker) mandatory(at string, ms []Mandatory) {
	for i, m := range ms {
		mat := fmt.Sprintf("%s.mandatory[%d]", at, i)
		if strings.TrimSpace(m.From) == "" {
			ck.add(mat+".from", "required: a document identifier and an element address, e.g. \"RFC 7231 6.5.1\"")
		}
		if strings.TrimSpace(m.To) == "" {
			ck.add(mat+".to", "required: a document identifier and an element address, e.g. \"RFC 7231 7.1.1.1\"")
		}
	}
}

// gristTableID is a Grist table id (grist-api.md §1: [A-Za-z][A-Za-z0-9_]*).
var gristTableID = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

// review validates a pipeline's review section.
func (ck *checker) review(at string, p *Pipeline) {
	r := p.Review
	files := map[string]bool{}
	for _, s := range p.Sources {
		if s.Files != nil && s.Name != "" {
			files[s.Name] = true
		}
	}
	if len(files) == 0 {
		ck.add(at, "review needs a files source in the pipeline: it publishes parsed documents")
	}
	for j, name := range r.Sources {
		if !files[name] {
			ck.add(fmt.Sprintf("%s.sources[%d]", at, j), "%q is not a files source of this pipeline", name)
		}
	}
	g := r.Grist
	if g == nil {
		ck.add(at+".grist", "required: the Grist document holding the review tables (server, doc_id, api_key)")
		return
	}
	gat := at + ".grist"
	if u, err := url.Parse(g.Server); g.Server == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		ck.add(gat+".server", "must be an http(s) URL such as \"https://docs.getgrist.com\", got %q", g.Server)
	}
	if g.DocID == "" {
		ck.add(gat+".doc_id", "required: the document id from the document's URL")
	}
	if g.APIKey == "" {
		ck.add(gat+".api_key", "required: use ${GRIST_API_KEY}")
	}
	if g.MaxInFlight < 0 || g.MaxInFlight > 10 {
		ck.add(gat+".max_in_flight", "must be 1..10 (Grist allows 10 requests in flight per document), got %d", g.MaxInFlight)
	}
	if g.FullEvery < 0 {
		ck.add(gat+".full_every", "must be > 0, got %s", g.FullEvery)
	}
	for _, t := range []struct{ key, v string }{{"documents_table", g.DocumentsTable}, {"elements_table", g.ElementsTable}} {
		if !gristTableID.MatchString(t.v) {
			ck.add(gat+"."+t.key, "must be a Grist table id matching %s, got %q", gristTableID, t.v)
		}
	}
	if strings.EqualFold(g.DocumentsTable, g.ElementsTable) {
		ck.add(gat+".elements_table", "must differ from documents_table (Grist compares table ids ignoring case), both are %q", g.ElementsTable)
	}
}
