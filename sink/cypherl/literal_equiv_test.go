package cypherl

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/sink"
)

// literalValues are values of every type Literal takes, the errors it
// reports, and maps that share, and do not share, key sets of one size
// (literalWriter keeps the last key order of each size).
func literalValues() []any {
	floats := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, float64(float32(0.1)), 2.5, 1e21, 1e20, 1e-7, 1e-5,
		123456789, 1.5e300, -2.5e-300, math.MaxFloat64, math.SmallestNonzeroFloat64, math.MaxFloat32,
		float64(math.SmallestNonzeroFloat32), 100, 1e6}
	var vals []any
	for _, f := range floats {
		vals = append(vals, f, float32(f), []float64{f, f, -f, 0, f}, []float32{float32(f), 0, float32(f)})
	}
	for _, s := range nastyStrings {
		vals = append(vals, s, []string{s, s}, map[string]any{"s": s}, []any{s, int64(1)})
	}
	vals = append(vals,
		nil, true, false, 7, int32(-7), int64(math.MaxInt64), int64(math.MinInt64), []int64{math.MinInt64, 0, 3},
		math.NaN(), math.Inf(1), []float64{1, 2, math.NaN()}, []float32{float32(math.Inf(-1))},
		[]float32{0.25, 0.25, -0.25, 0.5, 0.25, 0.75, 1, 0.25, 0.5, 2, 3, 0.25},
		"bad \xff utf-8", []string{"ok", "\xc3"}, complex(1, 2), []any{1, complex(1, 2)}, struct{}{},
		map[string]any{}, map[string]any(nil), []map[string]any{{"a": int64(1)}, {"a": int64(2)}, {"b": nil}},
	)
	// Maps of two keys: the same key set repeated, another set, a missing
	// key, a nested map of the same size, an invalid key, a bad value.
	two := []map[string]any{
		{"id": "a", "props": map[string]any{"x": int64(1), "y": "é"}},
		{"id": "b", "props": map[string]any{"y": 2.5, "x": nil}},
		{"from": "a", "to": "b"},
		{"id": "c", "to": "d"},
		{"id": "d", "props": map[string]any{"id": "inner", "props": map[string]any{"k": int64(1), "l": []float32{1}}}},
		{"id": "e", "props": map[string]any{"x": math.NaN(), "y": "after"}},
		{"id": "f", "props": map[string]any{"x;": 1, "y": 2}},
		{"id": "g", "props": map[string]any{"x": 1, "y": 2}},
		{"a`b": "tick", "c": "d"},
		{"a`b": "tick", "c": "e"},
		{"line\nbreak": 1, "c": 2},
		{"id": "\xff", "props": map[string]any{}},
	}
	for _, m := range two {
		vals = append(vals, m)
	}
	vals = append(vals, []any{two[0], two[1], two[2], two[0], two[4], two[6], two[7]})
	big := map[string]any{}
	huge := map[string]any{}
	for i := range 40 {
		k := strings.Repeat("k", i+1)
		if i < 20 {
			big[k] = int64(i)
		}
		huge[k] = float64(i) / 3
	}
	return append(vals, big, big, huge, huge, []any{big, huge, big})
}

// TestLiteralMatchesReference: Literal writes what the literal writer
// before kept key orders, copied repeated floats and scanned strings by
// byte wrote, value for value and error for error, with one writer
// reused across all the values (as render reuses one for a batch).
func TestLiteralMatchesReference(t *testing.T) {
	t.Parallel()
	var w literalWriter
	for i, v := range literalValues() {
		want, wantErr := refAppendLiteral([]byte("prefix "), v)
		got, gotErr := w.appendLiteral([]byte("prefix "), v)
		require.Equal(t, string(want), string(got), "value %d: %#v", i, v)
		if wantErr == nil {
			require.NoError(t, gotErr, "value %d: %#v", i, v)
		} else {
			require.EqualError(t, gotErr, wantErr.Error(), "value %d: %#v", i, v)
		}
	}
}

