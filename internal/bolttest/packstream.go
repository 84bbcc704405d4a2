package bolttest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
)

// Struct is a PackStream structure other than a Bolt message, kept as it
// arrived (for example a Point2D with Tag 'X' or a DateTime with Tag 'I' in
// query parameters). Fields hold decoded values.
type Struct struct {
	Tag    byte
	Fields []any
}

// PackStream markers, from the PackStream specification
// (neo4j-drivers.github.io, packstream/).
const (
	markNull    = 0xC0
	markFloat   = 0xC1
	markFalse   = 0xC2
	markTrue    = 0xC3
	markInt8    = 0xC8
	markInt16   = 0xC9
	markInt32   = 0xCA
	markInt64   = 0xCB
	markBytes8  = 0xCC
	markBytes16 = 0xCD
	markBytes32 = 0xCE
	markString8 = 0xD0
	markStr16   = 0xD1
	markStr32   = 0xD2
	markList8   = 0xD4
	markList16  = 0xD5
	markList32  = 0xD6
	markMap8    = 0xD8
	markMap16   = 0xD9
	markMap32   = 0xDA
	markStruct8 = 0xDC // PackStream v1 only; Bolt 5 structs have at most 15 fields
	maxDepth    = 64
)

// errShort reports a value cut off before its declared end.
var errShort = errors.New("packstream: unexpected end of data")

// decoder reads PackStream values from one dechunked Bolt message.
type decoder struct {
	buf []byte
	pos int
}

func (d *decoder) need(n int) error {
	if n < 0 || len(d.buf)-d.pos < n {
		return fmt.Errorf("%w at offset %d (need %d bytes)", errShort, d.pos, n)
	}
	return nil
}

func (d *decoder) byte() (byte, error) {
	if err := d.need(1); err != nil {
		return 0, err
	}
	b := d.buf[d.pos]
	d.pos++
	return b, nil
}

func (d *decoder) take(n int) ([]byte, error) {
	if err := d.need(n); err != nil {
		return nil, err
	}
	b := d.buf[d.pos : d.pos+n]
	d.pos += n
	return b, nil
}

// size reads a big-endian unsigned length of width bytes (1, 2 or 4).
func (d *decoder) size(width int) (int, error) {
	b, err := d.take(width)
	if err != nil {
		return 0, err
	}
	switch width {
	case 1:
		return int(b[0]), nil
	case 2:
		return int(binary.BigEndian.Uint16(b)), nil
	default:
		return int(binary.BigEndian.Uint32(b)), nil
	}
}

// header reads a struct header and returns its field count and tag.
func (d *decoder) header() (int, byte, error) {
	m, err := d.byte()
	if err != nil {
		return 0, 0, err
	}
	n := 0
	switch {
	case m >= 0xB0 && m <= 0xBF:
		n = int(m & 0x0F)
	case m == markStruct8:
		if n, err = d.size(1); err != nil {
			return 0, 0, err
		}
	default:
		return 0, 0, fmt.Errorf("packstream: expected struct, got marker %#02x at offset %d", m, d.pos-1)
	}
	tag, err := d.byte()
	if err != nil {
		return 0, 0, err
	}
	return n, tag, nil
}

