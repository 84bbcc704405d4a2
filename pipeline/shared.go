package pipeline

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/sink"
)

// SchemaOf is the schema pipeline pc needs in its graph, from the config
// alone (no source is opened, no sink connected): the indexes of its
// configured anchors and of the document graph, its vector indexes with
// the embedder's dimension, and the edge types that carry properties. The
// anchors a default mapping only finds while reading are not in it.
func SchemaOf(pc *config.Pipeline) (sink.Schema, error) {
	emb, err := NewEmbedder(*pc.Embedder, nil)
	if err != nil {
		return sink.Schema{}, fmt.Errorf("pipeline %q: %w", pc.Name, err)
	}
	capacity := 10000
	if pc.Sink != nil && pc.Sink.Memgraph != nil && pc.Sink.Memgraph.VectorCapacity > 0 {
		capacity = pc.Sink.Memgraph.VectorCapacity
	}
	p := &Pipeline{Name: pc.Name, Embedder: emb, Model: NewModel(pc.Model), VectorCapacity: capacity}
	var anchors []string
	if pc.Model != nil {
		for _, a := range pc.Model.Anchors {
			anchors = append(anchors, a.Name)
		}
	}
	s := p.Schema(anchors)
	documents := false
	for _, sc := range pc.Sources {
		documents = documents || sc.Files != nil
	}
	s.Edges = edgeTypes(documents, p.Model)
	return s, nil
}

// sinkTarget names the graph a pipeline writes to: pipelines with the same
// target share one Memgraph (CYPHERL files are loaded into one).
func sinkTarget(pc *config.Pipeline) string {
	if pc.Sink != nil && pc.Sink.Type == "memgraph" && pc.Sink.Memgraph != nil {
		return "memgraph " + pc.Sink.Memgraph.URI
	}
	return "cypherl"
}

// CheckShared refuses pipelines that write to one graph and would share an
// index with different settings: Memgraph keeps one vector index per name
// and one per label and property (docs/memgraph.md §4, §12), so two
// pipelines with chunks of different embedding dimensions would drop each
// other's index on every run. Pipelines share a graph when they have the
// same Memgraph URI, or both write CYPHERL files. Each error names the
// index, both pipelines and their settings.
func CheckShared(cfg *config.Config) error {
	type use struct {
		pipeline string
		vi       sink.VectorIndex
	}
	var errs []error
	byTarget := map[string]map[string]use{} // target → index key → first use
	for i := range cfg.Pipelines {
		pc := &cfg.Pipelines[i]
		s, err := SchemaOf(pc)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		t := sinkTarget(pc)
		if byTarget[t] == nil {
			byTarget[t] = map[string]use{}
		}
		seen := byTarget[t]
		for _, vi := range s.VectorIndexes {
			if vi.Metric == "" {
				vi.Metric = "cos"
			}
			for _, key := range []string{"name " + vi.Name, "on :" + vi.Label + "(" + vi.Property + ")"} {
				first, ok := seen[key]
				if !ok {
					seen[key] = use{pc.Name, vi}
					continue
				}
				if first.pipeline == pc.Name {
					continue
				}
				a, b := first.vi, vi
				if a.Name != b.Name || a.Label != b.Label || a.Property != b.Property || a.Dimension != b.Dimension || a.Metric != b.Metric {
					errs = append(errs, fmt.Errorf("pipelines %q and %q share vector index %s in one graph with different settings: "+
						"%s: %s, %s: %s (Memgraph keeps one vector index per name and per label and property; change the embedder "+
						"dimensions of every pipeline sharing it together, or give them separate Memgraph instances)",
						first.pipeline, pc.Name, key, first.pipeline, describeVector(a), pc.Name, describeVector(b)))
				}
			}
		}
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(slices.CompactFunc(errs, func(a, b error) bool { return a.Error() == b.Error() })...)
}

func describeVector(vi sink.VectorIndex) string {
	return fmt.Sprintf("%s on :%s(%s), dimension %d, metric %s", vi.Name, vi.Label, vi.Property, vi.Dimension, vi.Metric)
}
