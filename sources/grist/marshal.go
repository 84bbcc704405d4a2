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
}

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

func (d *marshalDecoder) value() (any, error) {
	s, err := d.need(1)
	if err != nil {
		return nil, err
	}
	code := s[0]
	flag := code&0x80 != 0
	code &^= 0x80
	refIdx := -1
	if flag && code != '(' && code != '[' && code != '{' {
		refIdx = len(d.refs)
		d.refs = append(d.refs, nil)
	}
	var v any
	switch code {
	case 'N':
		v = nil
	case 'T':
		v = true
	case 'F':
		v = false
	case 'i':
		n, err := d.int32()
		if err != nil {
			return nil, err
		}
		v = int64(n)
	case 'I':
		s, err := d.need(8)
		if err != nil {
			return nil, err
		}
		v = int64(binary.LittleEndian.Uint64(s))
	case 'l':
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
		}
		for i := len(digits) - 1; i >= 0; i-- {
			acc.Lsh(acc, 15)
			acc.Add(acc, big.NewInt(int64(digits[i])))
		}
		if neg {
			acc.Neg(acc)
		}
		if acc.IsInt64() {
			v = acc.Int64()
		} else {
			f, _ := new(big.Float).SetInt(acc).Float64()
			v = f
		}
	case 'g':
		s, err := d.need(8)
		if err != nil {
			return nil, err
		}
		v = math.Float64frombits(binary.LittleEndian.Uint64(s))
	case 'f':
		s, err := d.need(1)
		if err != nil {
			return nil, err
		}
		txt, err := d.str(int(s[0]))
		if err != nil {
			return nil, err
		}
		f, err := strconv.ParseFloat(txt, 64)
		if err != nil {
			return nil, fmt.Errorf("marshal float %q: %w", txt, err)
		}
		v = f
	case 's', 't', 'u', 'a', 'A':
		n, err := d.int32()
		if err != nil {
			return nil, err
		}
		txt, err := d.str(int(n))
		if err != nil {
			return nil, err
		}
		v = txt
	case 'z', 'Z':
		s, err := d.need(1)
		if err != nil {
			return nil, err
		}
		txt, err := d.str(int(s[0]))
		if err != nil {
			return nil, err
		}
		v = txt
	case '(', '[', '<', '>', ')':
		var n int
		if code == ')' {
			s, err := d.need(1)
			if err != nil {
				return nil, err
			}
			n = int(s[0])
		} else {
			m, err := d.int32()
			if err != nil {
				return nil, err
			}
			n = int(m)
		}
		if n < 0 || n > len(d.b) {
			return nil, fmt.Errorf("marshal list length %d at offset %d", n, d.pos)
		}
		list := make([]any, 0, n)
		if flag {
			refIdx = len(d.refs)
			d.refs = append(d.refs, nil)
		}
		for range n {
			e, err := d.value()
			if err != nil {
				return nil, err
			}
			list = append(list, e)
		}
		v = list
	case '{':
		m := map[string]any{}
		if flag {
			refIdx = len(d.refs)
			d.refs = append(d.refs, nil)
		}
		for {
			if d.pos < len(d.b) && d.b[d.pos] == '0' {
				d.pos++
				break
			}
			k, err := d.value()
			if err != nil {
				return nil, err
			}
			e, err := d.value()
			if err != nil {
				return nil, err
			}
			m[fmt.Sprint(k)] = e
		}
		v = m
	case 'r':
		n, err := d.int32()
		if err != nil {
			return nil, err
		}
		if n < 0 || int(n) >= len(d.refs) {
			return nil, fmt.Errorf("marshal ref %d out of range at offset %d", n, d.pos)
		}
		return d.refs[n], nil
	default:
		return nil, fmt.Errorf("marshal type code %q at offset %d not supported", code, d.pos-1)
	}
	if refIdx >= 0 {
		d.refs[refIdx] = v
	}
	return v, nil
}
