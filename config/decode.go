package config

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/kgsync/kgsync/internal/editdist"
)

// maxNodes bounds the work of decoding one file, counted in visited YAML nodes
// including those reached through aliases and merge keys, so a small file of
// nested aliases ("billion laughs") cannot make Parse run for ever. Real
// configurations have a few hundred nodes.
const maxNodes = 100_000

// maxErrors bounds how many decode errors one Parse reports.
const maxErrors = 50

// source remembers where a configuration came from, so that errors can name
// "file:line". It is attached to a Config by Parse and Load.
type source struct {
	// name is the file name as the user gave it to Load; "" for Parse.
	name string
	// lines maps a key path ("pipelines[0].chunking.max_tokens") to the
	// 1-based line of its key, or of the element for list items.
	lines map[string]int
}

// at formats a line as an error prefix: "kgsync.yaml:12: ", or "line 12: "
// when the file name is unknown, or "" when line is unknown.
func (s *source) at(line int) string {
	switch {
	case s == nil || line <= 0:
		return ""
	case s.name == "":
		return fmt.Sprintf("line %d: ", line)
	default:
		return fmt.Sprintf("%s:%d: ", s.name, line)
	}
}

// atPath is at for the line of path or, when the path itself was not in the
// file (a default, an inherited section), of its nearest written ancestor.
func (s *source) atPath(path string) string {
	if s == nil {
		return ""
	}
	for path != "" {
		if line, ok := s.lines[path]; ok {
			return s.at(line)
		}
		path = parentPath(path)
	}
	return ""
}

// parentPath strips the last ".key" or "[i]" segment of a key path.
func parentPath(path string) string {
	i := strings.LastIndexAny(path, ".[")
	if i < 0 {
		return ""
	}
	return path[:i]
}

// decoder turns a yaml.Node tree into Go values strictly: unknown and
// duplicate keys, wrong kinds and unparsable scalars are all reported with
// file:line and key path, and decoding continues so one pass reports them all.
// Scalars have ${ENV} expanded (see expandEnv) before they are converted.
type decoder struct {
	src    *source
	lookup func(string) (string, bool)
	errs   []error
	budget int
	// active holds the alias nodes being expanded, to detect cycles.
	active map[*yaml.Node]bool
}

var durationType = reflect.TypeFor[time.Duration]()

// defaulter is implemented by config structs that have defaults independent
// of other fields; the decoder calls it before decoding a mapping into them,
// so keys absent from the file keep their defaults and written ones (even 0)
// win.
type defaulter interface{ setDefaults() }

func (d *decoder) fail(n *yaml.Node, path, format string, args ...any) {
	if len(d.errs) == maxErrors {
		d.errs = append(d.errs, fmt.Errorf("too many errors; stopping after %d", maxErrors))
	}
	if len(d.errs) > maxErrors {
		return
	}
	line := 0
	if n != nil {
		line = n.Line
	}
	msg := fmt.Sprintf(format, args...)
	if path != "" {
		msg = path + ": " + msg
	}
	d.errs = append(d.errs, fmt.Errorf("%s%s", d.src.at(line), msg))
}

// spend takes one unit of the node budget; false means the budget is spent
// and the caller must stop descending.
func (d *decoder) spend(n *yaml.Node) bool {
	d.budget--
	if d.budget == -1 {
		d.fail(n, "", "document too complex: more than %d nodes after expanding aliases", maxNodes)
	}
	return d.budget >= 0
}

// deref follows aliases; ok is false (and an error recorded) for a cycle.
// The returned func must be called when the caller is done with the node.
func (d *decoder) deref(n *yaml.Node, path string) (*yaml.Node, func(), bool) {
	var held []*yaml.Node
	release := func() {
		for _, a := range held {
			delete(d.active, a)
		}
	}
	for n.Kind == yaml.AliasNode {
		if n.Alias == nil || d.active[n] {
			d.fail(n, path, "alias *%s refers to itself", n.Value)
			release()
			return nil, func() {}, false
		}
		d.active[n] = true
		held = append(held, n)
		n = n.Alias
	}
	return n, release, true
}

