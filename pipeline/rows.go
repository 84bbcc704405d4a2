package pipeline

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/kgsync/kgsync/state"
)

// StoredRow is one table row as state holds it: the node a record was
// written as, or, for a link-table row, the edge it was written as.
type StoredRow struct {
	// Source and Key name the record in state.
	Source, Key string
	// Anchor is the node label; ID the node's id property ("hs_code:0101").
	Anchor, ID string
	// Props are the node's attributes: reserved properties (a leading
	// "_") and vector properties left out; values are nil, bool, int64,
	// float64, string or lists of them.
	Props map[string]any
	// Links are the node's edges from Ref columns and foreign keys.
	Links []StoredLink
	// Edge is set instead of Props and Links for a link-table row.
	Edge *StoredLink
	// Document reports a document record (a file): its node is a
	// (:Document), not a table row.
	Document bool
}

// StoredLink is one edge of a stored row: its type, its ends and its
// properties (a link table's property columns; reserved ones left out).
type StoredLink struct {
	Type               string
	FromAnchor, FromID string
	ToAnchor, ToID     string
	Props              map[string]any
}

// Rows calls fn with every record of the pipeline stored in state, source
// by source, in key order, corpusPageSize records a read. An error of fn
// stops the walk and is returned; an undecodable record is an error naming
// its source and key.
func (p *Pipeline) Rows(ctx context.Context, fn func(StoredRow) error) error {
	for _, src := range p.Sources {
		var keys []string
		err := p.Store.RecordIndex(ctx, p.Name, src.Name(), func(key string, _ state.RecordSummary) {
			keys = append(keys, key)
		})
		if err != nil {
			return fmt.Errorf("list records of %s: %w", src.Name(), err)
		}
		slices.Sort(keys)
		for start := 0; start < len(keys); start += corpusPageSize {
			page := keys[start:min(start+corpusPageSize, len(keys))]
			recs, err := p.Store.RecordGet(ctx, p.Name, src.Name(), page)
			if err != nil {
				return fmt.Errorf("read records of %s: %w", src.Name(), err)
			}
			for _, key := range page {
				rec, ok := recs[key]
				if !ok {
					continue // deleted since listed
				}
				rp, err := decodeRecordProps(rec.Props)
				if err != nil {
					return fmt.Errorf("source %s record %q: %w", src.Name(), key, err)
				}
				row := StoredRow{Source: src.Name(), Key: key, Anchor: rec.Anchor, ID: rp.ID}
				if row.ID == "" {
					row.ID = key
				}
				switch {
				case rp.Edge != nil:
					e := rp.Edge
					row.Edge = &StoredLink{Type: e.Type, FromAnchor: e.FromLabel, FromID: e.FromID,
						ToAnchor: e.ToLabel, ToID: e.ToID, Props: publicProps(e.Props)}
				case rp.Mandatory != nil:
					continue
				default:
					row.Document = len(rp.Elements) > 0 || len(rp.Sections) > 0 || rec.Anchor == "Document"
					row.Props = publicProps(rp.Node)
					for _, v := range rp.Vectors {
						delete(row.Props, VectorProperty(v))
					}
					for _, l := range rp.Links {
						row.Links = append(row.Links, StoredLink{Type: l.Type, FromAnchor: rec.Anchor, FromID: row.ID,
							ToAnchor: l.ToAnchor, ToID: l.ToID, Props: publicProps(l.Props)})
					}
				}
				if err := fn(row); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// publicProps is props without reserved (leading "_") and vector
// properties.
func publicProps(props map[string]any) map[string]any {
	out := make(map[string]any, len(props))
	for k, v := range props {
		if strings.HasPrefix(k, "_") || strings.HasSuffix(k, "_embedding") {
			continue
		}
		out[k] = v
	}
	return out
}
