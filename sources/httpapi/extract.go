package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	"github.com/itchyny/gojq"

	"github.com/kgsync/kgsync/sources"
)

// jqExpr is a compiled jq expression with the config field it came from.
// Simple paths (".a.b", ".data[]", ".id | tostring") are also evaluated
// directly, without gojq's per-run environment, when the input has the
// expected shape; any other case runs gojq, so results are the same.
type jqExpr struct {
	field string // e.g. `attributes["title"]`
	expr  string
	code  *gojq.Code

	fast     bool     // expr is a simple path
	path     []string // object keys, in order ("." = none)
	iterate  bool     // path ends in []
	tostring bool     // path is piped into tostring
}

// simplePath matches ".", ".a.b", optionally followed by "[]" or "| tostring".
var simplePath = regexp.MustCompile(`^\s*(\.|(?:\.[A-Za-z_][A-Za-z0-9_]*)+)\s*(?:(\[\])|\|\s*(tostring))?\s*$`)

// setFast records the simple-path form of e.expr, if it has one.
func (e *jqExpr) setFast() {
	m := simplePath.FindStringSubmatch(e.expr)
	if m == nil {
		return
	}
	e.fast, e.iterate, e.tostring = true, m[2] != "", m[3] != ""
	if m[1] != "." {
		e.path = strings.Split(m[1][1:], ".")
	}
}

// eval follows the path directly; ok is false when gojq must decide (a
// non-object on the path, which jq reports as an error).
func (e *jqExpr) eval(v any) (any, bool) {
	for _, k := range e.path {
		switch o := v.(type) {
		case map[string]any:
			v = o[k]
		case nil:
		default:
			return nil, false
		}
	}
	if e.tostring {
		switch x := v.(type) {
		case string:
			return x, true
		case json.Number: // gojq's tostring writes a json.Number verbatim
			return string(x), true
		default:
			return nil, false
		}
	}
	return v, true
}

// all runs the expression on v and returns every output; a jq runtime error
// names the field and expression.
func (e *jqExpr) all(ctx context.Context, v any) ([]any, error) {
	if e.fast {
		if x, ok := e.eval(v); ok {
			if !e.iterate {
				return []any{x}, nil
			}
			if arr, isArr := x.([]any); isArr {
				return arr, nil
			}
		}
	}
	it := e.code.RunWithContext(ctx, v)
	var out []any
	for {
		x, ok := it.Next()
		if !ok {
			return out, nil
		}
		if err, isErr := x.(error); isErr {
			return nil, fmt.Errorf("%s: jq %q: %w", e.field, e.expr, err)
		}
		out = append(out, x)
	}
}

// first runs the expression and returns its first output (nil, false when
// there is none).
func (e *jqExpr) first(ctx context.Context, v any) (any, bool, error) {
	if e.fast {
		if x, ok := e.eval(v); ok {
			if !e.iterate {
				return x, true, nil
			}
			if arr, isArr := x.([]any); isArr {
				if len(arr) == 0 {
					return nil, false, nil
				}
				return arr[0], true, nil
			}
		}
	}
	it := e.code.RunWithContext(ctx, v)
	x, ok := it.Next()
	if !ok {
		return nil, false, nil
	}
	if err, isErr := x.(error); isErr {
		return nil, false, fmt.Errorf("%s: jq %q: %w", e.field, e.expr, err)
	}
	return x, true, nil
}

// canonical converts a decoded JSON or jq value into the canonical Go values
// of sources.Record.Attributes: a number without fraction or exponent that
// fits int64 becomes int64, any other number float64.
func canonical(v any) any {
	switch x := v.(type) {
	case nil, string, bool, int64, float64:
		return x
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i
		}
		f, err := x.Float64()
		if err != nil {
			return string(x)
		}
		return f
	case int:
		return int64(x)
	case *big.Int:
		if x.IsInt64() {
			return x.Int64()
		}
		f, _ := new(big.Float).SetInt(x).Float64()
		return f
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = canonical(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = canonical(e)
		}
		return out
	default:
		return fmt.Sprint(x)
	}
}

// keyString turns a key-like jq value (string or number) into a key; ok is
// false for null, "" and other types.
func keyString(v any) (string, bool) {
	switch x := canonical(v).(type) {
	case string:
		return x, x != ""
	case int64:
		return strconv.FormatInt(x, 10), true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return strconv.FormatInt(int64(x), 10), true
		}
		return strconv.FormatFloat(x, 'g', -1, 64), true
	default:
		return "", false
	}
}

// typeName names a JSON value's type for error messages.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	default:
		return "number"
	}
}

// attrExpr is one configured attribute.
type attrExpr struct {
	name string
	jq   *jqExpr
}

// linkExpr is one configured link type.
type linkExpr struct {
	typ    string
	anchor string
	jq     *jqExpr
}

// mapper turns decoded JSON records into sources.Records.
type mapper struct {
	anchor string
	attrs  []attrExpr // nil: all top-level scalars
	links  []linkExpr // sorted by type
	doc    *jqExpr
	format string
}

// record maps one (merged) JSON object with its key into a Record. Errors
// name the attribute or link and its expression; they make the record a Skip.
func (m *mapper) record(ctx context.Context, key string, obj map[string]any) (sources.Record, error) {
	rec := sources.Record{Key: key, Anchor: m.anchor}
	if m.attrs == nil {
		rec.Attributes = make(map[string]any, len(obj))
		for k, v := range obj {
			switch v.(type) {
			case []any, map[string]any:
			default:
				rec.Attributes[k] = canonical(v)
			}
		}
	} else {
		rec.Attributes = make(map[string]any, len(m.attrs))
		for _, a := range m.attrs {
			v, _, err := a.jq.first(ctx, obj)
			if err != nil {
				return rec, err
			}
			rec.Attributes[a.name] = canonical(v)
		}
	}
	for _, l := range m.links {
		outs, err := l.jq.all(ctx, obj)
		if err != nil {
			return rec, err
		}
		seen := map[string]bool{}
		add := func(v any) error {
			if v == nil {
				return nil
			}
			k, ok := keyString(v)
			if !ok {
				return fmt.Errorf("%s: jq %q yielded %s, want a key (string or number) or an array of keys", l.jq.field, l.jq.expr, typeName(v))
			}
			if !seen[k] {
				seen[k] = true
				rec.Links = append(rec.Links, sources.Link{Type: l.typ, ToAnchor: l.anchor, ToKey: RecordKey(l.anchor, k)})
			}
			return nil
		}
		for _, o := range outs {
			if arr, isArr := o.([]any); isArr {
				for _, e := range arr {
					if err := add(e); err != nil {
						return rec, err
					}
				}
				continue
			}
			if err := add(o); err != nil {
				return rec, err
			}
		}
	}
	if m.doc != nil {
		v, _, err := m.doc.first(ctx, obj)
		if err != nil {
			return rec, err
		}
		switch x := v.(type) {
		case nil:
		case string:
			rec.Document = &sources.Document{Format: m.format, Content: []byte(x)}
		default:
			return rec, fmt.Errorf("%s: jq %q yielded %s, want string", m.doc.field, m.doc.expr, typeName(v))
		}
	}
	return rec, nil
}
