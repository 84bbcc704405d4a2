package pipeline

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/diff"
	"github.com/kgsync/kgsync/sources"
)

// DefaultLongTextTokens is the size above which an embeddable attribute's
// text is chunked instead of embedded whole into a node property.
const DefaultLongTextTokens = 256

// Model applies a pipeline's data model (config.Model) to records: it maps
// source tables to anchors (node labels), columns to attributes, Ref columns
// to links, and link-table rows to edges. Tables the model does not list get
// the default mapping: label = table id, every column an attribute, every
// Ref column a link named after it. A nil *Model is the default mapping.
type Model struct {
	cfg        config.Model
	byTable    map[string]*anchorModel
	byName     map[string]*anchorModel
	linkTables map[string]*config.LinkTable
	mandatory  map[string]*config.MandatoryTable
	// tableFingerprints are the link and mandatory tables' parts of the
	// model (ownFingerprint), hashed once: every row of theirs asks.
	tableFingerprints map[string]uint64
	// labels hashes every table → label mapping: a link's target label
	// comes from it, so renaming an anchor reprocesses the records that
	// link to it too.
	labels uint64
}

type anchorModel struct {
	cfg          config.Anchor
	table        string
	attrByColumn map[string]config.Attribute
	linkByColumn map[string]config.Link // lower-cased column
	fingerprint  uint64
}

// NewModel builds a Model from the config (nil = default mapping only).
func NewModel(cfg *config.Model) *Model {
	m := &Model{byTable: map[string]*anchorModel{}, byName: map[string]*anchorModel{},
		linkTables: map[string]*config.LinkTable{}, mandatory: map[string]*config.MandatoryTable{}, tableFingerprints: map[string]uint64{}}
	if cfg == nil {
		return m
	}
	m.cfg = *cfg
	for _, a := range cfg.Anchors {
		am := &anchorModel{cfg: a, table: a.Table, attrByColumn: map[string]config.Attribute{}, linkByColumn: map[string]config.Link{}}
		if am.table == "" {
			am.table = a.Name
		}
		for _, attr := range a.Attributes {
			col := attr.Column
			if col == "" {
				col = attr.Name
			}
			am.attrByColumn[col] = attr
		}
		for _, l := range a.Links {
			col := l.Column
			if col == "" {
				col = l.Name
			}
			am.linkByColumn[strings.ToLower(col)] = l
		}
		am.fingerprint = mustHash(anchorFingerprint(a, cfg.LongTextTokens))
		m.byTable[am.table] = am
		m.byName[a.Name] = am
	}
	for i := range cfg.LinkTables {
		lt := &cfg.LinkTables[i]
		m.linkTables[lt.Table] = lt
		m.tableFingerprints[lt.Table] = mustHash(map[string]any{"link_table": lt.Name, "from": lt.From.Anchor + "." + lt.From.Column,
			"to": lt.To.Anchor + "." + lt.To.Column, "properties": strings.Join(lt.Properties, "\x00")})
	}
	// A table both a link and a mandatory table hashes as a mandatory table.
	for i := range cfg.MandatoryTables {
		mt := &cfg.MandatoryTables[i]
		m.mandatory[mt.Table] = mt
		m.tableFingerprints[mt.Table] = mustHash(map[string]any{"mandatory_table": mt.Table, "from": mt.From, "to": mt.To, "note": mt.Note})
	}
	var pairs []any
	for _, a := range cfg.Anchors {
		pairs = append(pairs, m.tableOf(a.Name)+"\x00"+a.Name)
	}
	slices.SortFunc(pairs, func(x, y any) int { return strings.Compare(x.(string), y.(string)) })
	if len(pairs) > 0 {
		m.labels = mustHash(pairs)
	}
	return m
}

func anchorFingerprint(a config.Anchor, longText int) map[string]any {
	attrs := make([]any, 0, len(a.Attributes))
	for _, at := range a.Attributes {
		attrs = append(attrs, map[string]any{"name": at.Name, "column": at.Column, "embeddable": at.Embeddable})
	}
	links := make([]any, 0, len(a.Links))
	for _, l := range a.Links {
		links = append(links, map[string]any{"name": l.Name, "column": l.Column, "to": l.To})
	}
	return map[string]any{"name": a.Name, "table": a.Table, "only_listed": a.OnlyListed, "attributes": attrs, "links": links, "long_text_tokens": int64(longText)}
}

func mustHash(v any) uint64 {
	h, err := diff.Hash(v)
	if err != nil {
		panic(fmt.Sprintf("pipeline: hash of config values: %v", err)) // only strings, ints and bools above
	}
	return h
}

// LongTextTokens is the chunking threshold for embeddable attributes.
func (m *Model) LongTextTokens() int {
	if m == nil || m.cfg.LongTextTokens <= 0 {
		return DefaultLongTextTokens
	}
	return m.cfg.LongTextTokens
}

