package gristtest

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
)

// marshalPython encodes v the way Python's marshal (version 2+) does, for
// the values Grist stores as blobs: None, bools, ints, floats, str, lists
// and dicts. The /sql endpoint returns these bytes as a Node Buffer
// (grist-samples/real/read/get-sql-Guides-select-star.json).
func marshalPython(v any) []byte {
	var b []byte
	var enc func(v any)
	u32 := func(n uint32) { b = binary.LittleEndian.AppendUint32(b, n) }
	enc = func(v any) {
		switch x := v.(type) {
		case nil:
			b = append(b, 'N')
		case bool:
			if x {
				b = append(b, 'T')
			} else {
				b = append(b, 'F')
			}
		case int:
			enc(int64(x))
		case int64:
			if x >= math.MinInt32 && x <= math.MaxInt32 {
				b = append(b, 'i')
				u32(uint32(int32(x)))
				return
			}
			// 'l': signed digit count, base 2^15 digits little-endian.
			neg := x < 0
			ux := uint64(x)
			if neg {
				ux = uint64(-x)
			}
			var digits []uint16
			for ux > 0 {
				digits = append(digits, uint16(ux&0x7fff))
				ux >>= 15
			}
			n := int32(len(digits))
			if neg {
				n = -n
			}
			b = append(b, 'l')
			u32(uint32(n))
			for _, d := range digits {
				b = binary.LittleEndian.AppendUint16(b, d)
			}
		case float64:
			b = append(b, 'g')
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
		case string:
			b = append(b, 'u')
			u32(uint32(len(x)))
			b = append(b, x...)
		case []any:
			b = append(b, '[')
			u32(uint32(len(x)))
			for _, e := range x {
				enc(e)
			}
		case map[string]any:
			b = append(b, '{')
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				enc(k)
				enc(x[k])
			}
			b = append(b, '0')
		default:
			panic(fmt.Sprintf("gristtest: cannot marshal %T", v))
		}
	}
	enc(v)
	return b
}

// buffer is the JSON shape of a Node Buffer.
func buffer(b []byte) map[string]any {
	data := make([]int, len(b))
	for i, c := range b {
		data[i] = int(c)
	}
	return map[string]any{"type": "Buffer", "data": data}
}