// decode stores node n into v, which must be settable.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	if !d.spend(n) {
		return
	}
	n, release, ok := d.deref(n, path)
	defer release()
	if !ok {
		return
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return // null is the same as absent: the default stays
	}
	t := v.Type()
	switch {
	case t == durationType:
		d.scalar(n, v, path)
	case t.Kind() == reflect.Pointer:
		p := reflect.New(t.Elem())
		d.decode(n, p.Elem(), path)
		v.Set(p)
	case t.Kind() == reflect.Struct:
		d.mapping(n, v, path)
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String:
		if n.Kind != yaml.MappingNode {
			d.fail(n, path, "expected a mapping, got %s", kindName(n))
			return
		}
		m := reflect.MakeMap(t)
		for _, e := range d.entries(n, path) {
			p := fmt.Sprintf("%s[%q]", path, e.key.Value)
			d.src.lines[p] = e.key.Line
			ev := reflect.New(t.Elem()).Elem()
			d.decode(e.val, ev, p)
			m.SetMapIndex(reflect.ValueOf(e.key.Value).Convert(t.Key()), ev)
		}
		v.Set(m)
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.fail(n, path, "expected a list, got %s", kindName(n))
			return
		}
		s := reflect.MakeSlice(t, len(n.Content), len(n.Content))
		for i, c := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			d.src.lines[p] = c.Line
			d.decode(c, s.Index(i), p)
		}
		v.Set(s)
	default:
		d.scalar(n, v, path)
	}
}

// entry is one key/value pair of a mapping after merge keys are applied.
type entry struct{ key, val *yaml.Node }

// entries lists the pairs of mapping n: its own keys (duplicates are errors)
// followed by keys merged in with "<<" that it does not set itself; among
// several merged mappings the earlier wins, as the YAML merge-key spec says.
func (d *decoder) entries(n *yaml.Node, path string) []entry {
	var own, merged []entry
	first := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !d.spend(k) {
			return nil
		}
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merged = append(merged, d.mergeSources(v, path)...)
			continue
		}
		if k.Kind != yaml.ScalarNode {
			d.fail(k, path, "keys must be plain strings, got %s", kindName(k))
			continue
		}
		if line, dup := first[k.Value]; dup {
			d.fail(k, "", "duplicate key %q %s (first at line %d)", k.Value, where(path), line)
			continue
		}
		first[k.Value] = k.Line
		own = append(own, entry{k, v})
	}
	for _, e := range merged {
		if _, dup := first[e.key.Value]; !dup {
			first[e.key.Value] = e.key.Line
			own = append(own, e)
		}
	}
	return own
}

// mergeSources returns the entries a "<<" value contributes: a mapping, an
// alias to one, or a list of those.
func (d *decoder) mergeSources(v *yaml.Node, path string) []entry {
	if !d.spend(v) {
		return nil
	}
	v, release, ok := d.deref(v, path)
	defer release()
	if !ok {
		return nil
	}
	switch v.Kind {
	case yaml.MappingNode:
		return d.entries(v, path)
	case yaml.SequenceNode:
		var out []entry
		seen := map[string]bool{}
		for _, c := range v.Content {
			for _, e := range d.mergeSources(c, path) {
				if !seen[e.key.Value] {
					seen[e.key.Value] = true
					out = append(out, e)
				}
			}
		}
		return out
	default:
		d.fail(v, path, `"<<" must merge a mapping or a list of mappings, got %s`, kindName(v))
		return nil
	}
}

