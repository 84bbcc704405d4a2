package assistant_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/assistant"
	"github.com/kgsync/kgsync/state"
)

// call calls tool name with args and decodes its structured result into
// out; it fails the test on a tool error.
func call(t *testing.T, cs *mcp.ClientSession, name string, args any, out any) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err)
	require.False(t, res.IsError, "%s: %s", name, toolText(res))
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	reflect.ValueOf(out).Elem().SetZero()
	require.NoError(t, json.Unmarshal(b, out))
}

// callErr calls tool name and returns its error text ("" when it succeeded).
func callErr(t *testing.T, cs *mcp.ClientSession, name string, args any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err)
	if !res.IsError {
		return ""
	}
	return toolText(res)
}

func toolText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestToolsListed(t *testing.T) {
	_, cs := serve(t)
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		require.NotNil(t, tool.Annotations, tool.Name)
		require.True(t, tool.Annotations.ReadOnlyHint, tool.Name)
		require.NotEmpty(t, tool.Description, tool.Name)
		require.NotNil(t, tool.InputSchema, tool.Name)
		require.NotNil(t, tool.OutputSchema, tool.Name)
	}
	// cypher is served only for a Memgraph sink; the quick start writes CYPHERL.
	require.ElementsMatch(t, []string{"schema", "search", "lookup", "term", "neighbors", "rows"}, names)
}

func TestPipelineRequiredWhenSeveral(t *testing.T) {
	_, cs := serve(t)
	msg := callErr(t, cs, "rows", map[string]any{"anchor": "guide"})
	require.Contains(t, msg, "several pipelines")
	require.Contains(t, msg, "docs, tables")
	msg = callErr(t, cs, "rows", map[string]any{"pipeline": "nope", "anchor": "guide"})
	require.Contains(t, msg, `pipeline "nope" is not served`)
}

func TestSchemaTool(t *testing.T) {
	_, cs := serve(t)
	var out assistant.SchemaOutput
	call(t, cs, "schema", map[string]any{"pipeline": "tables"}, &out)
	require.Len(t, out.Pipelines, 1)
	s := out.Pipelines[0]
	require.Equal(t, "tables", s.Pipeline)
	require.Equal(t, "cypherl", s.Sink)
	anchors := map[string]int{}
	for _, a := range s.Anchors {
		anchors[a.Name] = a.Nodes
	}
	// Counts from the CSV files: 21 sections, 6940 codes, 19 guides.
	require.Equal(t, 21, anchors["hs_section"])
	require.Equal(t, 6940, anchors["cn_code"])
	require.Equal(t, 19, anchors["guide"])
	require.ElementsMatch(t, []string{"fqcc", "goods_nomenclature_sid"}, s.LinkProperties["REQUIRES_GUIDE"])
	require.NotEmpty(t, s.TextIndexes)
	require.Contains(t, s.Identity, "_pipeline")
}

