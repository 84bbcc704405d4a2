package assistant

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/neo4j/neo4j-go-driver/v5/neo4j/dbtype"

	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/sink/memgraph"
)

// CypherInput is the input of tool cypher.
type CypherInput struct {
	Pipeline string         `json:"pipeline,omitempty" jsonschema:"the pipeline whose Memgraph to query; required when several are served"`
	Query    string         `json:"query" jsonschema:"one read-only Cypher statement; use $parameters for values"`
	Params   map[string]any `json:"params,omitempty" jsonschema:"the query's parameters"`
	// Embed names parameters whose value is a text embedded with the
	// pipeline's embedder, for vector_search.search.
	Embed map[string]string `json:"embed,omitempty" jsonschema:"parameters to fill with the embedding of a text, e.g. {\"vec\": \"live horses\"} for CALL vector_search.search('cn_code_description_embedding', 5, $vec)"`
}

// CypherOutput is the result of tool cypher.
type CypherOutput struct {
	Pipeline string   `json:"pipeline"`
	Columns  []string `json:"columns"`
	Rows     [][]any  `json:"rows"`
	// Truncated reports more rows than the cap (MaxRows, or 4 MiB of
	// JSON); add LIMIT or aggregate.
	Truncated bool `json:"truncated,omitempty"`
	MaxRows   int  `json:"max_rows"`
}

// The guard of tool cypher. A query runs only if all of these hold, and
// its transaction is rolled back whatever happens:
//  1. it is one statement (a trailing ";" aside), its first clause one of
//     allowedFirst, and none of its words outside strings, comments and
//     backtick names is a clause that writes (writeClauses): comments
//     cannot hide a clause, because the check reads the query as Cypher's
//     lexer does, with comments removed;
//  2. every procedure it CALLs is allowed by name (procedureAllowed);
//  3. it runs in a read transaction (Bolt mode "r": Memgraph from 3.2
//     refuses writes in it), which is always rolled back, with a timeout
//     and a row cap (memgraph.Sink.Read);
//  4. the server plans it as a read: the summary's query type is "r".
//     Memgraph reports "rw" for a plan with a write and for one that reads
//     nothing from the graph (RETURN 1), "w" for writes only; and EXPLAIN
//     is "rw" whatever it explains (memgraph/memgraph#2777), so EXPLAIN
//     and PROFILE are refused in step 1.
//
// Memgraph Community has no read-only session, so no single step is the
// guard; index and constraint DDL are also refused by Memgraph itself
// inside an explicit transaction (docs/memgraph.md §2).
var (
	allowedFirst = []string{"MATCH", "OPTIONAL", "WITH", "UNWIND", "CALL", "RETURN"}
	writeClauses = []string{"CREATE", "MERGE", "SET", "REMOVE", "DELETE", "DETACH", "DROP", "LOAD", "FOREACH",
		"ALTER", "GRANT", "REVOKE", "DENY", "TERMINATE", "TRANSACTIONS", "PERIODIC", "IMPORT", "STORAGE", "TRIGGER", "STREAM"}
)

// procedureAllowed reports whether CALL may name procedure name: the
// read-only search modules and mg's listing procedures.
func procedureAllowed(name string) bool {
	n := strings.ToLower(name)
	return strings.HasPrefix(n, "vector_search.") || strings.HasPrefix(n, "text_search.") ||
		n == "mg.procedures" || n == "mg.functions"
}

// token is a word or a punctuation character of a query.
type token struct {
	text string
	word bool
	// afterDot reports a word right after "." or "$" (a property or
	// parameter name, not a clause).
	afterDot bool
}

