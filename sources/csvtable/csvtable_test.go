package csvtable

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/internal/corpus"
	"go.uber.org/goleak"

	"github.com/kgsync/kgsync/sources"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var _ sources.Source = (*Source)(nil)

// tablesDir is the corpus's tables directory.
func tablesDir(t testing.TB) string { return corpus.Tables(t) }

// listing collects a whole Read: its pages, or its error.
type listing struct {
	pages    []*sources.Page
	records  []sources.Record
	byKey    map[string]sources.Record
	skipped  []sources.Skip
	dups     []sources.Record // records whose key an earlier one has
	unlisted []sources.Unlisted
	cursor   string // the last page's
	err      error
}

func readAll(t testing.TB, src *Source) listing {
	t.Helper()
	l := listing{byKey: map[string]sources.Record{}}
	for pg, err := range src.Read(t.Context(), "") {
		if err != nil {
			l.err = err
			break
		}
		require.NotNil(t, pg)
		require.Empty(t, l.cursor, "the cursor comes with the last page only")
		l.cursor = pg.Cursor
		require.False(t, pg.Partial)
		l.pages = append(l.pages, pg)
		l.skipped = append(l.skipped, pg.Skipped...)
		l.unlisted = append(l.unlisted, pg.Unlisted...)
		for _, r := range pg.Records {
			require.NotEmpty(t, r.Where)
			if _, dup := l.byKey[r.Key]; dup {
				l.dups = append(l.dups, r) // the pipeline keeps the first
			} else {
				l.byKey[r.Key] = r
			}
			l.records = append(l.records, r)
		}
	}
	return l
}

// newSource builds a source or fails the test.
func newSource(t testing.TB, tables ...Table) *Source {
	t.Helper()
	s, err := New("test", Config{Tables: tables}, nil)
	require.NoError(t, err)
	return s
}

// writeCSV writes content to a file in a temp dir and returns its path.
func writeCSV(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

func TestHarmonizedSystem(t *testing.T) {
	t.Parallel()
	dir := tablesDir(t)
	src := newSource(t, Table{
		Path: filepath.Join(dir, "harmonized-system.csv"), Table: "hs_code", Key: "hscode",
		Columns: map[string]string{"parent": "ref:hs_code", "level": "int"},
	})
	l := readAll(t, src)
	require.NoError(t, l.err)
	require.Empty(t, l.skipped)
	// MANIFEST: 6940 data rows; levels 2/4/6 = 97/1229/5613 plus the root at level 5.
	require.Len(t, l.records, 6940)
	levels := map[int64]int{}
	for _, r := range l.records {
		require.Equal(t, "hs_code", r.Anchor)
		levels[r.Attributes["level"].(int64)]++
		// Every row (the root points to itself) links to its parent, which exists.
		parent := r.Attributes["parent"].(string)
		require.Equal(t, []sources.Link{{Type: "PARENT", ToAnchor: "hs_code", ToKey: "hs_code:" + parent}}, r.Links, r.Key)
		_, ok := l.byKey["hs_code:"+parent]
		require.True(t, ok, "parent of %s missing", r.Key)
	}
	require.Equal(t, map[int64]int{2: 97, 4: 1229, 6: 5613, 5: 1}, levels)
	// Codes keep their leading zeros (file line 4: I,010121,"Horses; live, pure-bred breeding animals",0101,6).
	h := l.byKey["hs_code:010121"]
	require.Equal(t, map[string]any{"section": "I", "hscode": "010121", "description": "Horses; live, pure-bred breeding animals", "parent": "0101", "level": int64(6)}, h.Attributes)
	require.Equal(t, "hs_code:0101", h.Links[0].ToKey)
	require.Equal(t, "hs_code:TOTAL", l.byKey["hs_code:TOTAL"].Links[0].ToKey)
	// 6940 records in pages of at most 500: 14 pages, all full but the last.
	require.Len(t, l.pages, 14)
	for _, pg := range l.pages[:13] {
		require.Len(t, pg.Records, DefaultPageSize)
	}
}

func TestSectionsBOM(t *testing.T) {
	t.Parallel()
	dir := tablesDir(t)
	p := filepath.Join(dir, "harmonized-system-sections.csv")
	raw, err := os.ReadFile(p)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(raw), "\ufeffsection,"), "the file starts with a BOM (MANIFEST)")

	// Keyed by the BOM-stripped "section" column.
	l := readAll(t, newSource(t, Table{Path: p, Key: "section"}))
	require.NoError(t, l.err)
	require.Len(t, l.records, 21)
	r := l.byKey["harmonized_system_sections:I"]
	require.Equal(t, "harmonized_system_sections", r.Anchor)
	require.Equal(t, map[string]any{"section": "I", "name": "live animals; animal products"}, r.Attributes)
}

