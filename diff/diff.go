// Package diff computes content hashes — xxhash64 of a canonical, versioned
// encoding — and classifies records as new, changed, unchanged or deleted
// against stored state.
//
// The canonical encoding is stable across runs, processes and Go versions:
// map keys are sorted, every value is tagged with its type and
// length-prefixed, and the stream starts with EncodingVersion. Changing the
// encoding means bumping EncodingVersion, which makes every record look
// changed once (its golden values are pinned in diff_test.go).
//
// Listing compares a source's listing with the records state holds for
// it, a page at a time and in memory that does not grow with the source:
// which listed keys are stored (with their stored hash, for Classify),
// which moved or were listed twice, and which stored keys a complete
// listing did not list (the deletions).
package diff

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/cespare/xxhash/v2"
)

// EncodingVersion is the first byte of every canonical encoding.
const EncodingVersion byte = 1

// Type tags of the canonical encoding.
const (
	tagNil    byte = 'z'
	tagFalse  byte = 'f'
	tagTrue   byte = 't'
	tagInt    byte = 'i'
	tagFloat  byte = 'd'
	tagString byte = 's'
	tagBytes  byte = 'b'
	tagList   byte = 'l'
	tagMap    byte = 'm'
)

// Encoder appends the canonical encoding of values to a buffer.
type Encoder struct {
	buf []byte
}

// NewEncoder starts an encoding with EncodingVersion.
func NewEncoder() *Encoder {
	return &Encoder{buf: []byte{EncodingVersion}}
}

// Bytes returns the encoding so far.
func (e *Encoder) Bytes() []byte { return e.buf }

// Sum returns xxhash64 of the encoding so far.
func (e *Encoder) Sum() uint64 { return xxhash.Sum64(e.buf) }

func (e *Encoder) uvarint(n uint64) { e.buf = binary.AppendUvarint(e.buf, n) }

// String appends a string.
func (e *Encoder) String(s string) *Encoder {
	e.buf = append(e.buf, tagString)
	e.uvarint(uint64(len(s)))
	e.buf = append(e.buf, s...)
	return e
}

// RawBytes appends a byte slice.
func (e *Encoder) RawBytes(b []byte) *Encoder {
	e.buf = append(e.buf, tagBytes)
	e.uvarint(uint64(len(b)))
	e.buf = append(e.buf, b...)
	return e
}

// Int appends an integer.
func (e *Encoder) Int(n int64) *Encoder {
	e.buf = append(e.buf, tagInt)
	e.buf = binary.AppendVarint(e.buf, n)
	return e
}

// Value appends any canonical Go value: nil, bool, string, []byte, signed
// and unsigned integers, float32/float64, []string, []any, []float32 and
// map[string]any (keys sorted). Floats with an integral value are encoded as
// integers, so 3 and 3.0 hash alike (sources disagree on number types). It
// returns an error naming the Go type for anything else.
func (e *Encoder) Value(v any) error {
	switch x := v.(type) {
	case nil:
		e.buf = append(e.buf, tagNil)
	case bool:
		if x {
			e.buf = append(e.buf, tagTrue)
		} else {
			e.buf = append(e.buf, tagFalse)
		}
	case string:
		e.String(x)
	case []byte:
		e.RawBytes(x)
	case int:
		e.Int(int64(x))
	case int32:
		e.Int(int64(x))
	case int64:
		e.Int(x)
	case uint32:
		e.Int(int64(x))
	case uint64:
		if x > math.MaxInt64 {
			return e.float(float64(x))
		}
		e.Int(int64(x))
	case float32:
		return e.float(float64(x))
	case float64:
		return e.float(x)
	case []string:
		e.buf = append(e.buf, tagList)
		e.uvarint(uint64(len(x)))
		for _, s := range x {
			e.String(s)
		}
	case []float32:
		e.buf = append(e.buf, tagList)
		e.uvarint(uint64(len(x)))
		for _, f := range x {
			if err := e.float(float64(f)); err != nil {
				return err
			}
		}
	case []any:
		e.buf = append(e.buf, tagList)
		e.uvarint(uint64(len(x)))
		for i, item := range x {
			if err := e.Value(item); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
	case map[string]any:
		var small [16]string
		keys := small[:0]
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		e.buf = append(e.buf, tagMap)
		e.uvarint(uint64(len(keys)))
		for _, k := range keys {
			e.String(k)
			if err := e.Value(x[k]); err != nil {
				return fmt.Errorf("%q: %w", k, err)
			}
		}
	default:
		return fmt.Errorf("diff: cannot encode value of type %T", v)
	}
	return nil
}

func (e *Encoder) float(f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("diff: cannot encode non-finite number %v", f)
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		e.Int(int64(f))
		return nil
	}
	e.buf = append(e.buf, tagFloat)
	e.buf = binary.BigEndian.AppendUint64(e.buf, math.Float64bits(f))
	return nil
}

// Hash returns xxhash64 of the canonical encoding of the given values, in order.
func Hash(values ...any) (uint64, error) {
	e := NewEncoder()
	for i, v := range values {
		if err := e.Value(v); err != nil {
			return 0, fmt.Errorf("value %d: %w", i, err)
		}
	}
	return e.Sum(), nil
}

