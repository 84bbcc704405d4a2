package grist

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// column is one visible column of a table, from GET /tables/{t}/columns
// (grist-api.md §2).
type column struct {
	ID string // current colId (API fields, SQL)
	// Name is the attribute name records use: the colId, or the name the
	// column was synced under while the config uses that (names.go).
	Name   string
	Type   string // full type, e.g. "Ref:HSCodes", "DateTime:Europe/London"
	Base   string // type before ':' ("Ref", "DateTime", ...)
	Target string // referenced table for Ref/RefList (its current tableId)
	// TargetName is the name the referenced table's records use.
	TargetName string
	// IsFormula: a formula computes the values (isFormula with a
	// non-empty formula). An empty column, isFormula with formula "",
	// is not one: it holds what a data column does.
	IsFormula bool
	ParentPos float64
	ColRef    int64
}

func newColumn(id, typ string, isFormula bool, pos float64, ref int64) column {
	c := column{ID: id, Name: id, Type: typ, IsFormula: isFormula, ParentPos: pos, ColRef: ref}
	base, arg, _ := strings.Cut(typ, ":")
	c.Base = base
	if base == "Ref" || base == "RefList" {
		c.Target, c.TargetName = arg, arg
	}
	return c
}

// hiddenColumn reports whether colId is a helper column the source skips:
// manualSort and every gristHelper_* column (grist-api.md §2).
func hiddenColumn(id, typ string) bool {
	return id == "manualSort" || typ == "ManualSortPos" || strings.HasPrefix(id, "gristHelper_")
}

// ErrorCell is the canonical value of a formula error cell: {"error": name}.
// /records gives only the exception name (grist-api.md §3), so extra detail
// in the /sql marshal blob is dropped to keep both endpoints identical.
func errorCell(name string) map[string]any { return map[string]any{"error": name} }

// decodeRecordsCell turns a /records (normal format) JSON value into the
// canonical attribute value for column c. v comes from a json.Decoder with
// UseNumber.
func decodeRecordsCell(c *column, v any) any {
	v = normJSON(v)
	return decodeCanonical(c, v, false)
}

// decodeSQLCell turns a /sql storage value into the canonical attribute value
// for column c: Bool 0/1, lists as JSON text, marshal Buffers (grist-api.md §4
// and "Observed on a real server" §4).
func decodeSQLCell(c *column, v any) (any, error) {
	v = normJSON(v)
	if m, ok := v.(map[string]any); ok && m["type"] == "Buffer" {
		data, _ := m["data"].([]any)
		b := make([]byte, len(data))
		for i, x := range data {
			n, _ := x.(int64)
			b[i] = byte(n)
		}
		u, err := unmarshalPython(b)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c.ID, err)
		}
		return decodeCanonical(c, u, false), nil
	}
	switch c.Base {
	case "Bool":
		if n, ok := v.(int64); ok && (n == 0 || n == 1) {
			return n == 1, nil
		}
	case "ChoiceList", "RefList", "Attachments":
		if s, ok := v.(string); ok && strings.HasPrefix(s, "[") {
			var list []any
			dec := json.NewDecoder(strings.NewReader(s))
			dec.UseNumber()
			if err := dec.Decode(&list); err == nil {
				return decodeCanonical(c, append([]any{"L"}, normJSON(list).([]any)...), true), nil
			}
		}
	}
	return decodeCanonical(c, v, true), nil
}

// normJSON converts json.Number to int64 (integral) or float64, recursively.
func normJSON(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i
		}
		f, _ := strconv.ParseFloat(string(x), 64)
		return f
	case []any:
		for i := range x {
			x[i] = normJSON(x[i])
		}
		return x
	case map[string]any:
		for k := range x {
			x[k] = normJSON(x[k])
		}
		return x
	case float64:
		return x
	}
	return v
}

// decodeCanonical is decodeValue with non-finite numbers (NaN, ±Inf, which
// JSON numbers beyond float64 and marshal floats can carry, and the record
// hash cannot encode) turned into the strings "NaN", "Infinity" and
// "-Infinity", as Grist shows them: one odd cell must not fail a run.
func decodeCanonical(c *column, v any, sql bool) any {
	return finite(decodeValue(c, v, sql))
}