func TestUKTariffGuides(t *testing.T) {
	t.Parallel()
	dir := tablesDir(t)
	l := readAll(t, newSource(t, Table{
		Path: filepath.Join(dir, "uk-tariff-guides.csv"), Table: "guide", Key: "id",
		Columns: map[string]string{"active": "bool", "id": "int"}, Skip: []string{"image"},
	}))
	require.NoError(t, l.err)
	require.Len(t, l.records, 19)
	r := l.byKey["guide:1"]
	require.Equal(t, int64(1), r.Attributes["id"])
	require.Equal(t, true, r.Attributes["active"])
	require.Equal(t, "Drones and aircraft parts", r.Attributes["title"])
	require.NotContains(t, r.Attributes, "image")
}

// headingDuplicates counts rows of uk-tariff-headings_guides.csv whose
// heading_id repeats an earlier row, with encoding/csv directly.
func headingDuplicates(t *testing.T, path string) (rows, dups int) {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	all, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, r := range all[1:] {
		if seen[r[0]] {
			dups++
		}
		seen[r[0]] = true
	}
	return len(all) - 1, dups
}

func TestHeadingsGuides(t *testing.T) {
	t.Parallel()
	p := filepath.Join(tablesDir(t), "uk-tariff-headings_guides.csv")
	rows, dups := headingDuplicates(t, p)
	// MANIFEST: 340 rows, 325 distinct headings.
	require.Equal(t, 340, rows)
	require.Equal(t, 340-325, dups)

	// Without a key: row numbers, every row a record.
	l := readAll(t, newSource(t, Table{Path: p, Table: "heading_guide", Columns: map[string]string{"id": "ref:guide"}}))
	require.NoError(t, l.err)
	require.Len(t, l.records, 340)
	r := l.byKey["heading_guide:1"]
	require.Equal(t, "0701", r.Attributes["heading_id"])
	require.Equal(t, "0701000000", r.Attributes["fqcc"])
	require.Equal(t, []sources.Link{{Type: "ID", ToAnchor: "guide", ToKey: "guide:24"}}, r.Links)
	require.Contains(t, l.byKey, "heading_guide:340")

	// Keyed by heading_id: every row is yielded with its line (the
	// pipeline keeps the first of a key).
	l = readAll(t, newSource(t, Table{Path: p, Table: "heading_guide", Key: "heading_id"}))
	require.NoError(t, l.err)
	require.Len(t, l.records, 340)
	require.Len(t, l.byKey, 340-dups)
	require.Len(t, l.dups, dups)
	require.Empty(t, l.skipped)
	for _, r := range l.dups {
		require.Regexp(t, `uk-tariff-headings_guides\.csv line \d+$`, r.Where)
	}
}