// tokenize reads q as Memgraph's lexer does (CypherLexer.g4): strings
// ('…', "…" with its backslash escapes), backtick names, // (to the end
// of the line, \n or \r) and /* */ comments, numbers, words and single
// punctuation characters. A word is ASCII letters, digits, _ and $ (which
// continues a name there, IdentifierPart: ID_Continue | Sc); every other
// character is a token of its own, so a word never holds a character
// Memgraph's lexer drops (one no rule matches, such as a letter outside
// its Unicode tables: the parser reads on without it), and a name with
// other letters is read as more tokens than Memgraph reads, which can
// only refuse more. Errors: an unterminated string, name or comment, and
// an escape Memgraph's lexer does not know.
func tokenize(q string) ([]token, error) {
	var out []token
	rs := []rune(q)
	prevDot := false
	for i := 0; i < len(rs); {
		c := rs[i]
		switch {
		case unicode.IsSpace(c):
			i++
			continue
		case c == '/' && i+1 < len(rs) && rs[i+1] == '/':
			for i < len(rs) && rs[i] != '\n' && rs[i] != '\r' {
				i++
			}
			continue
		case c == '/' && i+1 < len(rs) && rs[i+1] == '*':
			end := strings.Index(string(rs[i+2:]), "*/")
			if end < 0 {
				return nil, fmt.Errorf("unterminated /* comment")
			}
			i += 2 + len([]rune(string(rs[i+2:])[:end])) + 2
			continue
		case c == '\'' || c == '"' || c == '`':
			j := i + 1
			for ; j < len(rs) && rs[j] != c; j++ {
				if rs[j] == '\\' && c != '`' {
					n := escapeLen(rs[j+1:])
					if n == 0 {
						return nil, fmt.Errorf("unknown escape in a string at %q", string(rs[j:min(j+2, len(rs))]))
					}
					j += n
				}
			}
			if j >= len(rs) {
				return nil, fmt.Errorf("unterminated %c", c)
			}
			out = append(out, token{text: string(rs[i : j+1])})
			i = j + 1
			prevDot = false
			continue
		case isDecDigit(c) || c == '.' && i+1 < len(rs) && isDecDigit(rs[i+1]):
			// A number is no part of a word: Memgraph reads 1DELETE as
			// 1 and DELETE, and .5SET as .5 and SET.
			j := numberEnd(rs, i)
			out = append(out, token{text: string(rs[i:j])})
			i = j
			prevDot = false
			continue
		case c == '_' || isASCIILetter(c):
			j := i
			for j < len(rs) && (rs[j] == '_' || rs[j] == '$' || isASCIILetter(rs[j]) || isDecDigit(rs[j])) {
				j++
			}
			out = append(out, token{text: string(rs[i:j]), word: true, afterDot: prevDot})
			i = j
			prevDot = false
			continue
		}
		out = append(out, token{text: string(c)})
		prevDot = c == '.' || c == '$'
		i++
	}
	return out, nil
}

func isDecDigit(c rune) bool { return c >= '0' && c <= '9' }

func isASCIILetter(c rune) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// escapeLen is the length of the escape after a backslash in a string,
// as Memgraph's lexer reads it (CypherLexer.g4 EscapeSequence: b f n r
// t in either case, \\ ' ", u and 4 hex digits, U and 8), or 0 when
// there is none: Memgraph's lexer then drops the string's start and reads
// on from there.
func escapeLen(rs []rune) int {
	if len(rs) == 0 {
		return 0
	}
	hex := 0
	switch rs[0] {
	case 'b', 'B', 'f', 'F', 'n', 'N', 'r', 'R', 't', 'T', '\\', '\'', '"':
		return 1
	case 'u':
		hex = 4
	case 'U':
		hex = 8
	default:
		return 0
	}
	if len(rs) <= hex || slices.ContainsFunc(rs[1:hex+1], func(c rune) bool { return !isHexDigit(c) }) {
		return 0
	}
	return 1 + hex
}

