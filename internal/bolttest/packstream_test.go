package bolttest

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEncodeSpecExamples checks encodings against the byte examples of the
// PackStream specification (neo4j-drivers.github.io, packstream/).
func TestEncodeSpecExamples(t *testing.T) {
	cases := []struct {
		name string
		v    any
		want []byte
	}{
		{"null", nil, []byte{0xC0}},
		{"true", true, []byte{0xC3}},
		{"false", false, []byte{0xC2}},
		{"tiny int 1", int64(1), []byte{0x01}},
		{"tiny int 127", int64(127), []byte{0x7F}},
		{"tiny int -16", int64(-16), []byte{0xF0}},
		{"int8 -17", int64(-17), []byte{0xC8, 0xEF}},
		{"int8 -128", int64(-128), []byte{0xC8, 0x80}},
		{"int16 128", int64(128), []byte{0xC9, 0x00, 0x80}},
		{"int16 -129", int64(-129), []byte{0xC9, 0xFF, 0x7F}},
		{"int32 32768", int64(32768), []byte{0xCA, 0x00, 0x00, 0x80, 0x00}},
		{"int64 2^31", int64(1) << 31, []byte{0xCB, 0, 0, 0, 0, 0x80, 0, 0, 0}},
		{"int64 max", int64(math.MaxInt64), []byte{0xCB, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}},
		{"float 1.1", 1.1, []byte{0xC1, 0x3F, 0xF1, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9A}},
		{"float -1.1", -1.1, []byte{0xC1, 0xBF, 0xF1, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9A}},
		{"empty string", "", []byte{0x80}},
		{"string A", "A", []byte{0x81, 0x41}},
		{"string 16 bytes", "ABCDEFGHIJKLMNOP", append([]byte{0xD0, 0x10}, "ABCDEFGHIJKLMNOP"...)},
		{"string utf8", "Größenmaßstäbe", append([]byte{0xD0, 0x12}, "Größenmaßstäbe"...)},
		{"bytes", []byte{1, 2, 3}, []byte{0xCC, 0x03, 1, 2, 3}},
		{"list", []any{int64(1), int64(2), int64(3)}, []byte{0x93, 0x01, 0x02, 0x03}},
		{"map", map[string]any{"one": "eins"}, []byte{0xA1, 0x83, 'o', 'n', 'e', 0x84, 'e', 'i', 'n', 's'}},
		{"struct", Struct{Tag: 'X', Fields: []any{int64(7203)}}, []byte{0xB1, 'X', 0xC9, 0x1C, 0x23}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var e encoder
			require.NoError(t, e.value(tc.v))
			require.Equal(t, tc.want, e.buf)
			d := decoder{buf: e.buf}
			got, err := d.value(0)
			require.NoError(t, err)
			require.Equal(t, tc.v, got)
			require.Equal(t, len(e.buf), d.pos)
		})
	}
}

// TestSizeMarkers round-trips strings, bytes, lists and maps across every
// size-marker boundary (tiny/8/16/32-bit lengths) and checks the marker.
func TestSizeMarkers(t *testing.T) {
	for _, n := range []int{0, 15, 16, 255, 256, 65535, 65536} {
		s := strings.Repeat("x", n)
		b := []byte(s)
		l := make([]any, n)
		m := make(map[string]any, n)
		for i := range l {
			l[i] = int64(i % 100)
			m[fmt.Sprintf("k%d", i)] = nil
		}
		wantStr, wantBytes, wantList, wantMap := byte(0x80|n), byte(0xCC), byte(0x90|n), byte(0xA0|n)
		switch {
		case n >= 65536:
			wantStr, wantBytes, wantList, wantMap = 0xD2, 0xCE, 0xD6, 0xDA
		case n >= 256:
			wantStr, wantBytes, wantList, wantMap = 0xD1, 0xCD, 0xD5, 0xD9
		case n >= 16:
			wantStr, wantList, wantMap = 0xD0, 0xD4, 0xD8
		}
		for _, c := range []struct {
			v    any
			mark byte
		}{{s, wantStr}, {b, wantBytes}, {l, wantList}, {m, wantMap}} {
			var e encoder
			require.NoError(t, e.value(c.v))
			require.Equal(t, c.mark, e.buf[0], "n=%d %T", n, c.v)
			d := decoder{buf: e.buf}
			got, err := d.value(0)
			require.NoError(t, err)
			require.Equal(t, c.v, got, "n=%d %T", n, c.v)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	for name, buf := range map[string][]byte{
		"empty":            {},
		"short int16":      {0xC9, 0x01},
		"string too long":  {0x85, 'a'},
		"list too long":    {0xD4, 0xFF, 0x01},
		"non-string key":   {0xA1, 0x01, 0x01},
		"unknown marker":   {0xC4},
		"huge string32":    {0xD2, 0xFF, 0xFF, 0xFF, 0xFF},
		"struct truncated": {0xB2, 'X', 0x01},
	} {
		d := decoder{buf: buf}
		_, err := d.value(0)
		require.Error(t, err, name)
	}
	deep := append([]byte(strings.Repeat("\x91", maxDepth+2)), 0xC0)
	d := decoder{buf: deep}
	_, err := d.value(0)
	require.ErrorContains(t, err, "nesting")
}

func TestEncodeReflect(t *testing.T) {
	var e encoder
	require.NoError(t, e.value(map[string]any{
		"f":  []float64{0.5},
		"s":  []string{"a"},
		"m":  []map[string]any{{"k": int32(1)}},
		"mm": map[string]string{"x": "y"},
		"u":  uint16(9),
		"f4": float32(0.25),
	}))
	d := decoder{buf: e.buf}
	got, err := d.value(0)
	require.NoError(t, err)
	require.Equal(t, map[string]any{
		"f":  []any{0.5},
		"s":  []any{"a"},
		"m":  []any{map[string]any{"k": int64(1)}},
		"mm": map[string]any{"x": "y"},
		"u":  int64(9),
		"f4": 0.25,
	}, got)
	require.Error(t, e.value(map[int]string{1: "a"}))
	require.Error(t, e.value(uint64(math.MaxUint64)))
	require.Error(t, e.value(make(chan int)))
}