func TestWindsorThemes(t *testing.T) {
	t.Parallel()
	p := filepath.Join(tablesDir(t), "windsor-framework-green-lanes-themes.csv")
	l := readAll(t, newSource(t, Table{Path: p, Table: "theme", Key: "Theme", Columns: map[string]string{"Category implied": "int", "Usage": "int"}}))
	require.NoError(t, l.err)
	require.Empty(t, l.skipped)
	require.Len(t, l.records, 31)
	named := []string{"Theme", "Category implied", "Full description", "Usage", "Tranche 1"}
	multiline := 0
	for _, r := range l.records {
		for _, n := range named {
			require.Contains(t, r.Attributes, n)
		}
		for k, v := range r.Attributes {
			if !contains(named, k) {
				// Header cells 6..14 are empty: generated names, empty values left out.
				require.Regexp(t, `^column_([6-9]|1[0-4])$`, k)
				require.NotEqual(t, "", v)
			}
			if s, ok := v.(string); ok && strings.Contains(s, "\n") {
				multiline++
			}
		}
	}
	require.Equal(t, 1, multiline, "MANIFEST: 1 multi-line quoted cell")
	r := l.byKey["theme:2.15. Explosive precursors"]
	require.Equal(t, "This is not in force. Assuming this might be the latest version - DIRECTIVE (EU) 2021/555 OF THE EUROPEAN PARLIAMENT AND OF THE COUNCIL of 24 March 2021 on control of the acquisition and possession of weapons\n", r.Attributes["column_8"])
	first := l.byKey["theme:1.1. Sanctions"]
	require.Equal(t, map[string]any{"Theme": "1.1. Sanctions", "Category implied": int64(1), "Full description": "1.1. Restrictive measures in force based on Article 215 Treaty on the Functioning of the European Union, insofar as they relate to trade in goods between the Union and third countries;", "Usage": int64(17), "Tranche 1": "Tranche 1"}, first.Attributes)
	// The last row's Usage is empty: a typed empty cell is nil.
	require.Nil(t, l.records[30].Attributes["Usage"])
	require.Contains(t, l.records[30].Attributes, "Usage")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestFAQCRLF(t *testing.T) {
	t.Parallel()
	p := filepath.Join(tablesDir(t), "faq_covidbert.csv")
	l := readAll(t, newSource(t, Table{Path: p, Table: "faq"}))
	require.NoError(t, l.err)
	require.Len(t, l.records, 213)
	multiline, crs := 0, 0
	for _, r := range l.records {
		require.Len(t, r.Attributes, 12)
		for _, v := range r.Attributes {
			s := v.(string)
			if strings.Contains(s, "\n") {
				multiline++
			}
			crs += strings.Count(s, "\r")
		}
	}
	// MANIFEST: 266 multi-line cells with bare LF; every CR of the file is part of a row end.
	require.Equal(t, 266, multiline)
	require.Zero(t, crs)
	r := l.byKey["faq:1"]
	require.Equal(t, "What is a novel coronavirus?", r.Attributes["question"])
	require.Equal(t, "2020/03/17", r.Attributes["last_update"])
}

func TestTypes(t *testing.T) {
	t.Parallel()
	cols := map[string]string{"n": "int", "x": "numeric", "b": "bool", "d": "date", "c": "choicelist", "r": "ref:other", "rl": "reflist:other"}
	p := writeCSV(t, "types.csv", "id,n,x,b,d,c,r,rl,s\n"+
		"a, 42 ,1.5,Yes,2024-02-29,red; blue;,o1,\"o1, o2;o3\", keep  \n"+
		"b,,,,,,,,\n"+
		"c,-7,1e3,0,2024-01-01,\"[\"\"x\"\",\"\"y\"\"]\",o2,\"[\"\"o4\"\"]\",\n")
	l := readAll(t, newSource(t, Table{Path: p, Table: "t", Key: "id", Columns: cols}))
	require.NoError(t, l.err)
	require.Empty(t, l.skipped)
	a := l.byKey["t:a"]
	require.Equal(t, map[string]any{"id": "a", "n": int64(42), "x": 1.5, "b": true, "d": "2024-02-29", "c": []any{"red", "blue"}, "r": "o1", "rl": []any{"o1", "o2", "o3"}, "s": " keep  "}, a.Attributes)
	require.Equal(t, []sources.Link{
		{Type: "R", ToAnchor: "other", ToKey: "other:o1"},
		{Type: "RL", ToAnchor: "other", ToKey: "other:o1"},
		{Type: "RL", ToAnchor: "other", ToKey: "other:o2"},
		{Type: "RL", ToAnchor: "other", ToKey: "other:o3"},
	}, a.Links)
	b := l.byKey["t:b"]
	require.Equal(t, map[string]any{"id": "b", "n": nil, "x": nil, "b": nil, "d": nil, "c": nil, "r": nil, "rl": nil, "s": ""}, b.Attributes)
	require.Empty(t, b.Links)
	c := l.byKey["t:c"]
	require.Equal(t, int64(-7), c.Attributes["n"])
	require.Equal(t, 1000.0, c.Attributes["x"])
	require.Equal(t, false, c.Attributes["b"])
	require.Equal(t, []any{"x", "y"}, c.Attributes["c"])
	require.Equal(t, []sources.Link{{Type: "R", ToAnchor: "other", ToKey: "other:o2"}, {Type: "RL", ToAnchor: "other", ToKey: "other:o4"}}, c.Links)
}

func TestTypeErrorsSkipRows(t *testing.T) {
	t.Parallel()
	cols := map[string]string{"n": "int", "x": "numeric", "b": "bool", "d": "date", "c": "choicelist"}
	// Line 1 header; line 2 good; line 3-4 one row whose quoted "s" cell spans two lines; then one bad cell per row.
	p := writeCSV(t, "bad.csv", "id,s,n,x,b,d,c\n"+
		"ok,,1,1,true,2024-01-01,a\n"+
		"ml,\"two\nlines\",2,2,false,2024-01-02,b\n"+
		"n1,,01x,,,,\n"+
		"x1,,,NaN,,,\n"+
		"b1,,,,maybe,,\n"+
		"d1,,,,,2024-13-01,\n"+
		"d2,,,,,24-01-01,\n"+
		"c1,,,,,,\"[1]\"\n"+
		",,,,,,\n"+
		"ok,,,,,,\n")
	l := readAll(t, newSource(t, Table{Path: p, Table: "t", Key: "id", Columns: cols}))
	require.NoError(t, l.err)
	require.Len(t, l.records, 3)
	require.Equal(t, "two\nlines", l.byKey["t:ml"].Attributes["s"])
	var got []string
	for _, sk := range l.skipped {
		got = append(got, sk.Key+" | "+sk.Err.Error())
	}
	require.Equal(t, []string{
		`t:n1 | csv table t: ` + p + ` line 5 column "n": value "01x": not an int`,
		`t:x1 | csv table t: ` + p + ` line 6 column "x": value "NaN": not a finite number`,
		`t:b1 | csv table t: ` + p + ` line 7 column "b": value "maybe": not a bool (true/false, 1/0, yes/no)`,
		`t:d1 | csv table t: ` + p + ` line 8 column "d": value "2024-13-01": not a date YYYY-MM-DD`,
		`t:d2 | csv table t: ` + p + ` line 9 column "d": value "24-01-01": not a date YYYY-MM-DD`,
		`t:c1 | csv table t: ` + p + ` line 10 column "c": value "[1]": JSON array item 1 is not a string`,
		`t: | csv table t: ` + p + ` line 11: key column "id" is empty`,
	}, got)
	// A repeated key is yielded with its line; the pipeline keeps the first.
	require.Len(t, l.dups, 1)
	require.Equal(t, p+" line 12", l.dups[0].Where)
	require.Equal(t, p+" line 2", l.byKey["t:ok"].Where)
}

func TestInvalidUTF8Skipped(t *testing.T) {
	t.Parallel()
	p := writeCSV(t, "u.csv", "id,s\na,fine\nb,bad\xff\n")
	l := readAll(t, newSource(t, Table{Path: p, Table: "t", Key: "id"}))
	require.NoError(t, l.err)
	require.Len(t, l.records, 1)
	require.Len(t, l.skipped, 1)
	require.Equal(t, "t:b", l.skipped[0].Key)
	require.ErrorContains(t, l.skipped[0].Err, `line 3 column "s": invalid UTF-8`)
}

func TestRaggedRowsAndGeneratedNames(t *testing.T) {
	t.Parallel()
	p := writeCSV(t, "r.csv", "a,,c\r\n1,2,3,4,,6\r\n5\r\n")
	l := readAll(t, newSource(t, Table{Path: p, Columns: map[string]string{"column_4": "int"}}))
	require.NoError(t, l.err)
	require.Equal(t, map[string]any{"a": "1", "column_2": "2", "c": "3", "column_4": int64(4), "column_6": "6"}, l.byKey["r:1"].Attributes)
	// A short row: missing header cells are empty, generated ones left out.
	require.Equal(t, map[string]any{"a": "5", "c": ""}, l.byKey["r:2"].Attributes)
}

func TestFailedListings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	tests := []struct {
		name  string
		table Table
		want  string
	}{
		{"missing file", Table{Path: filepath.Join(dir, "nope.csv")}, "csv table nope: open: "},
		{"empty file", Table{Path: file("empty.csv", "")}, "empty.csv: empty file, no header row"},
		{"bare quote", Table{Path: file("bare.csv", "a,b\n1,2\n3,x\"y\n")}, `bare.csv: parse error on line 3, column 4: bare " in non-quoted-field`},
		{"truncated in quoted cell", Table{Path: file("trunc.csv", "a,b\n1,2\n3,\"unfinished\ncell")}, `trunc.csv: record on line 3; parse error on line 4, column 5: extraneous or missing " in quoted-field`},
		{"missing key column", Table{Path: file("k.csv", "a,b\n1,2\n"), Key: "id"}, `k.csv: key column "id" is not in the header`},
		{"duplicate header", Table{Path: file("d.csv", "a,b,a\n")}, `d.csv: duplicate header column "a" (columns 1 and 3)`},
		{"generated duplicate", Table{Path: file("g.csv", "a,,column_2\n")}, `g.csv: duplicate header column "column_2" (columns 2 and 3)`},
		{"generated collision", Table{Path: file("gc.csv", "a,column_9\n")}, `gc.csv: header column 2 "column_9" would collide`},
		{"unknown typed column", Table{Path: file("u.csv", "a\n1\n"), Columns: map[string]string{"b": "int"}}, `u.csv: typed column "b" is not in the header`},
		{"unknown skipped column", Table{Path: file("s.csv", "a\n1\n"), Skip: []string{"b"}}, `s.csv: skipped column "b" is not in the header`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// A file that cannot be read is an unlisted part of the
			// listing (its table's stored rows are kept), not a failure
			// of the whole source.
			l := readAll(t, newSource(t, tc.table))
			require.NoError(t, l.err)
			require.Len(t, l.unlisted, 1)
			require.Contains(t, l.unlisted[0].Err.Error(), tc.want)
		})
	}
}