// numberEnd returns the end of the number literal starting at rs[i] (a
// decimal digit, or "." before one), read as Memgraph's lexer reads it
// (src/query/frontend/opencypher/grammar/CypherLexer.g4: DecimalLiteral,
// OctalLiteral, HexadecimalLiteral "0x…", FloatingLiteral with an
// optional E-?digits exponent), longest match first.
func numberEnd(rs []rune, i int) int {
	digits := func(j int) int {
		for j < len(rs) && isDecDigit(rs[j]) {
			j++
		}
		return j
	}
	exponent := func(j int) int {
		if j < len(rs) && (rs[j] == 'e' || rs[j] == 'E') {
			k := j + 1
			if k < len(rs) && rs[k] == '-' {
				k++
			}
			if e := digits(k); e > k {
				return e
			}
		}
		return j
	}
	if rs[i] == '0' && i+2 < len(rs) && rs[i+1] == 'x' && isHexDigit(rs[i+2]) {
		j := i + 2
		for j < len(rs) && isHexDigit(rs[j]) {
			j++
		}
		return j
	}
	j := digits(i)
	if j < len(rs) && rs[j] == '.' {
		if f := digits(j + 1); f > j+1 {
			return exponent(f)
		}
		if e := exponent(j + 1); e > j+1 && j > i { // 1.e5
			return e
		}
	}
	return exponent(j)
}