// TestRenderRowsMatchesReference: the statements of a batch of table rows
// render the same parameters as the reference writes them.
func TestRenderRowsMatchesReference(t *testing.T) {
	t.Parallel()
	sts, err := sink.Statements(sink.Memgraph, rowBatch(t, 300, 32), sink.Options{Pipeline: "tables", RowsPerStatement: 100})
	require.NoError(t, err)
	var w literalWriter
	for _, st := range sts {
		want, err := refAppendLiteral(nil, st.Params["rows"])
		require.NoError(t, err)
		got, err := w.appendLiteral(nil, st.Params["rows"])
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), st.Target)
	}
}

func FuzzLiteral(f *testing.F) {
	for _, s := range nastyStrings {
		f.Add(s, uint64(0), math.Float64bits(0.1))
	}
	f.Add("k`ey", math.Float64bits(math.NaN()), math.Float64bits(1e21))
	f.Add("\xff", math.Float64bits(-0.0), math.Float64bits(5e-324))
	f.Fuzz(func(t *testing.T, s string, a, b uint64) {
		fa, fb := math.Float64frombits(a), math.Float64frombits(b)
		vals := []any{
			s, fa, float32(fa), []float64{fa, fb, fa, fb}, []float32{float32(fa), float32(fb), float32(fa)},
			map[string]any{s: fa, "k": s}, map[string]any{"k": s, s: fb},
			[]any{map[string]any{"id": s, "props": map[string]any{"v": []float64{fb, fa}}}},
		}
		var w literalWriter
		for _, v := range vals {
			want, wantErr := refAppendLiteral(nil, v)
			got, gotErr := w.appendLiteral(nil, v)
			if string(want) != string(got) || (wantErr == nil) != (gotErr == nil) ||
				wantErr != nil && wantErr.Error() != gotErr.Error() {
				t.Fatalf("%#v: got %q, %v; want %q, %v", v, got, gotErr, want, wantErr)
			}
		}
	})
}

// inlineBatches are batches of every value type Statements takes, nil and
// empty property maps and keep lists, and batches Statements refuses.
func inlineBatches(t *testing.T) []*sink.Batch {
	ref := func(l, id string) sink.NodeRef { return sink.NodeRef{Label: l, ID: id} }
	bs := []*sink.Batch{goldenBatch(), rowBatch(t, 50, 8), {
		NodeUpserts: []sink.NodeUpsert{
			{Label: "Doc", ID: "nil props"},
			{Label: "Doc", ID: "empty", Props: map[string]any{}},
			{Label: "Doc", ID: "types", Props: map[string]any{"i": 7, "i32": int32(-3), "f32": float32(0.1), "f": 1e21,
				"z": math.Copysign(0, -1), "l": []any{float32(2.5), 3, "x", nil, []any{int32(1)}}, "m": map[string]any{"k": []float32{1, 0.1}},
				"s": []string{"a", "é"}, "n": []int64{1, math.MinInt64}, "v": []float64{0.1, 0.1, 1e-7}, "ru": "Лошади, ослы"}},
		},
		EdgeUpserts: []sink.EdgeUpsert{
			{Type: "T", From: ref("Doc", "a"), To: ref("Doc", "b")},
			{Type: "T", From: ref("Doc", "a"), To: ref("Doc", "c"), Props: map[string]any{}},
			{Type: "T", From: ref("Doc", "a"), To: ref("Doc", "d"), Props: map[string]any{"w": float32(0.5)}, Key: "k1"},
		},
		EdgePrunes: []sink.EdgePrune{
			{Type: "T", From: ref("Doc", "a"), ToLabel: "Doc"},
			{Type: "T", From: ref("Doc", "b"), ToLabel: "Doc", Keep: []string{}},
			{Type: "T", From: ref("Doc", "c"), ToLabel: "Doc", Keep: []string{"x", "y"}},
		},
	}}
	for _, props := range []map[string]any{
		{"b;": 1, "a;": 2, "c": math.NaN()},
		{"ok": 1, "c": math.NaN(), "d": []float32{float32(math.Inf(1))}},
		{"x": complex(1, 2), "w": []any{1, struct{}{}}},
		{"m": map[string]any{"z": 1, "y;": 2, "x": math.NaN()}},
		{"m": map[string]any{"k": []map[string]any{}}},
		{"m": map[string]any{"k": "v"}}, // refused by Neo4j only
	} {
		bs = append(bs, &sink.Batch{NodeUpserts: []sink.NodeUpsert{{Label: "Doc", ID: "good"}, {Label: "Doc", ID: "bad", Props: props}}},
			&sink.Batch{EdgeUpserts: []sink.EdgeUpsert{{Type: "T", From: ref("Doc", "a"), To: ref("Doc", "b"), Props: props}}})
	}
	return bs
}