// TestBareQuoteLine pins the line named for a bare quote in an unquoted
// cell: encoding/csv reports it where FieldsPerRecord is not enforced too.
func TestBareQuoteLine(t *testing.T) {
	t.Parallel()
	p := writeCSV(t, "q.csv", "a,b\n1,2\n3,x\"y\n")
	l := readAll(t, newSource(t, Table{Path: p}))
	require.Len(t, l.unlisted, 1)
	err := l.unlisted[0].Err
	var pe *csv.ParseError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, 3, pe.Line)
	require.ErrorIs(t, err, csv.ErrBareQuote)
	require.Contains(t, err.Error(), "q.csv")
	// Records read before the error may have been yielded; the table is
	// reported unlisted, so none of its stored rows is deleted.
}

func TestNewValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no tables", Config{}, "no tables"},
		{"no path", Config{Tables: []Table{{}}}, "tables[0]: path is required"},
		{"bad id", Config{Tables: []Table{{Path: "x.csv", Table: "a-b"}}}, `table id "a-b" must match`},
		{"repeated id", Config{Tables: []Table{{Path: "a/x.csv"}, {Path: "b/x.csv"}}}, `tables[1] (b/x.csv): table id "x" repeats tables[0]`},
		{"unknown type", Config{Tables: []Table{{Path: "x.csv", Columns: map[string]string{"a": "float"}}}}, `column "a": unknown type "float"`},
		{"ref without table", Config{Tables: []Table{{Path: "x.csv", Columns: map[string]string{"a": "ref"}}}}, `type "ref" needs a target table`},
		{"int with target", Config{Tables: []Table{{Path: "x.csv", Columns: map[string]string{"a": "int:x"}}}}, `type "int:x" takes no target table`},
		{"bad delimiter", Config{Tables: []Table{{Path: "x.csv", Delimiter: ";;"}}}, `delimiter ";;" must be one character`},
		{"quote delimiter", Config{Tables: []Table{{Path: "x.csv", Delimiter: `"`}}}, `must be one character other than a quote`},
	}
	for _, tc := range tests {
		_, err := New("s", tc.cfg, nil)
		require.ErrorContains(t, err, tc.want, tc.name)
	}
	s, err := New("", Config{Tables: []Table{{Path: "/d/uk-tariff-headings_guides.csv"}, {Path: "/d/x.y.csv", Table: "Y"}}}, nil)
	require.NoError(t, err)
	require.Equal(t, "csvtable", s.Name())
	require.Equal(t, []string{"uk_tariff_headings_guides", "Y"}, s.Tables())
}