func isHexDigit(c rune) bool {
	return isDecDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// checkCypher is step 1 and 2 of the guard: nil when q may be sent, else
// the reason it is refused.
func checkCypher(q string) error {
	toks, err := tokenize(q)
	if err != nil {
		return fmt.Errorf("refused: the query does not parse: %w", err)
	}
	for i, t := range toks {
		if t.text == ";" && i < len(toks)-1 {
			return fmt.Errorf("refused: one statement per call (found %q after a ';')", toks[i+1].text)
		}
	}
	if len(toks) > 0 && toks[len(toks)-1].text == ";" {
		toks = toks[:len(toks)-1]
	}
	if len(toks) == 0 {
		return fmt.Errorf("refused: the query is empty")
	}
	first := strings.ToUpper(toks[0].text)
	if first == "EXPLAIN" || first == "PROFILE" {
		return fmt.Errorf("refused: %s is not served: Memgraph reports every EXPLAIN as read-write, so the read-only check cannot apply to it", first)
	}
	if !toks[0].word || !slices.Contains(allowedFirst, first) {
		return fmt.Errorf("refused: a read query starts with %s; %q does not", strings.Join(allowedFirst, ", "), toks[0].text)
	}
	for i, t := range toks {
		if !t.word || t.afterDot {
			continue
		}
		// A map key ({set: 1}) is followed by ':'; a label or type after ':'.
		if i+1 < len(toks) && toks[i+1].text == ":" || i > 0 && toks[i-1].text == ":" {
			continue
		}
		up := strings.ToUpper(t.text)
		if slices.Contains(writeClauses, up) {
			return fmt.Errorf("refused: %s writes or changes the database; the cypher tool only reads (quote a property named so in backticks)", up)
		}
		if up == "CALL" {
			if i+1 < len(toks) && toks[i+1].text == "{" {
				continue // a subquery: its clauses are checked like the rest
			}
			var name []string
			for j := i + 1; j < len(toks); j += 2 {
				name = append(name, strings.Trim(toks[j].text, "`"))
				if j+1 >= len(toks) || toks[j+1].text != "." {
					break
				}
			}
			proc := strings.Join(name, ".")
			if !procedureAllowed(proc) {
				return fmt.Errorf("refused: procedure %q is not allowed; allowed: vector_search.*, text_search.*, mg.procedures, mg.functions", proc)
			}
		}
	}
	return nil
}

func (s *Server) toolCypher(ctx context.Context, _ *mcp.CallToolRequest, in CypherInput) (*mcp.CallToolResult, CypherOutput, error) {
	out := CypherOutput{Columns: []string{}, Rows: [][]any{}, MaxRows: s.opts.CypherMaxRows}
	p, err := s.pipelineFor(in.Pipeline)
	if err != nil {
		return nil, out, err
	}
	out.Pipeline = p.Name
	g := graphOf(p)
	if g == nil {
		return nil, out, fmt.Errorf("refused: pipeline %s's sink is not Memgraph; use rows, search or neighbors", p.Name)
	}
	if err := checkCypher(in.Query); err != nil {
		return nil, out, err
	}
	params := map[string]any{}
	for k, v := range in.Params {
		params[k] = v
	}
	for name, text := range in.Embed {
		vecs, err := p.Embedder.Embed(ctx, []string{text})
		if err != nil {
			return nil, out, fmt.Errorf("embed parameter %s: %w", name, err)
		}
		params[name] = vecs[0]
	}
	res, err := g.Read(ctx, in.Query, params, memgraph.ReadOptions{Timeout: s.opts.CypherTimeout, MaxRows: s.opts.CypherMaxRows})
	if err != nil {
		return nil, out, fmt.Errorf("the query failed (nothing was written; the transaction was rolled back): %w", err)
	}
	if res.Type != "r" {
		return nil, out, fmt.Errorf("refused: Memgraph planned the query as %q, not read-only \"r\" (a query that writes, or that reads nothing from the graph such as RETURN 1 alone); its transaction was rolled back", res.Type)
	}
	out.Columns, out.Truncated = res.Fields, res.Truncated
	size := 0
	for _, r := range res.Rows {
		row := make([]any, len(r))
		for i, v := range r {
			row[i] = plain(v)
		}
		b, err := json.Marshal(row)
		if err != nil {
			return nil, out, fmt.Errorf("row %d: %w", len(out.Rows), err)
		}
		if size += len(b); size > maxCypherBytes {
			out.Truncated = true
			break
		}
		out.Rows = append(out.Rows, row)
	}
	return nil, out, nil
}

// maxCypherBytes bounds the JSON of a cypher answer's rows; past it the
// answer is truncated like past the row cap.
const maxCypherBytes = 4 << 20

// plain turns driver values into JSON-friendly ones: nodes and
// relationships as maps without their vector and lexical-index properties.
func plain(v any) any {
	switch x := v.(type) {
	case dbtype.Node:
		return map[string]any{"labels": x.Labels, "props": withoutVectors(x.Props, x.Labels)}
	case dbtype.Relationship:
		return map[string]any{"type": x.Type, "props": withoutVectors(x.Props, nil)}
	case dbtype.Path:
		nodes := make([]any, len(x.Nodes))
		for i, n := range x.Nodes {
			nodes[i] = plain(n)
		}
		rels := make([]any, len(x.Relationships))
		for i, r := range x.Relationships {
			rels[i] = plain(r)
		}
		return map[string]any{"nodes": nodes, "relationships": rels}
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = plain(e)
		}
		return out
	case []float32, []float64:
		return x
	}
	if s, ok := v.(fmt.Stringer); ok && v != nil {
		switch v.(type) {
		case dbtype.Date, dbtype.LocalDateTime, dbtype.LocalTime, dbtype.Time, dbtype.Duration:
			return s.String()
		}
	}
	return v
}

// withoutVectors is props of a node with labels (nil for a relationship)
// less what kgsync adds for search: vector properties (…_embedding, and a
// chunk's embedding) and the texts the text indexes cover (a row's _lex;
// lex of a chunk, element or term). A table row's own attributes called
// embedding or lex stay (pipeline.PropRowLex).
func withoutVectors(props map[string]any, labels []string) map[string]any {
	chunk := slices.Contains(labels, pipeline.LabelChunk)
	lexical := chunk || slices.Contains(labels, pipeline.LabelElement) || slices.Contains(labels, pipeline.LabelTerm)
	out := make(map[string]any, len(props))
	for k, v := range props {
		if strings.HasSuffix(k, "_embedding") || k == pipeline.PropRowLex ||
			chunk && k == pipeline.PropEmbedding || lexical && k == pipeline.PropLex {
			continue
		}
		out[k] = plain(v)
	}
	return out
}