func TestRowsToolCountsAndLists(t *testing.T) {
	_, cs := serve(t)
	// Chapters (level 2) of section I: 01–05 in harmonized-system.csv.
	var out assistant.RowsOutput
	call(t, cs, "rows", map[string]any{"pipeline": "tables", "anchor": "cn_code",
		"filters":   []map[string]any{{"attribute": "level", "value": 2}},
		"linked_to": []map[string]any{{"link": "IN_HS_SECTION", "filters": []map[string]any{{"attribute": "id", "value": "hs_section:I"}}}},
	}, &out)
	require.Equal(t, 5, out.Total)
	require.True(t, out.Complete)
	var ids []string
	for _, r := range out.Rows {
		ids = append(ids, r.ID)
	}
	require.Equal(t, []string{"hs_code:01", "hs_code:02", "hs_code:03", "hs_code:04", "hs_code:05"}, ids)
	require.Equal(t, "state", out.From)
	require.Contains(t, out.Cypher, "MATCH (n0:`cn_code`)")

	// Guides of heading 0701, following the link table with its properties.
	call(t, cs, "rows", map[string]any{"pipeline": "tables", "anchor": "cn_code",
		"filters": []map[string]any{{"attribute": "code", "value": "0701"}},
		"follow":  []map[string]any{{"link": "REQUIRES_GUIDE"}},
	}, &out)
	require.Equal(t, 1, out.Total)
	require.Equal(t, "guide:24", out.Rows[0].ID)
	require.Equal(t, "guide", out.Anchor)
	require.Len(t, out.Rows[0].Via, 1)
	require.Equal(t, "hs_code:0701", out.Rows[0].Via[0].From)
	require.Equal(t, "0701000000", out.Rows[0].Via[0].Props["fqcc"])

	// Paging: 6940 codes, 500 a page; the pages together are every code once.
	seen := map[string]bool{}
	offset, pages := 0, 0
	for {
		call(t, cs, "rows", map[string]any{"pipeline": "tables", "anchor": "cn_code", "fields": []string{"code"}, "limit": 500, "offset": offset}, &out)
		require.Equal(t, 6940, out.Total)
		for _, r := range out.Rows {
			require.False(t, seen[r.ID], r.ID)
			seen[r.ID] = true
		}
		pages++
		if out.NextOffset == 0 {
			break
		}
		offset = out.NextOffset
	}
	require.Len(t, seen, 6940)
	require.Equal(t, 14, pages)

	// count_only with group_by: codes by level.
	call(t, cs, "rows", map[string]any{"pipeline": "tables", "anchor": "cn_code", "count_only": true, "group_by": "level"}, &out)
	require.Empty(t, out.Rows)
	require.Equal(t, 6940, out.Total)
	// harmonized-system.csv: 97 chapters, 1229 headings, 5613 subheadings
	// and the TOTAL row at level 5; most first.
	require.Equal(t, []assistant.Group{{Value: 6.0, Count: 5613}, {Value: 4.0, Count: 1229}, {Value: 2.0, Count: 97}, {Value: 5.0, Count: 1}}, out.Groups)
}

// TestRowsCypherHasItsParams: the cypher and params every rows answer
// carries run as they are on the graph (tool cypher, mgconsole): each
// $parameter of the query is in params, $pipeline included.
func TestRowsCypherHasItsParams(t *testing.T) {
	_, cs := serve(t)
	paramRe := regexp.MustCompile(`\$([A-Za-z_][A-Za-z0-9_]*)`)
	for _, args := range []map[string]any{
		{"pipeline": "tables", "anchor": "cn_code", "filters": []map[string]any{{"attribute": "code", "value": "0701"}}, "follow": []map[string]any{{"link": "REQUIRES_GUIDE"}}},
		{"pipeline": "tables", "anchor": "guide", "filters": []map[string]any{{"attribute": "title", "value": "Ceramics"}}, "follow": []map[string]any{{"link": "REQUIRES_GUIDE", "direction": "in"}}, "count_only": true},
		{"pipeline": "tables", "anchor": "faq", "count_only": true},
	} {
		var out assistant.RowsOutput
		call(t, cs, "rows", args, &out)
		require.Equal(t, "tables", out.Params["pipeline"], out.Cypher)
		for _, m := range paramRe.FindAllStringSubmatch(out.Cypher, -1) {
			require.Contains(t, out.Params, m[1], out.Cypher)
		}
	}
}