func TestDelimiterAndTables(t *testing.T) {
	t.Parallel()
	a := writeCSV(t, "a.csv", "k;v\nx;1\n")
	b := writeCSV(t, "b.csv", "k,a\n1,x\n")
	l := readAll(t, newSource(t,
		Table{Path: a, Key: "k", Delimiter: ";"},
		Table{Path: b, Key: "k", Columns: map[string]string{"a": "ref:a"}},
	))
	require.NoError(t, l.err)
	require.Equal(t, map[string]any{"k": "x", "v": "1"}, l.byKey["a:x"].Attributes)
	require.Equal(t, []sources.Link{{Type: "A", ToAnchor: "a", ToKey: "a:x"}}, l.byKey["b:1"].Links)
}

func TestStopAndCancel(t *testing.T) {
	t.Parallel()
	p := filepath.Join(tablesDir(t), "harmonized-system.csv")
	src := newSource(t, Table{Path: p, Key: "hscode"})
	pages := 0
	for _, err := range src.Read(t.Context(), "") {
		require.NoError(t, err)
		pages++
		break
	}
	require.Equal(t, 1, pages)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var got error
	for _, err := range src.Read(ctx, "") {
		got = err
	}
	require.ErrorIs(t, got, context.Canceled)
}

func FuzzRead(f *testing.F) {
	f.Add([]byte("id,n,r\n1,2,x\n2,,\"y;z\"\n"))
	f.Add([]byte("\ufeffid,n\r\n1,\"a\nb\"\r\n"))
	f.Add([]byte("id,,n\n1,2,3,4,5\n1,x,\n"))
	f.Add([]byte("id,n\n\"unterminated\n"))
	f.Add([]byte("id,c\na,\"[\"\"x\"\"]\"\n,\n"))
	f.Add([]byte("a\"b,c\n"))
	cfgs := []Table{
		{Path: "fuzz.csv", Table: "t"},
		{Path: "fuzz.csv", Table: "t", Key: "id", Columns: map[string]string{"n": "int", "r": "reflist:t", "c": "choicelist", "column_4": "numeric"}},
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, tc := range cfgs {
			s, err := New("f", Config{Tables: []Table{tc}}, nil, WithPageSize(2))
			require.NoError(t, err)
			p := &pager{size: s.pageSize, page: &sources.Page{}}
			keys := map[string]bool{}
			p.yield = func(pg *sources.Page, err error) bool {
				require.NoError(t, err)
				require.LessOrEqual(t, len(pg.Records)+len(pg.Skipped), 2)
				for _, r := range pg.Records {
					require.True(t, strings.HasPrefix(r.Key, "t:"))
					require.False(t, keys[r.Key], "key %s twice", r.Key)
					keys[r.Key] = true
				}
				for _, sk := range pg.Skipped {
					require.Error(t, sk.Err)
				}
				return true
			}
			_, err = s.tables[0].read(t.Context(), strings.NewReader(string(data)), p, nil)
			if err != nil && errors.Is(err, io.EOF) {
				t.Fatalf("bare EOF leaked: %v", err)
			}
		}
	})
}

