package pipeline_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/retrieval"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/state"
)

// TestDocumentGraph syncs real documents and checks the document graph:
// every chunk covers elements that exist, the OpenChain specification's 14
// terms (MANIFEST.md: "14 defined terms, 2.1 to 2.14") are Term nodes
// defined in their clauses, and RFC 7239's references to its own sections
// are CROSS_REF edges to those sections.
func TestDocumentGraph(t *testing.T) {
	t.Parallel()
	b := setup(t, copyCorpus(t, "rfc7239.txt", "openchain-security-specification-1.1.md"), 256, 32)
	b.sync(t, pipeline.Mode{})

	require.Equal(t, 14, b.graph.Count(pipeline.LabelTerm))
	var covers, defined, xrefs int
	for _, e := range b.graph.Edges() {
		switch e.Type {
		case pipeline.RelCovers:
			covers++
			require.Equal(t, pipeline.LabelElement, e.To.Label)
		case pipeline.RelDefinedIn:
			defined++
			require.Contains(t, e.To.ID, "docs:openchain-security-specification-1.1.md › openchain-security-assurance-specification › 2 › 2.")
		case pipeline.RelCrossRef:
			xrefs++
			if e.From.ID == "docs:rfc7239.txt › 4 › p1" {
				require.Contains(t, []string{"docs:rfc7239.txt › 8 › 8.2", "docs:rfc7239.txt › 8 › 8.3"}, e.To.ID)
			}
		}
	}
	require.Equal(t, 14, defined)
	require.GreaterOrEqual(t, covers, b.graph.Count(pipeline.LabelChunk), "every chunk covers at least one element")
	require.Greater(t, xrefs, 10, "RFC 7239 refers to its own sections (17 resolved references)")
	for _, id := range b.graph.Nodes(pipeline.LabelChunk) {
		n, _ := b.graph.Node(pipeline.LabelChunk, id)
		for _, el := range n["elements"].([]any) {
			_, ok := b.graph.Node(pipeline.LabelElement, el.(string))
			require.True(t, ok, "chunk %s covers %s", id, el)
		}
	}
	term, ok := b.graph.Node(pipeline.LabelTerm, "docs:openchain-security-specification-1.1.md#term:component records")
	require.True(t, ok)
	require.Len(t, term[pipeline.PropEmbedding], 64, "terms have their own vectors")
	doc, _ := b.graph.Node("Document", "docs:rfc7239.txt")
	require.Equal(t, int64(17), doc["refs_resolved"])
	require.Equal(t, int64(0), doc["refs_unresolved"], "\"Table 1: Initial Assignments\" under the table is its caption, not a reference")

	// A second run changes nothing, also in the link pass.
	c := b.sync(t, pipeline.Mode{})
	require.Zero(t, c.SinkStatements)
}

