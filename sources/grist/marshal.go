package grist

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
)

// unmarshalPython decodes Python marshal bytes, the storage encoding Grist
// uses for error cells and non-primitive Any values. The /sql endpoint sends
// them as {"type":"Buffer","data":[bytes]} (grist-samples/real/README.md,
// "Answers to the open questions" 1). It returns canonical Go values: nil,
// bool, int64, float64, string, []any (lists and tuples) and map[string]any
// (dicts, keys formatted as strings). Errors name the offset and type code.
func unmarshalPython(b []byte) (any, error) {
	d := &marshalDecoder{b: b}
	v, err := d.value()
	if err != nil {
		return nil, err
	}
	return v, nil
}

type marshalDecoder struct {
	b    []byte
	pos  int
	refs []any
	// depth is the number of values being decoded, this one included.
	depth int
}

// maxMarshalDepth is how deeply values may nest: CPython's r_object
// refuses a value nested deeper than MAX_MARSHAL_STACK_DEPTH (2000) with
// "recursion limit exceeded".
const maxMarshalDepth = 2000

var errMarshalShort = errors.New("marshal data too short")

func (d *marshalDecoder) need(n int) ([]byte, error) {
	if n < 0 || d.pos+n > len(d.b) {
		return nil, fmt.Errorf("at offset %d: %w", d.pos, errMarshalShort)
	}
	s := d.b[d.pos : d.pos+n]
	d.pos += n
	return s, nil
}

func (d *marshalDecoder) int32() (int32, error) {
	s, err := d.need(4)
	if err != nil {
		return 0, err
	}
	return int32(binary.LittleEndian.Uint32(s)), nil
}

func (d *marshalDecoder) str(n int) (string, error) {
	s, err := d.need(n)
	if err != nil {
		return "", err
	}
	return string(s), nil
}

// value decodes one value. It reads the type code, reserves the value's
// refs slot when the code carries the ref flag (0x80), and hands the rest
// to one decoder per value family: scalar (None, booleans, numbers,
// strings), sequence (tuples, lists, sets), dict, and a back reference.
// A slot is filled once its value is complete.
func (d *marshalDecoder) value() (any, error) {
	s, err := d.need(1)
	if err != nil {
		return nil, err
	}
	code := s[0]
	d.depth++
	defer func() { d.depth-- }()
	if d.depth > maxMarshalDepth {
		return nil, fmt.Errorf("marshal value nested deeper than %d at offset %d", maxMarshalDepth, d.pos-1)
	}
	flag := code&0x80 != 0
	code &^= 0x80
	refIdx := -1
	// A container (tuple, small tuple, list, set, frozenset, dict) takes
	// its slot after its length, in sequence or dict, as CPython's
	// r_object does; reserving here too would shift every later index.
	container := code == '(' || code == ')' || code == '[' || code == '<' || code == '>' || code == '{'
	if flag && !container {
		refIdx = d.reserve()
	}
	var v any
	switch code {
	case '(', '[', '<', '>', ')':
		v, refIdx, err = d.sequence(code, flag, refIdx)
	case '{':
		v, refIdx, err = d.dict(flag, refIdx)
	case 'r':
		return d.ref()
	default:
		v, err = d.scalar(code)
	}
	if err != nil {
		return nil, err
	}
	if refIdx >= 0 {
		d.refs[refIdx] = v
	}
	return v, nil
}

// reserve appends an empty refs slot and returns its index.
func (d *marshalDecoder) reserve() int {
	d.refs = append(d.refs, nil)
	return len(d.refs) - 1
}

// scalar decodes the value of a type code that is neither a container nor
// a reference.
func (d *marshalDecoder) scalar(code byte) (any, error) {
	switch code {
	case 'N':
		return nil, nil
	case 'T':
		return true, nil
	case 'F':
		return false, nil
	case 'i':
		n, err := d.int32()
		if err != nil {
			return nil, err
		}
		return int64(n), nil
	case 'I':
		s, err := d.need(8)
		if err != nil {
			return nil, err
		}
		return int64(binary.LittleEndian.Uint64(s)), nil
	case 'l':
		return d.long()
	case 'g':
		s, err := d.need(8)
		if err != nil {
			return nil, err
		}
		return math.Float64frombits(binary.LittleEndian.Uint64(s)), nil
	case 'f':
		txt, err := d.shortStr()
		if err != nil {
			return nil, err
		}
		f, err := strconv.ParseFloat(txt, 64)
		if err != nil {
			return nil, fmt.Errorf("marshal float %q: %w", txt, err)
		}
		return f, nil
	case 's', 't', 'u', 'a', 'A':
		n, err := d.int32()
		if err != nil {
			return nil, err
		}
		return d.str(int(n))
	case 'z', 'Z':
		return d.shortStr()
	default:
		return nil, fmt.Errorf("marshal type code %q at offset %d not supported", code, d.pos-1)
	}
}

