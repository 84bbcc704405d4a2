package state

// Helpers shared by the Store implementations (state/sqlite, state/postgres).

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"unicode"
	"unicode/utf8"
)

// Check rejects a Commit that no state could apply: an empty
// pipeline, a record, chunk or cursor with an empty name, a Record or Chunk
// whose own Pipeline/Source/RecordKey disagree with where it is listed
// (empty ones are taken from there), the same record twice in Records,
// the same chunk id twice in one record's list, or an intent without data.
func (c Commit) Check() error {
	if c.Pipeline == "" {
		return errors.New("commit: empty pipeline name")
	}
	seen := make(map[RecordRef]struct{}, len(c.Records))
	for i, r := range c.Records {
		ref := RecordRef{Source: r.Source, Key: r.Key}
		switch {
		case r.Source == "" || r.Key == "":
			return fmt.Errorf("commit %q: records[%d]: empty source or key (%q/%q)", c.Pipeline, i, r.Source, r.Key)
		case r.Pipeline != "" && r.Pipeline != c.Pipeline:
			return fmt.Errorf("commit %q: record %s/%s: belongs to pipeline %q", c.Pipeline, r.Source, r.Key, r.Pipeline)
		}
		if _, dup := seen[ref]; dup {
			return fmt.Errorf("commit %q: record %s/%s listed twice", c.Pipeline, r.Source, r.Key)
		}
		seen[ref] = struct{}{}
	}
	for i, ref := range c.DeleteRecords {
		if ref.Source == "" || ref.Key == "" {
			return fmt.Errorf("commit %q: delete_records[%d]: empty source or key (%q/%q)", c.Pipeline, i, ref.Source, ref.Key)
		}
	}
	for ref, chunks := range c.ReplaceChunks {
		if ref.Source == "" || ref.Key == "" {
			return fmt.Errorf("commit %q: replace_chunks: empty source or key (%q/%q)", c.Pipeline, ref.Source, ref.Key)
		}
		ids := make(map[string]struct{}, len(chunks))
		for _, ch := range chunks {
			switch {
			case ch.ID == "":
				return fmt.Errorf("commit %q: record %s/%s: chunk with empty id", c.Pipeline, ref.Source, ref.Key)
			case ch.Pipeline != "" && ch.Pipeline != c.Pipeline,
				ch.Source != "" && ch.Source != ref.Source,
				ch.RecordKey != "" && ch.RecordKey != ref.Key:
				return fmt.Errorf("commit %q: record %s/%s: chunk %q belongs to %q record %s/%s",
					c.Pipeline, ref.Source, ref.Key, ch.ID, ch.Pipeline, ch.Source, ch.RecordKey)
			}
			if _, dup := ids[ch.ID]; dup {
				return fmt.Errorf("commit %q: record %s/%s: chunk id %q listed twice", c.Pipeline, ref.Source, ref.Key, ch.ID)
			}
			ids[ch.ID] = struct{}{}
		}
	}
	if c.Intent != nil && len(c.Intent.Data) == 0 {
		return fmt.Errorf("commit %q: intent %d without data", c.Pipeline, c.Intent.ID)
	}
	for src := range c.Cursors {
		if src == "" {
			return fmt.Errorf("commit %q: cursor with empty source name", c.Pipeline)
		}
	}
	for i, ref := range c.LexicalDeletes {
		if ref.Source == "" || ref.RecordKey == "" || ref.ID == "" {
			return fmt.Errorf("commit %q: lexical_deletes[%d]: empty source, record key or id", c.Pipeline, i)
		}
	}
	rows := make(map[LexicalRef]struct{}, len(c.LexicalUpserts))
	for i, r := range c.LexicalUpserts {
		switch {
		case r.Source == "" || r.RecordKey == "" || r.ID == "":
			return fmt.Errorf("commit %q: lexical_upserts[%d]: empty source, record key or id", c.Pipeline, i)
		case r.Kind == "":
			return fmt.Errorf("commit %q: lexical row %s/%s %q: empty kind", c.Pipeline, r.Source, r.RecordKey, r.ID)
		}
		if _, dup := rows[r.LexicalRef]; dup {
			return fmt.Errorf("commit %q: lexical row %s/%s %q listed twice", c.Pipeline, r.Source, r.RecordKey, r.ID)
		}
		rows[r.LexicalRef] = struct{}{}
	}
	return nil
}

// LexicalLen is a lexical row's length in terms: the number of fields of
// text as strings.Fields splits it (runs of characters other than Unicode
// white space), counted without building them.
func LexicalLen(text string) int {
	n := 0
	inField := false
	for i := 0; i < len(text); {
		c := text[i]
		var space bool
		if c < utf8.RuneSelf {
			space = asciiSpace[c]
			i++
		} else {
			r, size := utf8.DecodeRuneInString(text[i:])
			space = unicode.IsSpace(r)
			i += size
		}
		if !space && !inField {
			n++
		}
		inField = !space
	}
	return n
}

// asciiSpace are the ASCII bytes unicode.IsSpace reports as space.
var asciiSpace = [utf8.RuneSelf]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}

// SortedRefs returns m's keys by (Source, Key), so that a store's
// statements run in a stable order (and concurrent commits cannot deadlock).
func SortedRefs[V any](m map[RecordRef]V) []RecordRef {
	out := make([]RecordRef, 0, len(m))
	for ref := range m {
		out = append(out, ref)
	}
	slices.SortFunc(out, func(a, b RecordRef) int {
		return cmp.Or(cmp.Compare(a.Source, b.Source), cmp.Compare(a.Key, b.Key))
	})
	return out
}

// DedupeHashes returns hs without repeated values, in first-seen order.
func DedupeHashes(hs []uint64) []uint64 {
	seen := make(map[uint64]struct{}, len(hs))
	out := make([]uint64, 0, len(hs))
	for _, h := range hs {
		if _, ok := seen[h]; !ok {
			seen[h] = struct{}{}
			out = append(out, h)
		}
	}
	return out
}

// EncodeVector lays v out as float32 little-endian, 4 bytes per dimension.
func EncodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// DecodeVector reverses EncodeVector bit for bit.
func DecodeVector(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("vector of %d bytes is not a whole number of float32s", len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// PrefixEnd is the smallest string above every string starting with
// prefix, in byte order (ok false when there is none: prefix is empty or
// all 0xff bytes), so that keys with the prefix are those >= prefix and <
// the end.
func PrefixEnd(prefix string) (end string, ok bool) {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}