// TestReferencesBetweenDocuments: "Section 5.1 of [RFC7239]" in one
// document becomes a CROSS_REF edge to RFC 7239's section 5.1, resolved by
// the document identifier, whichever document is synced first; it goes when
// the cited document goes and comes back with it.
func TestReferencesBetweenDocuments(t *testing.T) {
	t.Parallel()
	root := copyCorpus(t, "rfc7239.txt")
	note := "# Proxy notes\n\n## Headers\n\nThe by parameter is defined in Section 5.1 of [RFC7239]; see also Section 6 of [RFC7239].\n"
	require.NoError(t, os.WriteFile(filepath.Join(root, "a-notes.md"), []byte(note), 0o644))
	b := setup(t, root, 256, 32)
	b.p.Mandatory = []pipeline.MandatoryLink{{From: "RFC 7239 5.1", To: "RFC 7239 8.2", Note: "disclosure needs its privacy caveat"}}
	b.sync(t, pipeline.Mode{})

	external := func() []string {
		var out []string
		for _, e := range b.graph.Edges() {
			if e.Type == pipeline.RelCrossRef && strings.HasPrefix(e.From.ID, "docs:a-notes.md") {
				out = append(out, e.To.ID)
			}
		}
		return out
	}
	require.ElementsMatch(t, []string{"docs:rfc7239.txt › 5 › 5.1", "docs:rfc7239.txt › 6"}, external())
	mandatory := 0
	for _, e := range b.graph.Edges() {
		if e.Type == pipeline.RelMandatory {
			mandatory++
			require.Equal(t, "docs:rfc7239.txt › 5 › 5.1", e.From.ID)
			require.Equal(t, "docs:rfc7239.txt › 8 › 8.2", e.To.ID)
		}
	}
	require.Equal(t, 1, mandatory)

	// Search --expand adds the references' targets and the mandatory
	// neighbours, each saying why.
	expanded := func(query string, signals ...string) retrieval.Hit {
		t.Helper()
		srch := b.p.Searcher()
		res, err := srch.Search(t.Context(), query, retrieval.Options{K: 1, NoFloor: true, Signals: signals})
		require.NoError(t, err)
		require.Len(t, res.Hits, 1)
		c, err := srch.Expand(t.Context(), res.Hits, 4000)
		require.NoError(t, err)
		return c.Hits[0]
	}
	// (The vector signal alone: the address signal would route "Section
	// 5.1" to RFC 7239's section itself.)
	hit := expanded("The by parameter is defined in Section 5.1", retrieval.SignalVector)
	reasons := map[string]string{}
	for _, x := range hit.Expansions {
		reasons[x.ID] = x.Reason
	}
	require.Contains(t, hit.Elements, "docs:a-notes.md › proxy-notes › headers › p1")
	require.Equal(t, `referenced as "Section 5.1 of [RFC7239]"`, reasons["docs:rfc7239.txt › 5 › 5.1"], "%v", reasons)
	hit = expanded(`The "by" parameter is used to disclose the interface where the request came in to the proxy server.`)
	// 5.1 is small: its chunk may start in section 5 before it.
	require.Contains(t, hit.Elements, "docs:rfc7239.txt › 5 › 5.1 › p1", hit.Address)
	reasons = map[string]string{}
	for _, x := range hit.Expansions {
		reasons[x.ID] = x.Reason
	}
	require.Equal(t, "mandatory with docs:rfc7239.txt › 5 › 5.1 (disclosure needs its privacy caveat)", reasons["docs:rfc7239.txt › 8 › 8.2"], "%v", reasons)

	res, err := b.p.Searcher().Lookup(t.Context(), "RFC 7239 5.1")
	require.NoError(t, err)
	require.Len(t, res, 1)
	require.Equal(t, "docs:rfc7239.txt › 5 › 5.1", res[0].ID)
	require.Contains(t, res[0].Text, `The "by" parameter is used to disclose the interface`)
	_, err = b.p.Searcher().Lookup(t.Context(), "RFC 9999 1")
	require.ErrorContains(t, err, "no document")

	// The cited document goes: its edges go with it; it comes back: so do they.
	body, err := os.ReadFile(filepath.Join(root, "rfc7239.txt"))
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(root, "rfc7239.txt")))
	b.sync(t, pipeline.Mode{})
	require.Empty(t, external())
	require.NoError(t, os.WriteFile(filepath.Join(root, "rfc7239.txt"), body, 0o644))
	b.sync(t, pipeline.Mode{})
	require.ElementsMatch(t, []string{"docs:rfc7239.txt › 5 › 5.1", "docs:rfc7239.txt › 6"}, external())

	// The mandatory link removed from the config: its edge goes.
	b.p.Mandatory = nil
	b.sync(t, pipeline.Mode{})
	for _, e := range b.graph.Edges() {
		require.NotEqual(t, pipeline.RelMandatory, e.Type)
	}
}

// TestMandatoryLinksFromATable: experts keep mandatory links in a table
// (Grist or CSV) beside the documents; its rows become MANDATORY edges, and
// editing or deleting a row changes or removes its edge.
func TestMandatoryLinksFromATable(t *testing.T) {
	t.Parallel()
	b := setup(t, copyCorpus(t, "rfc7239.txt"), 256, 32)
	table := &tableSource{name: "rules", recs: map[string]sources.Record{}}
	table.put("links", "1", map[string]any{"from": "RFC 7239 5.1", "to": "RFC 7239 8.2", "why": "privacy caveat"})
	b.p.Sources = append(b.p.Sources, table)
	b.p.Model = pipeline.NewModel(&config.Model{MandatoryTables: []config.MandatoryTable{{Table: "links", From: "from", To: "to", Note: "why"}}})
	b.sync(t, pipeline.Mode{})

	mandatory := func() []string {
		var out []string
		for _, e := range b.graph.Edges() {
			if e.Type == pipeline.RelMandatory {
				out = append(out, e.From.ID+" -> "+e.To.ID)
			}
		}
		return out
	}
	require.Equal(t, []string{"docs:rfc7239.txt › 5 › 5.1 -> docs:rfc7239.txt › 8 › 8.2"}, mandatory())
	require.Zero(t, b.graph.Count("links"), "a mandatory table's rows are no nodes")

	c := b.sync(t, pipeline.Mode{})
	require.Zero(t, c.SinkStatements)

	r := table.recs["links:1"]
	r.Attributes["to"] = "RFC 7239 8.3"
	b.sync(t, pipeline.Mode{})
	require.Equal(t, []string{"docs:rfc7239.txt › 5 › 5.1 -> docs:rfc7239.txt › 8 › 8.3"}, mandatory())

	delete(table.recs, "links:1")
	b.sync(t, pipeline.Mode{})
	require.Empty(t, mandatory())
}