// hasMandatoryTables reports whether the model declares mandatory tables.
func (m *Model) hasMandatoryTables() bool { return m != nil && len(m.mandatory) > 0 }

// Label returns the node label of a source table.
func (m *Model) Label(table string) string {
	if m != nil {
		if am, ok := m.byTable[table]; ok {
			return am.cfg.Name
		}
	}
	return table
}

// tableOf returns the source table of an anchor name (default: the name).
func (m *Model) tableOf(anchor string) string {
	if m != nil {
		if am, ok := m.byName[anchor]; ok {
			return am.table
		}
	}
	return anchor
}

// Fingerprint is the hash of the model's part that shapes a table's records:
// changing one anchor's attributes or links reprocesses that anchor's records
// only; renaming an anchor (or mapping another table to it) reprocesses every
// table's records, since links name their targets by label.
func (m *Model) Fingerprint(table string) uint64 {
	if m == nil {
		return 0
	}
	return m.ownFingerprint(table) ^ m.labels
}

func (m *Model) ownFingerprint(table string) uint64 {
	if am, ok := m.byTable[table]; ok {
		return am.fingerprint
	}
	return m.tableFingerprints[table] // 0 for a table the model does not list
}

// Mark fingerprints the whole model as far as it shapes the graph: every
// table's Fingerprint (descriptions and query examples left out). 0 for
// the default mapping.
func (m *Model) Mark() uint64 {
	if m == nil {
		return 0
	}
	tables := map[string]bool{}
	for t := range m.byTable {
		tables[t] = true
	}
	for t := range m.linkTables {
		tables[t] = true
	}
	for t := range m.mandatory {
		tables[t] = true
	}
	var parts []any
	for _, t := range slices.Sorted(maps.Keys(tables)) {
		parts = append(parts, t, int64(m.ownFingerprint(t)))
	}
	if len(parts) == 0 {
		return 0
	}
	return mustHash(append(parts, int64(m.labels), int64(m.LongTextTokens())))
}

// Embeddable lists the embeddable attributes by anchor label, sorted.
func (m *Model) Embeddable() map[string][]string {
	out := map[string][]string{}
	if m == nil {
		return out
	}
	for _, a := range m.cfg.Anchors {
		for _, at := range a.Attributes {
			if at.Embeddable {
				out[a.Name] = append(out[a.Name], at.Name)
			}
		}
	}
	for k := range out {
		slices.Sort(out[k])
	}
	return out
}

// VectorProperty is the node property holding an attribute's vector.
func VectorProperty(attr string) string { return attr + "_embedding" }

// VectorIndexName is the vector index of (label, attribute).
func VectorIndexName(label, attr string) string {
	return strings.ToLower(label) + "_" + strings.ToLower(attr) + "_embedding"
}

// mapped is a record after the model: a node, or an edge of a link table.
type mapped struct {
	label string
	// attrs are the node's attributes (renamed, filtered).
	attrs map[string]any
	// embeds are the embeddable attributes present with text, by attribute name.
	embeds map[string]string
	links  []linkRef
	// edge is set for a link-table row.
	edge *edgeRef
	// mandatory is set for a mandatory-table row: no node, a MANDATORY
	// edge written by the link pass.
	mandatory *MandatoryLink
	// unresolved counts link values that could not become edges.
	unresolved int
}

// edgeRef is a link-table row's edge as stored in state.
type edgeRef struct {
	Type      string         `json:"type"`
	FromLabel string         `json:"from_label"`
	FromID    string         `json:"from_id"`
	ToLabel   string         `json:"to_label"`
	ToID      string         `json:"to_id"`
	Key       string         `json:"key"`
	Props     map[string]any `json:"props,omitempty"`
}

// apply maps a tabular record. Documents are not mapped (label = anchor).
func (m *Model) apply(rec sources.Record) (mapped, error) {
	if m != nil {
		if lt, ok := m.linkTables[rec.Anchor]; ok {
			return m.applyLinkTable(lt, rec)
		}
		if mt, ok := m.mandatory[rec.Anchor]; ok {
			str := func(col string) string {
				if col == "" {
					return ""
				}
				v, _ := rec.Attributes[col].(string)
				return strings.TrimSpace(v)
			}
			ml := &MandatoryLink{From: str(mt.From), To: str(mt.To), Note: str(mt.Note)}
			if ml.From == "" || ml.To == "" {
				return mapped{}, fmt.Errorf("mandatory table %q: row %q: columns %q and %q must hold element addresses", mt.Table, rec.Key, mt.From, mt.To)
			}
			return mapped{mandatory: ml}, nil
		}
	}
	// attrs has room for the node's bookkeeping properties (mapRecord).
	out := mapped{label: m.Label(rec.Anchor), attrs: make(map[string]any, len(rec.Attributes)+4), embeds: map[string]string{}}
	var am *anchorModel
	if m != nil {
		am = m.byTable[rec.Anchor]
	}
	for col, v := range rec.Attributes {
		name := col
		if am != nil {
			attr, listed := am.attrByColumn[col]
			switch {
			case listed:
				name = attr.Name
				if s, ok := v.(string); ok && attr.Embeddable && strings.TrimSpace(s) != "" {
					out.embeds[attr.Name] = s
				}
			case am.cfg.OnlyListed:
				continue
			}
		}
		out.attrs[name] = v
	}
	for _, l := range rec.Links {
		typ, toLabel := l.Type, m.Label(l.ToAnchor)
		if am != nil {
			if lc, ok := am.linkByColumn[strings.ToLower(l.Type)]; ok {
				typ = lc.Name
				if lc.To != "" {
					toLabel = lc.To
				}
			} else if am.cfg.OnlyListed {
				continue
			}
		}
		if l.ToKey == "" {
			out.unresolved++
			continue
		}
		out.links = append(out.links, linkRef{Type: typ, ToAnchor: toLabel, ToID: l.ToKey, Props: l.Props})
	}
	slices.SortFunc(out.links, func(a, b linkRef) int {
		return strings.Compare(a.Type+"\x00"+a.ToAnchor+"\x00"+a.ToID, b.Type+"\x00"+b.ToAnchor+"\x00"+b.ToID)
	})
	return out, nil
}

