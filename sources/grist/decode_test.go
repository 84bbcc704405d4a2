package grist

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/internal/corpus"
)

// sharedDir returns <shared>/<rel> (internal/corpus).
func sharedDir(t testing.TB, rel string) string {
	t.Helper()
	return filepath.Join(corpus.Shared(t), rel)
}

func loadJSON(t *testing.T, path string, out any) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	dec := json.NewDecoder(bytesReader(b))
	dec.UseNumber()
	require.NoError(t, dec.Decode(out))
}

func realColumns(t *testing.T, path string) []column {
	var cl struct {
		Columns []struct {
			ID     string
			Fields struct {
				ColRef    int64
				Type      string
				IsFormula bool
				ParentPos json.Number
			}
		}
	}
	loadJSON(t, path, &cl)
	var cols []column
	for _, c := range cl.Columns {
		if hiddenColumn(c.ID, c.Fields.Type) {
			continue
		}
		pos, _ := c.Fields.ParentPos.Float64()
		cols = append(cols, newColumn(c.ID, c.Fields.Type, c.Fields.IsFormula, pos, c.Fields.ColRef))
	}
	return cols
}

// TestRealCapturesSQLEqualsRecords decodes the same rows captured from a
// real server through /records and through /sql and requires identical
// attributes: Bool 0/1, JSON-text lists, epoch dates and marshal Buffers
// (errors, Any values) must all land on the same canonical values.
func TestRealCapturesSQLEqualsRecords(t *testing.T) {
	real := sharedDir(t, "docs/grist-samples/real")
	cases := []struct {
		columns, records, sql string
		rows                  int
	}{
		{"read/get-columns-Guides.json", "read/get-records-Guides.json", "read/get-sql-Guides-select-star.json", 19},
		{"read/get-columns-HSCodes.json", "read/get-records-HSCodes-limit50.json", "read/post-sql-HSCodes-page1.json", 50},
		{"read/get-columns-FAQ.json", "read/get-records-FAQ.json", "read/get-sql-FAQ-limit2.json", 2},
	}
	for _, tc := range cases {
		t.Run(tc.records, func(t *testing.T) {
			cols := realColumns(t, filepath.Join(real, tc.columns))
			require.NotEmpty(t, cols)
			var recs struct {
				Records []struct {
					ID     int64
					Fields map[string]any
					Errors map[string]string
				}
			}
			loadJSON(t, filepath.Join(real, tc.records), &recs)
			var sq struct {
				Records []struct{ Fields map[string]any }
			}
			loadJSON(t, filepath.Join(real, tc.sql), &sq)
			byID := map[int64]map[string]any{}
			for _, r := range recs.Records {
				byID[r.ID] = recordsAttrs(cols, r.Fields, r.Errors)
			}
			n := 0
			for _, r := range sq.Records {
				id := normJSON(r.Fields["id"]).(int64)
				want, ok := byID[id]
				if !ok {
					continue
				}
				got := map[string]any{}
				for i := range cols {
					v, err := decodeSQLCell(&cols[i], r.Fields[cols[i].ID])
					require.NoError(t, err)
					got[cols[i].ID] = v
				}
				require.Equal(t, want, got, "row %d", id)
				n++
			}
			require.Equal(t, tc.rows, n)
		})
	}
}

// TestDecodeGuidesRow1 checks the canonical values against the capture's
// documented meaning (grist-samples/real/README.md, Guides table).
func TestDecodeGuidesRow1(t *testing.T) {
	real := sharedDir(t, "docs/grist-samples/real")
	cols := realColumns(t, filepath.Join(real, "read/get-columns-Guides.json"))
	var recs struct {
		Records []struct {
			ID     int64
			Fields map[string]any
			Errors map[string]string
		}
	}
	loadJSON(t, filepath.Join(real, "read/get-records-Guides.json"), &recs)
	r1 := recordsAttrs(cols, recs.Records[0].Fields, recs.Records[0].Errors)
	// 1772409600 s = 2026-03-02 00:00 UTC; 1772445600.5 s = 10:00:00.5 UTC.
	require.Equal(t, "2026-03-02", r1["Reviewed"])
	require.Equal(t, "2026-03-02T10:00:00.5Z", r1["CheckedAt"])
	require.Equal(t, true, r1["active"])
	require.Equal(t, int64(1), r1["guide_id"])
	require.Equal(t, 4.5, r1["Score"])
	require.Equal(t, []any{"machinery", "goods"}, r1["Tags"])
	require.Equal(t, []any{int64(1), int64(2)}, r1["Files"])
	require.Equal(t, []any{"Drones and aircraft parts", int64(1)}, r1["AnyProbe"])
	r2 := recordsAttrs(cols, recs.Records[1].Fields, recs.Records[1].Errors)
	// guide_id 3 is divisible by 3: Ratio raises ZeroDivisionError.
	require.Equal(t, map[string]any{"error": "ZeroDivisionError"}, r2["Ratio"])
	require.Equal(t, map[string]any{"table": "Guides", "id": int64(1)}, r2["AnyProbe"])
	require.Nil(t, r2["Files"])
	// Column order follows parentPos, not the array order.
	for i := 1; i < len(cols); i++ {
		require.Less(t, cols[i-1].ParentPos, cols[i].ParentPos)
	}
}