// TestLinkPassSurvivesAFailedRun: a run that commits a document and then
// fails (another source's listing breaks) leaves its link pass to the next
// run, which writes the references between documents.
func TestLinkPassSurvivesAFailedRun(t *testing.T) {
	t.Parallel()
	root := copyCorpus(t, "rfc7239.txt")
	b := setup(t, root, 256, 32)
	broken := &tableSource{name: "rules", recs: map[string]sources.Record{}}
	for i := range 5 {
		broken.put("t", fmt.Sprint(i), map[string]any{"x": fmt.Sprint(i)})
	}
	b.p.Sources = append(b.p.Sources, broken)
	b.sync(t, pipeline.Mode{})

	note := "# Notes\n\nThe by parameter is defined in Section 5.1 of [RFC7239].\n"
	require.NoError(t, os.WriteFile(filepath.Join(root, "a-notes.md"), []byte(note), 0o644))
	broken.fail = true
	_, err := b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
	require.ErrorContains(t, err, "listing failed")
	broken.fail = false
	c := b.sync(t, pipeline.Mode{})
	require.Zero(t, c.RecordsNew+c.RecordsChanged, "the note was committed by the failed run")
	found := false
	for _, e := range b.graph.Edges() {
		if e.Type == pipeline.RelCrossRef && strings.HasPrefix(e.From.ID, "docs:a-notes.md") && e.To.ID == "docs:rfc7239.txt › 5 › 5.1" {
			found = true
		}
	}
	require.True(t, found, "the reference to RFC 7239 5.1 is written by the next run")
	c = b.sync(t, pipeline.Mode{})
	require.Zero(t, c.SinkStatements, "and then nothing is left to do")
}

// TestRegulationAndItsGuidance: MDCG 2019-9 cites the MDR as "MDR,
// Article 32 (1)" (an abbreviation it defines) and "Regulation (EU)
// 2017/745"; the MDR's own title gives it those identifiers, so the link
// pass draws CROSS_REF edges from the guidance to the regulation's
// articles, paragraphs, recitals and annexes.
func TestRegulationAndItsGuidance(t *testing.T) {
	t.Parallel()
	b := setup(t, copyCorpus(t, "eu-mdr-2017-745-oj.html", "mdcg-2019-9-rev1-sscp.md"), 256, 32)
	b.sync(t, pipeline.Mode{})
	mdr, _ := b.graph.Node("Document", "docs:eu-mdr-2017-745-oj.html")
	require.Contains(t, mdr["title"], "REGULATION (EU) 2017/745")
	targets := map[string]bool{}
	for _, e := range b.graph.Edges() {
		if e.Type == pipeline.RelCrossRef && strings.HasPrefix(e.From.ID, "docs:mdcg-2019-9-rev1-sscp.md") &&
			strings.HasPrefix(e.To.ID, "docs:eu-mdr-2017-745-oj.html") {
			n, ok := b.graph.Node(e.To.Label, e.To.ID)
			require.True(t, ok)
			c, _ := n["citation"].(string)
			targets[c] = true
		}
	}
	for _, c := range []string{"Article 32(1)", "Article 61(11)", "Article 2(71)", "Annex XIV Part B", "Recital 43", "Annex VI Part A 2.14"} {
		require.True(t, targets[c], "%s in %v", c, targets)
	}
	doc, _ := b.graph.Node("Document", "docs:mdcg-2019-9-rev1-sscp.md")
	require.Greater(t, doc["refs_external_resolved"], int64(100))
}