func TestRowsToolRefusesUnknownNames(t *testing.T) {
	_, cs := serve(t)
	msg := callErr(t, cs, "rows", map[string]any{"pipeline": "tables", "anchor": "hs_code"})
	require.Contains(t, msg, `anchor "hs_code" has no rows`)
	require.Contains(t, msg, "cn_code")
	msg = callErr(t, cs, "rows", map[string]any{"pipeline": "tables", "anchor": "guide", "follow": []map[string]any{{"link": "REQUIRES_GUIDE"}}})
	require.Contains(t, msg, "REQUIRES_GUIDE (in, from cn_code)")
	msg = callErr(t, cs, "rows", map[string]any{"pipeline": "tables", "anchor": "guide", "filters": []map[string]any{{"attribute": "title", "op": "like", "value": "x"}}})
	require.Contains(t, msg, `filters[0]: op "like"`)
	msg = callErr(t, cs, "rows", map[string]any{"pipeline": "tables", "anchor": "guide", "limit": 501})
	require.Contains(t, msg, "limit 501")
	// A misspelt attribute is refused, naming it, not answered "0 rows".
	msg = callErr(t, cs, "rows", map[string]any{"pipeline": "tables", "anchor": "cn_code", "filters": []map[string]any{{"attribute": "levle", "value": 2}}})
	require.Contains(t, msg, `filters[0]: anchor cn_code has no attribute "levle"; its attributes: id, code, description, level`)
	msg = callErr(t, cs, "rows", map[string]any{"pipeline": "tables", "anchor": "cn_code", "filters": []map[string]any{{"attribute": "code", "value": "0701"}},
		"follow": []map[string]any{{"link": "REQUIRES_GUIDE", "filters": []map[string]any{{"attribute": "name", "value": "x"}}}}})
	require.Contains(t, msg, `follow[0].filters[0]: anchor guide has no attribute "name"`)
	msg = callErr(t, cs, "rows", map[string]any{"pipeline": "tables", "anchor": "cn_code", "order_by": "levle"})
	require.Contains(t, msg, `order_by: anchor cn_code has no attribute "levle"`)
	msg = callErr(t, cs, "rows", map[string]any{"pipeline": "tables", "anchor": "faq", "group_by": "sources", "count_only": true})
	require.Contains(t, msg, `group_by: anchor faq has no attribute "sources"`)
	msg = callErr(t, cs, "rows", map[string]any{"pipeline": "tables", "anchor": "guide", "fields": []string{"titel"}})
	require.Contains(t, msg, `fields: anchor guide has no attribute "titel"`)
	// id and every attribute a row holds still filter.
	require.Empty(t, callErr(t, cs, "rows", map[string]any{"pipeline": "tables", "anchor": "faq", "filters": []map[string]any{{"attribute": "city", "op": "missing"}, {"attribute": "id", "value": "faq:1"}}}))
}

func TestSearchTool(t *testing.T) {
	_, cs := serve(t)
	var out assistant.SearchOutput
	call(t, cs, "search", map[string]any{"pipeline": "tables", "query": "live horses", "anchor": "cn_code", "attribute": "description"}, &out)
	require.NotEmpty(t, out.Hits)
	for _, h := range out.Hits {
		require.Equal(t, "cn_code", h.Anchor)
		require.Equal(t, "description", h.Attribute)
		require.True(t, strings.HasPrefix(h.ID, "hs_code:"), h.ID)
	}
	msg := callErr(t, cs, "search", map[string]any{"pipeline": "tables", "query": "horses", "anchor": "cn_code", "attribute": "code"})
	require.Contains(t, msg, `attribute "code" of anchor cn_code is not embeddable; searchable: description`)
	msg = callErr(t, cs, "search", map[string]any{"pipeline": "tables", "query": "horses", "anchor": "hs_code"})
	require.Contains(t, msg, `anchor "hs_code" has nothing to search`)
	// A budget without expand would be silently ignored.
	msg = callErr(t, cs, "search", map[string]any{"pipeline": "docs", "query": "forwarded header", "budget": 800})
	require.Equal(t, "budget 800 bounds the expanded context: set expand true, or leave budget out", msg)
	msg = callErr(t, cs, "search", map[string]any{"pipeline": "docs", "query": "forwarded header", "budget": -1, "expand": true})
	require.Contains(t, msg, "budget -1")
	call(t, cs, "search", map[string]any{"pipeline": "tables", "query": "masks", "anchor": "faq", "attribute": "answer"}, &out)
	require.NotEmpty(t, out.Hits)
	call(t, cs, "search", map[string]any{"pipeline": "docs", "query": "What should the by parameter contain in its default configuration?", "expand": true}, &out)
	require.NotEmpty(t, out.Hits)
	require.Positive(t, out.ContextTokens)
	require.Equal(t, "high", out.Confidence)
}

// TestSearchToolConfidence: the three answers of the relevance floor
// (docs/retrieval.md) reach the assistant as they reach kgsync search: a
// weak answer says confidence "low" and what it misses, a declined one
// has no hits and no confidence.
func TestSearchToolConfidence(t *testing.T) {
	_, cs := serve(t)
	var out assistant.SearchOutput
	call(t, cs, "search", map[string]any{"pipeline": "docs", "k": 1,
		"query": "How long may a proxy keep an obfuscated identifier for the same client?"}, &out)
	require.False(t, out.Declined)
	require.NotEmpty(t, out.Hits)
	require.Equal(t, "low", out.Confidence)
	require.Contains(t, out.Reason, "asks for a quantity")
	require.Contains(t, out.Missing, "long")
	call(t, cs, "search", map[string]any{"pipeline": "docs", "query": "How do I bake sourdough bread?"}, &out)
	require.True(t, out.Declined)
	require.Empty(t, out.Hits)
	require.Empty(t, out.Confidence)
	require.Contains(t, out.Reason, "missing: bake, sourdough, bread")
}