// value decodes one value: nil, bool, int64, float64, string, []byte,
// []any, map[string]any or Struct.
func (d *decoder) value(depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("packstream: nesting deeper than %d at offset %d", maxDepth, d.pos)
	}
	at := d.pos
	m, err := d.byte()
	if err != nil {
		return nil, err
	}
	switch {
	case m <= 0x7F:
		return int64(m), nil
	case m >= 0xF0:
		return int64(int8(m)), nil
	case m >= 0x80 && m <= 0x8F:
		return d.str(int(m & 0x0F))
	case m >= 0x90 && m <= 0x9F:
		return d.list(int(m&0x0F), depth)
	case m >= 0xA0 && m <= 0xAF:
		return d.dict(int(m&0x0F), depth)
	case m >= 0xB0 && m <= 0xBF:
		return d.structure(int(m&0x0F), depth)
	}
	switch m {
	case markNull:
		return nil, nil
	case markFalse:
		return false, nil
	case markTrue:
		return true, nil
	case markFloat:
		b, err := d.take(8)
		if err != nil {
			return nil, err
		}
		return math.Float64frombits(binary.BigEndian.Uint64(b)), nil
	case markInt8:
		b, err := d.take(1)
		if err != nil {
			return nil, err
		}
		return int64(int8(b[0])), nil
	case markInt16:
		b, err := d.take(2)
		if err != nil {
			return nil, err
		}
		return int64(int16(binary.BigEndian.Uint16(b))), nil
	case markInt32:
		b, err := d.take(4)
		if err != nil {
			return nil, err
		}
		return int64(int32(binary.BigEndian.Uint32(b))), nil
	case markInt64:
		b, err := d.take(8)
		if err != nil {
			return nil, err
		}
		return int64(binary.BigEndian.Uint64(b)), nil
	case markBytes8, markBytes16, markBytes32:
		n, err := d.size(1 << (m - markBytes8))
		if err != nil {
			return nil, err
		}
		b, err := d.take(n)
		if err != nil {
			return nil, err
		}
		return append([]byte{}, b...), nil
	case markString8, markStr16, markStr32:
		n, err := d.size(1 << (m - markString8))
		if err != nil {
			return nil, err
		}
		return d.str(n)
	case markList8, markList16, markList32:
		n, err := d.size(1 << (m - markList8))
		if err != nil {
			return nil, err
		}
		return d.list(n, depth)
	case markMap8, markMap16, markMap32:
		n, err := d.size(1 << (m - markMap8))
		if err != nil {
			return nil, err
		}
		return d.dict(n, depth)
	case markStruct8:
		n, err := d.size(1)
		if err != nil {
			return nil, err
		}
		return d.structure(n, depth)
	}
	return nil, fmt.Errorf("packstream: unknown marker %#02x at offset %d", m, at)
}

func (d *decoder) str(n int) (string, error) {
	b, err := d.take(n)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func (d *decoder) list(n, depth int) ([]any, error) {
	// Every element takes at least one byte: reject absurd lengths early.
	if err := d.need(n); err != nil {
		return nil, err
	}
	l := make([]any, n)
	for i := range l {
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		l[i] = v
	}
	return l, nil
}

func (d *decoder) dict(n, depth int) (map[string]any, error) {
	if err := d.need(2 * n); err != nil {
		return nil, err
	}
	out := make(map[string]any, n)
	for range n {
		k, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		ks, ok := k.(string)
		if !ok {
			return nil, fmt.Errorf("packstream: map key is %T, want string, at offset %d", k, d.pos)
		}
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		out[ks] = v
	}
	return out, nil
}

func (d *decoder) structure(n, depth int) (Struct, error) {
	tag, err := d.byte()
	if err != nil {
		return Struct{}, err
	}
	s := Struct{Tag: tag, Fields: make([]any, n)}
	for i := range s.Fields {
		v, err := d.value(depth + 1)
		if err != nil {
			return Struct{}, err
		}
		s.Fields[i] = v
	}
	return s, nil
}

// encoder appends PackStream values to buf.
type encoder struct {
	buf []byte
}

func (e *encoder) sized(tiny byte, m8 byte, n int) {
	switch {
	case n < 16 && tiny != 0:
		e.buf = append(e.buf, tiny|byte(n))
	case n <= math.MaxUint8:
		e.buf = append(e.buf, m8, byte(n))
	case n <= math.MaxUint16:
		e.buf = append(e.buf, m8+1)
		e.buf = binary.BigEndian.AppendUint16(e.buf, uint16(n))
	default:
		e.buf = append(e.buf, m8+2)
		e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(n))
	}
}

func (e *encoder) int(i int64) {
	switch {
	case i >= -16 && i <= 127:
		e.buf = append(e.buf, byte(int8(i)))
	case i >= math.MinInt8 && i <= math.MaxInt8:
		e.buf = append(e.buf, markInt8, byte(int8(i)))
	case i >= math.MinInt16 && i <= math.MaxInt16:
		e.buf = append(e.buf, markInt16)
		e.buf = binary.BigEndian.AppendUint16(e.buf, uint16(int16(i)))
	case i >= math.MinInt32 && i <= math.MaxInt32:
		e.buf = append(e.buf, markInt32)
		e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(int32(i)))
	default:
		e.buf = append(e.buf, markInt64)
		e.buf = binary.BigEndian.AppendUint64(e.buf, uint64(i))
	}
}