func finite(v any) any {
	switch x := v.(type) {
	case float64:
		switch {
		case math.IsNaN(x):
			return "NaN"
		case math.IsInf(x, 1):
			return "Infinity"
		case math.IsInf(x, -1):
			return "-Infinity"
		}
	case []any:
		for i := range x {
			x[i] = finite(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = finite(x[k])
		}
	}
	return v
}

func decodeValue(c *column, v any, _ bool) any {
	if v == nil {
		return nil
	}
	if list, ok := v.([]any); ok && len(list) > 0 {
		if code, ok := list[0].(string); ok && code == "E" {
			name, _ := list1(list)
			return errorCell(name)
		}
	}
	switch c.Base {
	case "Text", "Choice":
		if s, ok := v.(string); ok {
			return s
		}
	case "Numeric":
		switch x := v.(type) {
		case int64:
			return float64(x)
		case float64:
			return x
		}
	case "Int", "Id", "ManualSortPos", "PositionNumber":
		switch x := v.(type) {
		case int64:
			return x
		case float64:
			if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
				return int64(x)
			}
			return x
		}
	case "Bool":
		if b, ok := v.(bool); ok {
			return b
		}
	case "Date":
		if f, ok := number(v); ok {
			return isoDate(f)
		}
	case "DateTime":
		if f, ok := number(v); ok {
			return isoDateTime(f)
		}
	case "Ref":
		if f, ok := number(v); ok {
			return int64(f)
		}
	case "ChoiceList", "RefList", "Attachments":
		if list, ok := v.([]any); ok && len(list) > 0 && list[0] == "L" {
			out := make([]any, 0, len(list)-1)
			for _, e := range list[1:] {
				if c.Base == "ChoiceList" {
					out = append(out, anyValue(e))
				} else if f, ok := number(e); ok {
					out = append(out, int64(f))
				} else {
					out = append(out, anyValue(e))
				}
			}
			return out
		}
	}
	return anyValue(v)
}

func list1(list []any) (string, bool) {
	if len(list) < 2 {
		return "", false
	}
	s, ok := list[1].(string)
	return s, ok
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// anyValue decodes a self-describing value (an Any column, or a mismatched
// value in a typed column): typed lists per grist-api.md §3 "Other codes".
// Integral floats become int64 so that JSON "100" and marshal 100.0 agree.
func anyValue(v any) any {
	switch x := v.(type) {
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x)
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = anyValue(e)
		}
		return out
	case []any:
		if len(x) == 0 {
			return []any{}
		}
		code, _ := x[0].(string)
		switch code {
		case "L":
			out := make([]any, 0, len(x)-1)
			for _, e := range x[1:] {
				out = append(out, anyValue(e))
			}
			return out
		case "E":
			name, _ := list1(x)
			return errorCell(name)
		case "d":
			if len(x) == 2 {
				if f, ok := number(x[1]); ok {
					return isoDate(f)
				}
			}
		case "D":
			if len(x) >= 2 {
				if f, ok := number(x[1]); ok {
					return isoDateTime(f)
				}
			}
		case "R":
			if len(x) == 3 {
				t, _ := x[1].(string)
				return map[string]any{"table": t, "id": anyValue(x[2])}
			}
		case "r":
			if len(x) == 3 {
				t, _ := x[1].(string)
				return map[string]any{"table": t, "ids": anyValue(append([]any{"L"}, asList(x[2])...))}
			}
		case "O":
			if len(x) == 2 {
				return anyValue(x[1])
			}
		case "P":
			return map[string]any{"pending": true}
		case "C":
			return map[string]any{"censored": true}
		case "U":
			if len(x) == 2 {
				return map[string]any{"unmarshallable": anyValue(x[1])}
			}
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = anyValue(e)
		}
		return out
	}
	return v
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// isoDate formats seconds since the epoch at UTC midnight as "2006-01-02".
func isoDate(secs float64) string {
	return time.Unix(int64(math.Floor(secs)), 0).UTC().Format("2006-01-02")
}

// isoDateTime formats seconds since the epoch (possibly fractional) as
// RFC 3339 in UTC with only the fractional digits needed.
func isoDateTime(secs float64) string {
	whole := math.Floor(secs)
	nanos := int64(math.Round((secs - whole) * 1e9))
	return time.Unix(int64(whole), nanos).UTC().Format(time.RFC3339Nano)
}