// TestInlineStatementsRender: the statements the sink renders
// (sink.Options.Inline: the batch's own property maps) render the same
// lines as the statements a driver gets (copied, normalised values), but
// for float32 values, which the driver gets widened to float64 and the
// sink writes with the fewest digits that read back as the same float32
// (sameRender); a batch either refuses fails with the same error, in both
// dialects.
func TestInlineStatementsRender(t *testing.T) {
	t.Parallel()
	narrowed := 0
	for _, d := range []sink.Dialect{sink.Memgraph, sink.Neo4j} {
		for i, b := range inlineBatches(t) {
			for range 5 { // map order varies from run to run
				o := sink.Options{Pipeline: "docs", RowsPerStatement: 20}
				driver, derr := sink.Statements(d, b, o)
				o.Inline = true
				inline, ierr := sink.Statements(d, b, o)
				if derr != nil {
					require.EqualError(t, ierr, derr.Error(), "%s batch %d", d.Name(), i)
					continue
				}
				require.NoError(t, ierr, "%s batch %d", d.Name(), i)
				want, err := render(nil, driver)
				require.NoError(t, err)
				got, err := render(nil, inline)
				require.NoError(t, err)
				narrowed += sameRender(t, string(want), string(got), fmt.Sprintf("%s batch %d", d.Name(), i))
			}
		}
	}
	require.Positive(t, narrowed, "the batches hold float32 values written shorter than their float64s")
}

// numberToken matches the numbers of a rendered statement (and digits
// inside names and strings, which both sides write alike).
var numberToken = regexp.MustCompile(`-?[0-9][0-9.]*(e-?[0-9]+)?`)

// sameRender requires got to be want but for numbers where want writes a
// float64 that is exactly a float32 (a widened float32) and got writes a
// number that reads back as that float32, and returns how many such
// numbers it found.
func sameRender(t *testing.T, want, got, msg string) int {
	t.Helper()
	wi, gi := numberToken.FindAllStringIndex(want, -1), numberToken.FindAllStringIndex(got, -1)
	require.Len(t, gi, len(wi), "%s: numbers\nwant %s\ngot  %s", msg, want, got)
	wp, gp, narrowed := 0, 0, 0
	for k := range wi {
		require.Equal(t, want[wp:wi[k][0]], got[gp:gi[k][0]], "%s: text before number %d", msg, k)
		w, g := want[wi[k][0]:wi[k][1]], got[gi[k][0]:gi[k][1]]
		if w != g {
			wf, err := strconv.ParseFloat(w, 64)
			require.NoError(t, err, "%s: %q", msg, w)
			gf, err := strconv.ParseFloat(g, 64)
			require.NoError(t, err, "%s: %q", msg, g)
			require.Equal(t, wf, float64(float32(wf)), "%s: %s and %s differ, and %s is no float32", msg, w, g, w)
			require.Equal(t, float32(wf), float32(gf), "%s: %s does not read back as the float32 %s", msg, g, w)
			require.Less(t, len(g), len(w), "%s: %s is not shorter than %s", msg, g, w)
			narrowed++
		}
		wp, gp = wi[k][1], gi[k][1]
	}
	require.Equal(t, want[wp:], got[gp:], msg)
	return narrowed
}