// shortStr decodes a string whose length is one byte.
func (d *marshalDecoder) shortStr() (string, error) {
	s, err := d.need(1)
	if err != nil {
		return "", err
	}
	return d.str(int(s[0]))
}

// long decodes a Python int of arbitrary size: a signed digit count, then
// 15-bit digits, least significant first. It returns an int64 when the
// value fits, else the nearest float64.
func (d *marshalDecoder) long() (any, error) {
	n, err := d.int32()
	if err != nil {
		return nil, err
	}
	neg := n < 0
	size := int64(n)
	if neg {
		size = -size
	}
	// Each digit takes 2 bytes: a count beyond the input is malformed
	// (and must not allocate).
	if size > int64(len(d.b)-d.pos)/2 {
		return nil, fmt.Errorf("marshal long of %d digits at offset %d: %w", size, d.pos, errMarshalShort)
	}
	acc := new(big.Int)
	digits := make([]uint16, size)
	for i := range digits {
		s, err := d.need(2)
		if err != nil {
			return nil, err
		}
		digits[i] = binary.LittleEndian.Uint16(s)
		// CPython's r_PyLong refuses a digit of 2**15 or more ("digit
		// out of range in long") and a zero top digit ("unnormalized
		// long data").
		if digits[i] >= 1<<15 {
			return nil, fmt.Errorf("marshal long digit %#x at offset %d out of range", digits[i], d.pos-2)
		}
	}
	if size > 0 && digits[size-1] == 0 {
		return nil, fmt.Errorf("marshal long at offset %d has a zero top digit", d.pos)
	}
	for i := len(digits) - 1; i >= 0; i-- {
		acc.Lsh(acc, 15)
		acc.Add(acc, big.NewInt(int64(digits[i])))
	}
	if neg {
		acc.Neg(acc)
	}
	if acc.IsInt64() {
		return acc.Int64(), nil
	}
	f, _ := new(big.Float).SetInt(acc).Float64()
	return f, nil
}

// sequence decodes a tuple, list or set (code ')' is a tuple whose length
// is one byte) as []any. With the ref flag it reserves a refs slot after
// the length and before the elements, and returns it as the slot to
// fill; otherwise it returns refIdx, value's.
func (d *marshalDecoder) sequence(code byte, flag bool, refIdx int) (any, int, error) {
	var n int
	if code == ')' {
		s, err := d.need(1)
		if err != nil {
			return nil, refIdx, err
		}
		n = int(s[0])
	} else {
		m, err := d.int32()
		if err != nil {
			return nil, refIdx, err
		}
		n = int(m)
	}
	// Each element takes at least one byte, so a length beyond the bytes
	// left is malformed. The list grows as its elements decode: nested
	// lists that each claim a long length allocate no more than the
	// elements the input holds.
	if n < 0 || n > len(d.b)-d.pos {
		return nil, refIdx, fmt.Errorf("marshal list length %d at offset %d", n, d.pos)
	}
	list := make([]any, 0, min(n, 16))
	if flag {
		refIdx = d.reserve()
	}
	for range n {
		e, err := d.value()
		if err != nil {
			return nil, refIdx, err
		}
		list = append(list, e)
	}
	return list, refIdx, nil
}

// dict decodes a dict, up to its '0' terminator, as map[string]any with
// keys formatted by fmt.Sprint. Its refs slot is as sequence's.
func (d *marshalDecoder) dict(flag bool, refIdx int) (any, int, error) {
	m := map[string]any{}
	if flag {
		refIdx = d.reserve()
	}
	for {
		if d.pos < len(d.b) && d.b[d.pos] == '0' {
			d.pos++
			return m, refIdx, nil
		}
		k, err := d.value()
		if err != nil {
			return nil, refIdx, err
		}
		e, err := d.value()
		if err != nil {
			return nil, refIdx, err
		}
		m[fmt.Sprint(k)] = e
	}
}

// ref decodes a back reference: the value of an earlier refs slot (nil
// while that value is still being decoded).
func (d *marshalDecoder) ref() (any, error) {
	n, err := d.int32()
	if err != nil {
		return nil, err
	}
	if n < 0 || int(n) >= len(d.refs) {
		return nil, fmt.Errorf("marshal ref %d out of range at offset %d", n, d.pos)
	}
	return d.refs[n], nil
}
