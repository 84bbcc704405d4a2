package grist

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/diff"
)

// canonical checks that v holds only the value types records carry, which
// the record hash can encode.
func canonical(t *testing.T, v any) {
	t.Helper()
	_, err := diff.Hash(map[string]any{"v": v})
	require.NoError(t, err, "%#v", v)
}

// FuzzMarshal feeds arbitrary bytes to the Python marshal decoder (the /sql
// endpoint's Buffer cells): it never panics or allocates beyond the input,
// and what it decodes is a canonical value once decodeCanonical has made
// non-finite floats strings (finite).
func FuzzMarshal(f *testing.F) {
	for _, b := range [][]byte{
		{'N'}, {'T'}, {'F'}, {'i', 1, 0, 0, 0}, {'g', 0, 0, 0, 0, 0, 0, 0xf0, 0x3f},
		{'l', 2, 0, 0, 0, 0xff, 0x7f, 1, 0}, {'l', 0, 0, 0, 0x80}, {'l', 0xff, 0xff, 0xff, 0x7f},
		{'[', 2, 0, 0, 0, 'N', 'T'}, {')', 1, 'z', 1, 'x'}, {'{', 'z', 1, 'k', 'i', 2, 0, 0, 0, '0'},
		{0xdb, 1, 0, 0, 0, 'r', 0, 0, 0, 0}, {'r', 0, 0, 0, 0}, {'u', 3, 0, 0, 0, 'a', 'b', 'c'},
		{'f', 3, '1', '.', '5'}, {'[', 0xff, 0xff, 0xff, 0xff},
	} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := unmarshalPython(b)
		if err != nil {
			return
		}
		canonical(t, finite(v))
	})
}

// FuzzDecodeCell feeds a column type and a JSON cell value to both cell
// decoders (/records and /sql): neither panics, and both return canonical
// values.
func FuzzDecodeCell(f *testing.F) {
	for _, s := range [][2]string{
		{"Text", `"hello"`}, {"Numeric", `1.5`}, {"Int", `42`}, {"Bool", `1`}, {"Bool", `true`},
		{"Date", `1700000000`}, {"DateTime:Europe/London", `1700000000.5`}, {"Ref:HSCodes", `17`},
		{"RefList:HSCodes", `["L",1,2]`}, {"RefList:HSCodes", `"[1,2]"`}, {"ChoiceList", `["L","a","b"]`},
		{"Any", `["E","ZeroDivisionError"]`}, {"Any", `{"type":"Buffer","data":[78]}`},
		{"Attachments", `["L",3]`}, {"Choice", `null`}, {"Numeric", `1e309`}, {"Int", `9223372036854775808`},
		{"Any", `["O",{"a":1}]`}, {"Any", `["D",1700000000,"UTC"]`}, {"Any", `["R","T",5]`},
	} {
		f.Add(s[0], []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, typ string, cell []byte) {
		decodeJSON := func() (any, bool) {
			dec := json.NewDecoder(bytes.NewReader(cell))
			dec.UseNumber()
			var v any
			return v, dec.Decode(&v) == nil
		}
		c := newColumn("c", typ, false, 0, 1)
		v, ok := decodeJSON()
		if !ok {
			return
		}
		canonical(t, decodeRecordsCell(&c, v))
		v, _ = decodeJSON()
		if out, err := decodeSQLCell(&c, v); err == nil {
			canonical(t, out)
		}
	})
}