func BenchmarkHarmonizedSystem(b *testing.B) {
	p := filepath.Join(tablesDir(b), "harmonized-system.csv")
	src := newSource(b, Table{Path: p, Table: "hs_code", Key: "hscode", Columns: map[string]string{"parent": "ref:hs_code", "level": "int"}})
	b.ReportAllocs()
	rows := 0
	for b.Loop() {
		for pg, err := range src.Read(b.Context(), "") {
			if err != nil {
				b.Fatal(err)
			}
			rows += len(pg.Records)
		}
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}

// TestBadFileBlocksOnlyItsTable: a file with an unterminated quote is
// reported as an unlisted part ("<table>:"), and the table beside it is
// read whole; the listing does not fail.
func TestBadFileBlocksOnlyItsTable(t *testing.T) {
	t.Parallel()
	bad := writeCSV(t, "bad.csv", "id,name\n1,one\n2,\"unterminated\n3,three\n")
	good := writeCSV(t, "good.csv", "id,name\n1,one\n2,two\n")
	s := newSource(t, Table{Path: bad, Table: "bad", Key: "id"}, Table{Path: good, Table: "good", Key: "id"})
	l := readAll(t, s)
	require.NoError(t, l.err)
	require.Contains(t, l.byKey, "good:1")
	require.Contains(t, l.byKey, "good:2")
	unlisted := l.unlisted
	require.Len(t, unlisted, 1)
	require.Equal(t, "bad:", unlisted[0].Prefix)
	require.ErrorContains(t, unlisted[0].Err, "bad.csv")
	require.ErrorContains(t, unlisted[0].Err, `extraneous or missing " in quoted-field`)
}

// TestNotModified: the last page carries the files' hashes and content
// digests; a Read from them parses nothing and says not modified; a file
// re-exported with other line ends, quoting and a byte order mark says not
// modified too, with a cursor holding its new hash (from which a Read parses
// nothing again); a changed cell or row order lists every table again; a
// file that cannot be read leaves no cursor.
func TestNotModified(t *testing.T) {
	t.Parallel()
	a := writeCSV(t, "a.csv", "k,v\n1,x\n2,y\n")
	b := writeCSV(t, "b.csv", "k\nz\n")
	src := newSource(t, Table{Path: a, Key: "k"}, Table{Path: b, Key: "k"})
	l := readAll(t, src)
	require.NoError(t, l.err)
	require.Regexp(t, `^csv2:[0-9a-f]{16}/2/[0-9a-f]{16},[0-9a-f]{16}/1/[0-9a-f]{16}$`, l.cursor)
	notModified := func(cursor string) string {
		t.Helper()
		var errs []error
		for pg, err := range src.Read(t.Context(), cursor) {
			require.Nil(t, pg)
			errs = append(errs, err)
		}
		require.Len(t, errs, 1)
		require.ErrorIs(t, errs[0], sources.ErrNotModified)
		return sources.NotModifiedCursor(errs[0])
	}
	listed := func(cursor string) (int, string) {
		t.Helper()
		n := 0
		var cur string
		for pg, err := range src.Read(t.Context(), cursor) {
			require.NoError(t, err)
			n += len(pg.Records)
			cur = pg.Cursor
		}
		return n, cur
	}
	require.Empty(t, notModified(l.cursor), "the stored cursor stays")

	// The same rows re-exported: CRLF line ends, quotes, a byte order mark.
	require.NoError(t, os.WriteFile(a, []byte("\xEF\xBB\xBF\"k\",v\r\n\"1\",x\r\n2,\"y\"\r\n"), 0o644))
	cur := notModified(l.cursor)
	require.NotEmpty(t, cur)
	require.NotEqual(t, l.cursor, cur)
	require.Equal(t, strings.SplitN(l.cursor, "/", 2)[1], strings.SplitN(cur, "/", 2)[1], "the same content digests")
	require.Empty(t, notModified(cur))

	// The old cursor form (hashes only) is not modified while the bytes are
	// the same, and lists everything once they change.
	hashes := src.fileHashes()
	old := "csv1:" + strings.Join(hashes, ",")
	require.Empty(t, notModified(old))

	// A changed cell, or the same rows in another order: every table again.
	require.NoError(t, os.WriteFile(a, []byte("k,v\n1,x\n2,Y\n"), 0o644))
	n, cur2 := listed(cur)
	require.Equal(t, 3, n)
	require.NotEqual(t, cur, cur2)
	require.NoError(t, os.WriteFile(a, []byte("k,v\n2,Y\n1,x\n"), 0o644))
	n, cur3 := listed(cur2)
	require.Equal(t, 3, n)
	require.NotEqual(t, cur2, cur3)
	n, _ = listed(old)
	require.Equal(t, 3, n)

	require.NoError(t, os.WriteFile(b, []byte("k\n\"z\n"), 0o644)) // an unterminated quote
	for pg, err := range src.Read(t.Context(), cur3) {
		require.NoError(t, err)
		require.Empty(t, pg.Cursor)
	}
}

// TestNotModifiedBlocks: a table of several digest blocks is not modified
// when re-exported, and listed when any block changes, when a row is added
// right after a full block, or when the last row goes.
func TestNotModifiedBlocks(t *testing.T) {
	t.Parallel()
	rows := func(n int, edit int, crlf bool) []byte {
		nl := "\n"
		if crlf {
			nl = "\r\n"
		}
		var b strings.Builder
		b.WriteString("k,v" + nl)
		for i := range n {
			v := "v" + strconv.Itoa(i)
			if i == edit {
				v = "edited"
			}
			fmt.Fprintf(&b, "%d,%s%s", i, v, nl)
		}
		return []byte(b.String())
	}
	const n = 2*digestRows + 10
	path := writeCSV(t, "big.csv", string(rows(n, -1, false)))
	src := newSource(t, Table{Path: path, Key: "k"})
	l := readAll(t, src)
	require.NoError(t, l.err)
	count := func(cursor string) (records int, notModified bool) {
		for pg, err := range src.Read(t.Context(), cursor) {
			if errors.Is(err, sources.ErrNotModified) {
				return 0, true
			}
			require.NoError(t, err)
			records += len(pg.Records)
		}
		return records, false
	}
	for _, c := range []struct {
		name string
		data []byte
		want int // records listed; 0 = not modified
	}{
		{"re-exported", rows(n, -1, true), 0},
		{"first block edited", rows(n, 5, false), n},
		{"second block edited", rows(n, digestRows+5, true), n},
		{"last partial block edited", rows(n, n-1, false), n},
		{"last row gone", rows(n-1, -1, false), n - 1},
		{"a row after two full blocks", rows(2*digestRows+1, -1, false), 2*digestRows + 1},
	} {
		require.NoError(t, os.WriteFile(path, c.data, 0o644))
		got, nm := count(l.cursor)
		require.Equal(t, c.want == 0, nm, c.name)
		require.Equal(t, c.want, got, c.name)
	}
	// Exactly two full blocks against a cursor of two full blocks and ten rows.
	require.NoError(t, os.WriteFile(path, rows(2*digestRows, -1, false), 0o644))
	got, nm := count(l.cursor)
	require.False(t, nm)
	require.Equal(t, 2*digestRows, got)
}

// TestClearedKeyHoldsDeletions: a row whose key cell was cleared but whose
// other cells remain may be any stored row, so it holds its table's
// deletions (Unlisted "<table>:", naming the line) while the other rows
// are read; a blank row is no record and is only skipped.
func TestClearedKeyHoldsDeletions(t *testing.T) {
	t.Parallel()
	p := writeCSV(t, "t.csv", "id,name\n1,one\n,two\n3,three\n , \n")
	l := readAll(t, newSource(t, Table{Path: p, Table: "t", Key: "id"}))
	require.NoError(t, l.err)
	require.Len(t, l.records, 2)
	require.Contains(t, l.byKey, "t:1")
	require.Contains(t, l.byKey, "t:3")
	unlisted := l.unlisted
	require.Len(t, unlisted, 1)
	require.Equal(t, "t:", unlisted[0].Prefix)
	require.EqualError(t, unlisted[0].Err, `csv table t: `+p+` line 3: key column "id" is empty`)
	require.Len(t, l.skipped, 1, "the blank row")
	require.ErrorContains(t, l.skipped[0].Err, "line 5")
}