// TextHash is xxhash64 of the exact text, the key of the embedding cache.
// It has no version byte: the cache must survive encoding changes.
func TextHash(text string) uint64 { return xxhash.Sum64String(text) }

// Class is how a record compares with state.
type Class int

// Classes.
const (
	ClassNew Class = iota
	ClassChanged
	ClassUnchanged
	ClassDeleted
)

// String names the class as in run counts.
func (c Class) String() string {
	switch c {
	case ClassNew:
		return "new"
	case ClassChanged:
		return "changed"
	case ClassUnchanged:
		return "unchanged"
	case ClassDeleted:
		return "deleted"
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// Reason says why a record must be processed.
type Reason string

// Reasons.
const (
	ReasonNone        Reason = ""
	ReasonNew         Reason = "new"
	ReasonContent     Reason = "content changed"
	ReasonConfig      Reason = "config changed"
	ReasonForced      Reason = "full resync"
	ReasonReembed     Reason = "re-embed"
	ReasonInterrupted Reason = "interrupted write"
	ReasonDeleted     Reason = "gone from source"
	ReasonRebuildOnly Reason = "rebuild graph"
	// ReasonReview is a document whose rows in its expert review must be
	// written again (pipeline/review).
	ReasonReview Reason = "expert review"
	// ReasonRenamed: the record had another key upstream before (its table
	// was renamed, or its key column's value changed); it moves.
	ReasonRenamed Reason = "renamed"
)

// Classify compares a record's hash and config fingerprint with its stored
// values (found=false when the record is not in state). A stored hash of 0
// is the mark of an interrupted write (content hashes are never 0 in
// practice: 1 in 2^64).
func Classify(found bool, storedHash, storedFingerprint, hash, fingerprint uint64) (Class, Reason) {
	switch {
	case !found:
		return ClassNew, ReasonNew
	case storedHash == 0:
		// A write-ahead intent left by a run that stopped between its
		// sink write and its commit: the graph may hold either version.
		return ClassChanged, ReasonInterrupted
	case storedHash != hash:
		return ClassChanged, ReasonContent
	case storedFingerprint != fingerprint:
		return ClassChanged, ReasonConfig
	default:
		return ClassUnchanged, ReasonNone
	}
}

// Record is what a record's content hash covers (a sources.Record, without
// this package depending on sources).
type Record struct {
	Key, Anchor string
	Attributes  map[string]any
	Links       []Link
	// Document is nil for a record without a document.
	Document *Document
}

// Link is one link of a Record.
type Link struct {
	Type, ToAnchor, ToKey string
	Props                 map[string]any
}

// Document is a Record's document.
type Document struct {
	Format  string
	Content []byte
}

// RecordHash is the content hash of a record: key, anchor, attributes,
// links (sorted by type, target anchor and key, so the source's order does
// not matter) and document format and bytes, in the canonical encoding.
// Errors name the attribute or link value that cannot be encoded.
//
// It encodes into a pooled buffer and hashes a document's bytes where they
// are, so hashing a table row allocates nothing and hashing a document does
// not copy it.
func RecordHash(r Record) (uint64, error) {
	e := encoders.Get().(*Encoder)
	defer func() {
		if cap(e.buf) <= 64<<10 {
			encoders.Put(e)
		}
	}()
	e.buf = append(e.buf[:0], EncodingVersion)
	e.String(r.Key).String(r.Anchor)
	if err := e.Value(r.Attributes); err != nil {
		return 0, err
	}
	var small [8]*Link
	links := small[:0]
	for i := range r.Links {
		links = append(links, &r.Links[i])
	}
	slices.SortStableFunc(links, func(a, b *Link) int {
		return cmp.Or(strings.Compare(a.Type, b.Type), strings.Compare(a.ToAnchor, b.ToAnchor), strings.Compare(a.ToKey, b.ToKey))
	})
	// The encoding of []any{[]any{type, anchor, key, props}, ...}.
	e.buf = append(e.buf, tagList)
	e.uvarint(uint64(len(links)))
	for i, l := range links {
		e.buf = append(e.buf, tagList)
		e.uvarint(4)
		e.String(l.Type).String(l.ToAnchor).String(l.ToKey)
		if err := e.Value(l.Props); err != nil {
			return 0, fmt.Errorf("links: [%d]: [3]: %w", i, err)
		}
	}
	if r.Document == nil {
		e.buf = append(e.buf, tagNil)
		return xxhash.Sum64(e.buf), nil
	}
	e.String(r.Document.Format)
	e.buf = append(e.buf, tagBytes)
	e.uvarint(uint64(len(r.Document.Content)))
	d := xxhash.New()
	_, _ = d.Write(e.buf)
	_, _ = d.Write(r.Document.Content)
	return d.Sum64(), nil
}

// encoders are RecordHash's reusable buffers.
var encoders = sync.Pool{New: func() any { return &Encoder{buf: make([]byte, 0, 1024)} }}