// TestSearchToolExpandAsCLI: expand builds the context as kgsync search
// --expand does: the definition of a term the question names comes with
// the hits, and what a small budget left out is listed.
func TestSearchToolExpandAsCLI(t *testing.T) {
	_, cs := serve(t)
	var out assistant.SearchOutput
	call(t, cs, "search", map[string]any{"pipeline": "docs", "k": 2, "expand": true, "query": "How must Known Vulnerabilities be handled?"}, &out)
	var reasons []string
	for _, h := range out.Hits {
		for _, x := range h.Expansions {
			reasons = append(reasons, x.Reason)
		}
	}
	require.Contains(t, reasons, `defines "Known Vulnerability", which the question names`)
	call(t, cs, "search", map[string]any{"pipeline": "docs", "k": 3, "expand": true, "budget": 1200, "query": `What should the "by" parameter contain by default?`}, &out)
	require.LessOrEqual(t, out.ContextTokens, 1200)
	require.NotEmpty(t, out.Omitted)
	for _, o := range out.Omitted {
		require.NotEmpty(t, o.ID)
		require.NotEmpty(t, o.Reason)
		require.Positive(t, o.Tokens)
	}
	// With room in the budget, the hits beyond k come too, as with the CLI.
	call(t, cs, "search", map[string]any{"pipeline": "docs", "k": 1, "expand": true, "query": `What should the "by" parameter contain by default?`}, &out)
	require.Greater(t, len(out.Hits), 1, "hits beyond k=1 fill the budget")
	require.LessOrEqual(t, out.ContextTokens, 2500)
}

func TestLookupTermNeighbors(t *testing.T) {
	_, cs := serve(t)
	var lk assistant.LookupOutput
	call(t, cs, "lookup", map[string]any{"pipeline": "docs", "address": "RFC 7239 5.1"}, &lk)
	require.NotEmpty(t, lk.Nodes)
	id := lk.Nodes[0].ID
	require.Contains(t, id, "rfc7239")

	var nb assistant.NeighborsOutput
	call(t, cs, "neighbors", map[string]any{"pipeline": "docs", "id": id}, &nb)
	require.NotEmpty(t, nb.Edges)
	types := map[string]bool{}
	for _, e := range nb.Edges {
		types[e.Type] = true
	}
	// Edge types are the graph's, so a cypher query can follow them:
	// structure is (child)-[:PART_OF]->(parent).
	require.Contains(t, nb.Edges, assistant.Neighbor{Type: "PART_OF", Direction: "out", ID: "docs:rfc7239.txt › 5", Label: "Section", Text: "5. Parameters"})
	require.False(t, types["PARENT_OF"], "%+v", nb.Edges)

	// A row's long attribute is chunked: (:Chunk)-[:PART_OF]->(row), and
	// the chunk covers no element node of the graph.
	var sr assistant.SearchOutput
	call(t, cs, "search", map[string]any{"pipeline": "tables", "query": "supportive care of complications for hospitalized patients", "anchor": "faq", "attribute": "answer"}, &sr)
	var chunk *assistant.SearchHit
	for i, h := range sr.Hits {
		if h.Label == "Chunk" {
			chunk = &sr.Hits[i]
			break
		}
	}
	require.NotNil(t, chunk, "%+v", sr.Hits)
	call(t, cs, "neighbors", map[string]any{"pipeline": "tables", "id": chunk.Node}, &nb)
	found := false
	for _, e := range nb.Edges {
		found = found || e.Type == "PART_OF" && e.Direction == "in" && e.ID == chunk.ID && e.Label == "Chunk"
	}
	require.True(t, found, "%s: %+v", chunk.Node, nb.Edges)
	call(t, cs, "neighbors", map[string]any{"pipeline": "tables", "id": chunk.ID}, &nb)
	require.Equal(t, []assistant.Neighbor{{Type: "PART_OF", Direction: "out", ID: chunk.Node, Label: "faq", Text: nb.Edges[0].Text}}, nb.Edges)

	call(t, cs, "neighbors", map[string]any{"pipeline": "tables", "id": "hs_code:0701"}, &nb)
	var guide *assistant.Neighbor
	for i, e := range nb.Edges {
		if e.Type == "REQUIRES_GUIDE" {
			guide = &nb.Edges[i]
		}
	}
	require.NotNil(t, guide, "%+v", nb.Edges)
	require.Equal(t, "guide:24", guide.ID)
	require.Equal(t, "0701000000", guide.Props["fqcc"])

	var tm assistant.TermOutput
	call(t, cs, "term", map[string]any{"pipeline": "docs", "term": "program"}, &tm)
	// "Program" is defined in the OpenChain specification, and so is
	// "Program Participants", which contains it: the exact name first.
	require.GreaterOrEqual(t, len(tm.Definitions), 2)
	require.Equal(t, "Program", tm.Definitions[0].Name)
	require.True(t, tm.Definitions[0].Exact)
	require.Contains(t, tm.Definitions[0].Document, "openchain")
}