// listed returns rec as far as the model maps it: for an anchor with
// only_listed, without the columns and links the anchor does not list
// (apply drops them), so that a change to an unlisted column, or to a key
// that only an unlisted Ref column names, is no change of the record.
// Other records are returned as they are.
func (m *Model) listed(rec sources.Record) sources.Record {
	if m == nil {
		return rec
	}
	am, ok := m.byTable[rec.Anchor]
	if !ok || !am.cfg.OnlyListed {
		return rec
	}
	if _, lt := m.linkTables[rec.Anchor]; lt {
		return rec
	}
	if _, mt := m.mandatory[rec.Anchor]; mt {
		return rec
	}
	attrs := make(map[string]any, len(am.attrByColumn))
	for col, v := range rec.Attributes {
		if _, ok := am.attrByColumn[col]; ok {
			attrs[col] = v
		}
	}
	var links []sources.Link
	for _, l := range rec.Links {
		if _, ok := am.linkByColumn[strings.ToLower(l.Type)]; ok {
			links = append(links, l)
		}
	}
	rec.Attributes, rec.Links = attrs, links
	return rec
}

// applyLinkTable maps a link-table row to one edge, keyed by the row's key so
// that rows linking the same pair stay distinct edges.
func (m *Model) applyLinkTable(lt *config.LinkTable, rec sources.Record) (mapped, error) {
	val := func(end config.LinkEnd) (string, error) {
		// A Ref column (Grist, a ref: CSV column) names its target's key.
		for _, l := range rec.Links {
			if strings.EqualFold(l.Type, end.Column) && l.ToKey != "" {
				return l.ToKey, nil
			}
		}
		v, ok := rec.Attributes[end.Column]
		if !ok || v == nil {
			return "", fmt.Errorf("link table %q: row %q: column %q is missing or empty", lt.Table, rec.Key, end.Column)
		}
		s := strings.TrimSpace(fmt.Sprint(v))
		if s == "" {
			return "", fmt.Errorf("link table %q: row %q: column %q is empty", lt.Table, rec.Key, end.Column)
		}
		return m.tableOf(end.Anchor) + ":" + s, nil
	}
	from, err := val(lt.From)
	if err != nil {
		return mapped{}, err
	}
	to, err := val(lt.To)
	if err != nil {
		return mapped{}, err
	}
	props := map[string]any{}
	if len(lt.Properties) > 0 {
		for _, p := range lt.Properties {
			if v, ok := rec.Attributes[p]; ok {
				props[p] = v
			}
		}
	} else {
		props = maps.Clone(rec.Attributes)
		delete(props, lt.From.Column)
		delete(props, lt.To.Column)
	}
	// The edge is matched by its _key: a column named so (or starting with
	// "_", kgsync's) is kept under another name.
	renameReserved(props, func(k string) bool { return strings.HasPrefix(k, "_") })
	props["_source_key"] = rec.Key
	return mapped{edge: &edgeRef{Type: lt.Name, FromLabel: lt.From.Anchor, FromID: from, ToLabel: lt.To.Anchor, ToID: to, Key: rec.Key, Props: props}}, nil
}

// renameReserved moves, in props (a node's or edge's properties as the
// mapping made them, model renames applied), each key that reserved says
// kgsync writes itself to "source_" + key ("id" → "source_id", "_hash" →
// "source__hash"), prefixed again while props has that name already. Keys
// are moved in sorted order, so the result does not depend on map order.
func renameReserved(props map[string]any, reserved func(string) bool) {
	var keys []string
	for k := range props {
		if reserved(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		name := "source_" + k
		for {
			if _, taken := props[name]; !taken {
				break
			}
			name = "source_" + name
		}
		props[name] = props[k]
		delete(props, k)
	}
}