// mapping decodes a mapping node into struct v, rejecting unknown keys.
func (d *decoder) mapping(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "expected a mapping, got %s", kindName(n))
		return
	}
	if df, ok := v.Addr().Interface().(defaulter); ok {
		df.setDefaults()
	}
	fields := yamlFields(v.Type())
	for _, e := range d.entries(n, path) {
		name := e.key.Value
		idx, ok := fields[name]
		if !ok && path == "" && strings.HasPrefix(name, "x-") {
			continue // top-level "x-" keys hold YAML anchors for reuse; ignored
		}
		if !ok {
			d.fail(e.key, "", "unknown key %q %s%s", name, where(path), suggest(name, fields))
			continue
		}
		p := name
		if path != "" {
			p = path + "." + name
		}
		d.src.lines[p] = e.key.Line
		d.decode(e.val, v.Field(idx), p)
	}
}

// scalar decodes a scalar node, after ${ENV} expansion, into a string,
// integer, float, bool or time.Duration.
func (d *decoder) scalar(n *yaml.Node, v reflect.Value, path string) {
	t := v.Type()
	if n.Kind != yaml.ScalarNode {
		d.fail(n, path, "expected %s, got %s", typeName(t), kindName(n))
		return
	}
	val, err := expandEnv(n.Value, d.lookup)
	if err != nil {
		d.fail(n, path, "%v", err)
		return
	}
	// Re-resolve the expanded text as a plain scalar, so "${BATCH}" or a
	// quoted "64" can fill an integer.
	plain := &yaml.Node{Kind: yaml.ScalarNode, Value: val}
	switch {
	case t == durationType:
		dur, err := time.ParseDuration(val)
		if err != nil {
			d.fail(n, path, "expected a duration with a unit such as \"60s\" or \"2m\", got %q", val)
			return
		}
		v.SetInt(int64(dur))
	case t.Kind() == reflect.String:
		v.SetString(val)
	case plain.ShortTag() == "!!null":
		// "", "~" or "null" after expansion: a typed field needs a value.
		d.fail(n, path, "expected %s, got %q", typeName(t), val)
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		var i int64
		if err := plain.Decode(&i); err != nil || v.OverflowInt(i) {
			d.fail(n, path, "expected an integer, got %q", val)
			return
		}
		v.SetInt(i)
	case t.Kind() == reflect.Float64 || t.Kind() == reflect.Float32:
		var f float64
		if err := plain.Decode(&f); err != nil || math.IsNaN(f) {
			d.fail(n, path, "expected a number, got %q", val)
			return
		}
		v.SetFloat(f)
	case t.Kind() == reflect.Bool:
		var b bool
		if err := plain.Decode(&b); err != nil {
			d.fail(n, path, "expected true or false, got %q", val)
			return
		}
		v.SetBool(b)
	default:
		d.fail(n, path, "unsupported field type %s", t) // a bug in config.go, not in the file
	}
}

// yamlFields maps the yaml key of each decodable field of struct type t to
// its field index; fields tagged yaml:"-" and unexported fields are skipped.
func yamlFields(t reflect.Type) map[string]int {
	out := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = i
	}
	return out
}

// where names a key path for messages: "in pipelines[0]" or "at the top level".
func where(path string) string {
	if path == "" {
		return "at the top level"
	}
	return "in " + path
}

// suggest returns ` (did you mean "x"?)` for the known key closest to name
// within edit distance 2, or "". A name past 64 bytes is no misspelt key.
func suggest(name string, fields map[string]int) string {
	if len(name) > 64 {
		return ""
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	best, bestDist := "", 3
	for _, k := range keys {
		if dist := editdist.Levenshtein(name, k); dist < bestDist {
			best, bestDist = k, dist
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// kindName describes a node's kind for messages.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		v := n.Value
		if len(v) > 40 {
			v = v[:37] + "..."
		}
		return "the value " + strconv.Quote(v)
	case yaml.AliasNode:
		return "an alias"
	default:
		return "a document"
	}
}

// typeName describes what a scalar of type t should look like.
func typeName(t reflect.Type) string {
	switch {
	case t == durationType:
		return `a duration such as "60s"`
	case t.Kind() == reflect.String:
		return "a string"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		return "an integer"
	case t.Kind() == reflect.Float64 || t.Kind() == reflect.Float32:
		return "a number"
	case t.Kind() == reflect.Bool:
		return "true or false"
	default:
		return t.String()
	}
}