func (e *encoder) float(f float64) {
	e.buf = append(e.buf, markFloat)
	e.buf = binary.BigEndian.AppendUint64(e.buf, math.Float64bits(f))
}

func (e *encoder) str(s string) {
	e.sized(0x80, markString8, len(s))
	e.buf = append(e.buf, s...)
}

func (e *encoder) structHeader(tag byte, n int) {
	e.buf = append(e.buf, 0xB0|byte(n), tag)
}

// value appends v. It accepts nil, bool, every Go integer and float kind,
// string, []byte, Struct, and (through reflection) any slice, array or map
// with string keys of those. Map keys are written in sorted order so the
// output is deterministic.
func (e *encoder) value(v any) error {
	switch x := v.(type) {
	case nil:
		e.buf = append(e.buf, markNull)
	case bool:
		if x {
			e.buf = append(e.buf, markTrue)
		} else {
			e.buf = append(e.buf, markFalse)
		}
	case int:
		e.int(int64(x))
	case int8:
		e.int(int64(x))
	case int16:
		e.int(int64(x))
	case int32:
		e.int(int64(x))
	case int64:
		e.int(x)
	case uint8:
		e.int(int64(x))
	case uint16:
		e.int(int64(x))
	case uint32:
		e.int(int64(x))
	case uint64:
		if x > math.MaxInt64 {
			return fmt.Errorf("packstream: uint64 %d overflows int64", x)
		}
		e.int(int64(x))
	case uint:
		if uint64(x) > math.MaxInt64 {
			return fmt.Errorf("packstream: uint %d overflows int64", x)
		}
		e.int(int64(x))
	case float32:
		e.float(float64(x))
	case float64:
		e.float(x)
	case string:
		e.str(x)
	case []byte:
		e.sized(0, markBytes8, len(x))
		e.buf = append(e.buf, x...)
	case Struct:
		if len(x.Fields) > 15 {
			return fmt.Errorf("packstream: struct %#02x has %d fields, at most 15", x.Tag, len(x.Fields))
		}
		e.structHeader(x.Tag, len(x.Fields))
		for _, f := range x.Fields {
			if err := e.value(f); err != nil {
				return err
			}
		}
	case []any:
		e.sized(0x90, markList8, len(x))
		for _, f := range x {
			if err := e.value(f); err != nil {
				return err
			}
		}
	case map[string]any:
		return e.dict(x)
	default:
		return e.reflect(reflect.ValueOf(v))
	}
	return nil
}

func (e *encoder) dict(m map[string]any) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	e.sized(0xA0, markMap8, len(keys))
	for _, k := range keys {
		e.str(k)
		if err := e.value(m[k]); err != nil {
			return fmt.Errorf("key %q: %w", k, err)
		}
	}
	return nil
}

func (e *encoder) reflect(rv reflect.Value) error {
	switch rv.Kind() {
	case reflect.Pointer:
		if rv.IsNil() {
			e.buf = append(e.buf, markNull)
			return nil
		}
		return e.value(rv.Elem().Interface())
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			e.buf = append(e.buf, markNull)
			return nil
		}
		e.sized(0x90, markList8, rv.Len())
		for i := range rv.Len() {
			if err := e.value(rv.Index(i).Interface()); err != nil {
				return err
			}
		}
		return nil
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return fmt.Errorf("packstream: map key type %s, want string", rv.Type().Key())
		}
		m := make(map[string]any, rv.Len())
		it := rv.MapRange()
		for it.Next() {
			m[it.Key().String()] = it.Value().Interface()
		}
		return e.dict(m)
	case reflect.String:
		e.str(rv.String())
		return nil
	case reflect.Bool:
		return e.value(rv.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		e.int(rv.Int())
		return nil
	case reflect.Float32, reflect.Float64:
		e.float(rv.Float())
		return nil
	}
	return fmt.Errorf("packstream: cannot encode %s", rv.Type())
}