func TestSchemaResourceAndPlaybookPrompt(t *testing.T) {
	_, cs := serve(t)
	ctx := context.Background()
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "kgsync://schema/tables"})
	require.NoError(t, err)
	require.Len(t, res.Contents, 1)
	require.Contains(t, res.Contents[0].Text, "| `cn_code` | 6940 |")
	p, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "playbook"})
	require.NoError(t, err)
	text := p.Messages[0].Content.(*mcp.TextContent).Text
	require.Contains(t, text, "rows")
	require.Contains(t, text, "# Data model of pipeline tables")
}

// TestPlaybookFromFile serves the configured playbook file as the prompt,
// read on each request, and reports a missing file.
func TestPlaybookFromFile(t *testing.T) {
	ctx := context.Background()
	_, store, ps, err := build(ctx, quickstart(t))
	require.NoError(t, err)
	defer store.Close()
	path := filepath.Join(t.TempDir(), "playbook.md")
	require.NoError(t, os.WriteFile(path, []byte("Count with rows, never with search.\n"), 0o600))
	srv, err := assistant.New(assistant.Options{Pipelines: ps, Playbook: path})
	require.NoError(t, err)
	cs := connect(t, srv)
	p, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "playbook"})
	require.NoError(t, err)
	text := p.Messages[0].Content.(*mcp.TextContent).Text
	require.True(t, strings.HasPrefix(text, "Count with rows, never with search.\n"), text)
	require.Contains(t, text, "# Data model of pipeline docs")
	require.NoError(t, os.Remove(path))
	_, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "playbook"})
	require.ErrorContains(t, err, "playbook.md")
}

// cancelAfterRuns is a store that cancels a context once the server has
// read the runs: the view's first load then runs with a cancelled context.
type cancelAfterRuns struct {
	state.Store
	cancel func()
}

func (c cancelAfterRuns) RunList(ctx context.Context, pipeline string, limit int) ([]state.Run, error) {
	runs, err := c.Store.RunList(ctx, pipeline, limit)
	c.cancel()
	return runs, err
}

// TestCancelledFirstLoadIsNotKept: a call whose context ends while the
// view loads fails, and the next call loads it again instead of repeating
// the cancellation.
func TestCancelledFirstLoadIsNotKept(t *testing.T) {
	ctx := context.Background()
	_, store, ps, err := build(ctx, quickstart(t))
	require.NoError(t, err)
	defer store.Close()
	first, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, p := range ps {
		p.Store = cancelAfterRuns{Store: p.Store, cancel: cancel}
	}
	srv, err := assistant.New(assistant.Options{Pipelines: ps})
	require.NoError(t, err)
	_, err = srv.Rows(first, assistant.RowsInput{Pipeline: "tables", Anchor: "guide"})
	require.ErrorIs(t, err, context.Canceled)
	out, err := srv.Rows(ctx, assistant.RowsInput{Pipeline: "tables", Anchor: "guide"})
	require.NoError(t, err)
	require.Equal(t, 19, out.Total)
}
