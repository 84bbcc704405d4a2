package sink

import (
	"fmt"
	"regexp"
	"strconv"
)

// MemgraphRange is one row of the supported-version table
// (docs/memgraph-support.md): what kgsync emits for and checks of the
// Memgraph versions 3.MinMinor … 3.MaxMinor. The facts come from
// Memgraph's own source at each tag (grammar
// src/query/frontend/opencypher/grammar/MemgraphCypher.g4, interpreter
// src/query/interpreter.cpp, query_modules/text_search_module.cpp,
// src/storage/v2/indices/vector_index.cpp).
type MemgraphRange struct {
	// MinMinor and MaxMinor bound the 3.x minor versions of the row
	// (inclusive; MaxMinor -1 means "and later").
	MinMinor, MaxMinor int
	// Supported is false for versions kgsync refuses (before 3.1: no SHOW
	// VECTOR INDEX INFO, which the Bolt sink reads).
	Supported bool
	// TextIndexes: kgsync emits CREATE TEXT INDEX name ON :L(p). The
	// property-list form is a syntax error before 3.5 (grammar:
	// "createTextIndex : CREATE TEXT INDEX indexName ON ':' labelName ;"
	// at v3.0.0–v3.4.0), needs --experimental-enabled=text-search on 3.5
	// (PrepareTextIndexQuery throws TextSearchDisabledException) where
	// text_search.search takes (index_name, search_query) and yields no
	// score; from 3.6 it is GA and the flag must be removed. Without text
	// indexes lexical search comes from kgsync's own lexical index in
	// state.
	TextIndexes bool
	// TextLimitInConfig: text_search.search(index, query, {limit: n})
	// (3.11 and later); 3.6–3.10 take the limit as a third positional
	// INTEGER argument.
	TextLimitInConfig bool
	// DuplicateVectorIndexFails: a CREATE VECTOR INDEX whose name or label
	// and property is taken is an error ("Given vector index already
	// exists.", 3.0–3.7); from 3.8 only an INFO notification "Error while
	// creating vector index …" and the old index stays.
	DuplicateVectorIndexFails bool
}

// MemgraphRanges is the supported-version table, oldest first. The last
// row holds every later version.
var MemgraphRanges = []MemgraphRange{
	{MinMinor: 0, MaxMinor: 0, Supported: false, DuplicateVectorIndexFails: true},
	{MinMinor: 1, MaxMinor: 5, Supported: true, DuplicateVectorIndexFails: true},
	{MinMinor: 6, MaxMinor: 7, Supported: true, TextIndexes: true, DuplicateVectorIndexFails: true},
	{MinMinor: 8, MaxMinor: 10, Supported: true, TextIndexes: true},
	{MinMinor: 11, MaxMinor: -1, Supported: true, TextIndexes: true, TextLimitInConfig: true},
}

// DefaultCypherlMemgraphVersion is the Memgraph version CYPHERL files are
// written for when the configuration names none.
const DefaultCypherlMemgraphVersion = "3.8"

var reMemgraphVersion = regexp.MustCompile(`^v?(\d+)\.(\d+)`)

// MemgraphFeatures returns the table row of version ("3.8.1", "v3.5",
// "3.12.0-rc1"). A major version above 3 gets the last row. Errors: an
// unparseable version, or one before 3 (named in the message).
func MemgraphFeatures(version string) (MemgraphRange, error) {
	m := reMemgraphVersion.FindStringSubmatch(version)
	if m == nil {
		return MemgraphRange{}, fmt.Errorf("memgraph version %q: want major.minor, e.g. 3.8", version)
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	switch {
	case major < 3:
		return MemgraphRange{}, fmt.Errorf("memgraph version %q: kgsync supports 3.1 or later", version)
	case major > 3:
		return MemgraphRanges[len(MemgraphRanges)-1], nil
	}
	for _, r := range MemgraphRanges {
		if minor >= r.MinMinor && (r.MaxMinor < 0 || minor <= r.MaxMinor) {
			return r, nil
		}
	}
	return MemgraphRanges[len(MemgraphRanges)-1], nil
}

// Versions is the row's range as text: "3.1–3.5", "3.11 or later".
func (r MemgraphRange) Versions() string {
	switch {
	case r.MaxMinor < 0:
		return fmt.Sprintf("3.%d or later", r.MinMinor)
	case r.MinMinor == r.MaxMinor:
		return fmt.Sprintf("3.%d", r.MinMinor)
	}
	return fmt.Sprintf("3.%d–3.%d", r.MinMinor, r.MaxMinor)
}