func TestUnmarshalPython(t *testing.T) {
	// Bytes of ['E','ZeroDivisionError'] from get-sql-Guides-select-star.json.
	b := []byte{91, 2, 0, 0, 0, 117, 1, 0, 0, 0, 69, 117, 17, 0, 0, 0, 90, 101, 114, 111, 68, 105, 118, 105, 115, 105, 111, 110, 69, 114, 114, 111, 114}
	v, err := unmarshalPython(b)
	require.NoError(t, err)
	require.Equal(t, []any{"E", "ZeroDivisionError"}, v)
	_, err = unmarshalPython(b[:10])
	require.Error(t, err)
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// TestUnmarshalPythonBackReferences decodes values whose later elements are
// back references ('r') into the refs table. CPython's marshal (r_object in
// Python/marshal.c) reserves one refs slot per flagged object: a tuple,
// small tuple, set or frozenset takes its slot after its length, like a list
// or dict, so an index in 'r' counts each container once. The bytes are
// Python 3.11's marshal.dumps of each value.
func TestUnmarshalPythonBackReferences(t *testing.T) {
	for _, tc := range []struct {
		hex  string
		want any
	}{
		{"a902da0261627201000000", []any{"ab", "ab"}},                                // ('ab', 'ab')
		{"db02000000da0261627201000000", []any{"ab", "ab"}},                          // ['ab', 'ab']
		{"a902a902da0178da01797202000000", []any{[]any{"x", "y"}, "x"}},              // (('x', 'y'), 'x')
		{"fbda016ba902da026162720300000030", map[string]any{"k": []any{"ab", "ab"}}}, // {'k': ('ab', 'ab')}
		{"be01000000da026162", []any{"ab"}},                                          // frozenset({'ab'})
	} {
		b, err := hex.DecodeString(tc.hex)
		require.NoError(t, err)
		v, err := unmarshalPython(b)
		require.NoError(t, err, tc.hex)
		require.Equal(t, tc.want, v, tc.hex)
	}
}

// TestUnmarshalPythonBounds: nested lists that each claim a long length
// allocate no more than the input holds (each level used to allocate the
// claimed length up front: 10 KB of input took 328 MB), nesting deeper
// than CPython's MAX_MARSHAL_STACK_DEPTH (2000, Python/marshal.c r_object)
// is refused as CPython refuses it, and so are a long's out-of-range or
// zero top digit (r_PyLong).
func TestUnmarshalPythonBounds(t *testing.T) {
	levels := 1999
	n := 5*levels + 1
	var b bytes.Buffer
	for range levels {
		b.Write([]byte{'[', byte(n), byte(n >> 8), byte(n >> 16), 0})
	}
	b.WriteByte('N')
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	_, err := unmarshalPython(b.Bytes())
	runtime.ReadMemStats(&m1)
	require.Error(t, err) // every list is one element short
	require.Less(t, m1.TotalAlloc-m0.TotalAlloc, uint64(64*b.Len()), "allocated for %d bytes of input", b.Len())

	nested := func(depth int) []byte {
		return append(bytes.Repeat([]byte{')', 1}, depth-1), 'N')
	}
	v, err := unmarshalPython(nested(2000))
	require.NoError(t, err)
	require.NotNil(t, v)
	_, err = unmarshalPython(nested(2001))
	require.ErrorContains(t, err, "nested deeper than 2000")

	for _, bad := range [][]byte{
		{'l', 1, 0, 0, 0, 0x00, 0x80},             // digit 2**15
		{'l', 2, 0, 0, 0, 0x01, 0x00, 0x00, 0x00}, // zero top digit
	} {
		_, err := unmarshalPython(bad)
		require.Error(t, err, "%x", bad)
	}
	v, err = unmarshalPython([]byte{'l', 0xfe, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x01, 0x00})
	require.NoError(t, err)
	require.Equal(t, int64(-(1<<15 + 0x7fff)), v)
}
