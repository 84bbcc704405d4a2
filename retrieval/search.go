// Package retrieval searches a pipeline's graph: vector, lexical (BM25 over
// text indexes), exact term and address look-ups, fused by reciprocal rank
// fusion; a relevance floor that declines questions nothing answers;
// expansion of hits to the minimal sufficient context within a token
// budget; and eval, which scores all of it against a golden set.
//
// It reads the corpus from state through a CorpusLoader (the pipeline), the
// vectors from the embedding cache, and, with a Memgraph sink, queries
// Memgraph's vector and text indexes through Graph.
package retrieval

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/kgsync/kgsync/embed"
	"github.com/kgsync/kgsync/sink/memgraph"
	"github.com/kgsync/kgsync/state"
)

// Graph is the part of a graph database sink a search queries
// (*memgraph.Sink implements it).
type Graph interface {
	// VectorSearch returns the k nodes nearest to vec in the vector index
	// called index, nearest first.
	VectorSearch(ctx context.Context, index string, k int, vec []float32) ([]memgraph.Hit, error)
}

// Searcher searches one pipeline. Create it with its fields set; it reads
// the corpus once, on first use, and is then safe for concurrent use.
type Searcher struct {
	// Pipeline names the pipeline in state.
	Pipeline string
	// Store is the pipeline's state: the embedding cache.
	Store state.Store
	// Embedder embeds queries; it must be the pipeline's embedder.
	Embedder embed.Embedder
	// Corpus reads the pipeline's documents and units.
	Corpus CorpusLoader
	// Graph, when set, answers vector queries from the graph database's
	// indexes instead of a scan over the vectors in state.
	Graph Graph

	once   sync.Once
	corpus *Corpus
	idx    *corpusIndex
	err    error
}

// Options narrow a search.
type Options struct {
	// K is the number of hits (default 10).
	K int
	// Anchor and Attribute restrict the search to one embeddable
	// attribute's units (Attribute "" with Anchor set: all of the anchor's
	// units, its chunks included). Both empty: every unit of the pipeline.
	Anchor, Attribute string
}

// Hit is one search result.
type Hit struct {
	// ID is the id of the node holding the vector: a chunk or an anchor's node.
	ID string `json:"id"`
	// Label is that node's label.
	Label string `json:"label"`
	// Property is the vector property ("embedding" for chunks).
	Property string `json:"property"`
	// Node is the record's node the hit belongs to (a chunk's document or row).
	Node string `json:"node"`
	// Score is the cosine similarity, in [-1, 1].
	Score float64 `json:"score"`
	// Text is the embedded text (a chunk's context line and text).
	Text string `json:"text"`
	// Address is a chunk's element address path ("" for attributes).
	Address string `json:"address,omitempty"`
	// Elements are the ids of the elements a chunk covers.
	Elements []string `json:"elements,omitempty"`
	// Expansions are the context Expand added for this hit.
	Expansions []Expansion `json:"expansions,omitempty"`
}

// load reads the corpus on first use.
func (s *Searcher) load(ctx context.Context) (*Corpus, *corpusIndex, error) {
	s.once.Do(func() {
		c, err := s.Corpus.Corpus(ctx)
		if err != nil {
			s.err = fmt.Errorf("read corpus of pipeline %q: %w", s.Pipeline, err)
			return
		}
		s.corpus, s.idx = c, newCorpusIndex(c)
	})
	return s.corpus, s.idx, s.err
}

// Search embeds query with the pipeline's embedder and returns the nearest
// units, best first: through the graph's vector indexes when Graph is set
// (vector_search.search, docs/memgraph.md §4), otherwise by a brute-force
// cosine scan over the vectors in the embedding cache.
func (s *Searcher) Search(ctx context.Context, query string, opts Options) ([]Hit, error) {
	if strings.TrimSpace(query) == "" {
		return nil, errors.New("search: empty query")
	}
	k := opts.K
	if k <= 0 {
		k = 10
	}
	c, _, err := s.load(ctx)
	if err != nil {
		return nil, err
	}
	vecs, err := s.Embedder.Embed(ctx, []string{query})
	if err != nil {
		return nil, fmt.Errorf("search: embed query: %w", err)
	}
	q := vecs[0]
	units := filterUnits(c.Units, opts)
	if s.Graph != nil {
		return s.searchGraph(ctx, q, k, units)
	}
	hashes := make([]uint64, 0, len(units))
	for _, u := range units {
		hashes = append(hashes, u.TextHash)
	}
	cached := map[uint64][]float32{}
	for i := 0; i < len(hashes); i += 1000 {
		part, err := s.Store.EmbeddingsGet(ctx, s.Embedder.Model(), hashes[i:min(i+1000, len(hashes))])
		if err != nil {
			return nil, fmt.Errorf("search: embedding cache: %w", err)
		}
		for h, v := range part {
			cached[h] = v
		}
	}
	var hits []Hit
	for _, u := range units {
		v, ok := cached[u.TextHash]
		if !ok {
			continue
		}
		h := u.hit()
		h.Score = cosine(q, v)
		hits = append(hits, h)
	}
	sortHits(hits)
	return hits[:min(k, len(hits))], nil
}

func (u Unit) hit() Hit {
	return Hit{ID: u.ID, Label: u.Label, Property: u.Property, Node: u.Node, Text: u.Text, Address: u.Address, Elements: u.Elements}
}

// VectorIndexName is the vector index of a row's embeddable attribute
// (pipeline.VectorIndexName).
func VectorIndexName(label, attr string) string {
	return strings.ToLower(label) + "_" + strings.ToLower(attr) + "_embedding"
}

// vectorIndex is the vector index a unit's vector is in.
func (u Unit) vectorIndex() string {
	if u.Label == LabelChunk {
		return ChunkVectorIndex
	}
	return VectorIndexName(u.Label, u.Attribute())
}

func (s *Searcher) searchGraph(ctx context.Context, q []float32, k int, units []Unit) ([]Hit, error) {
	byIndex := map[string]map[string]Unit{}
	var names []string
	for _, u := range units {
		name := u.vectorIndex()
		if byIndex[name] == nil {
			byIndex[name] = map[string]Unit{}
			names = append(names, name)
		}
		byIndex[name][u.ID] = u
	}
	slices.Sort(names)
	var hits []Hit
	for _, name := range names {
		res, err := s.Graph.VectorSearch(ctx, name, k, q)
		if err != nil {
			return nil, fmt.Errorf("search: vector index %s: %w", name, err)
		}
		for _, r := range res {
			// Hits outside the filter (another anchor's chunks) are dropped.
			if u, ok := byIndex[name][r.ID]; ok {
				h := u.hit()
				h.Score = r.Similarity
				hits = append(hits, h)
			}
		}
	}
	sortHits(hits)
	return hits[:min(k, len(hits))], nil
}

// filterUnits keeps the units opts allows.
func filterUnits(units []Unit, opts Options) []Unit {
	if opts.Anchor == "" && opts.Attribute == "" {
		return units
	}
	var out []Unit
	for _, u := range units {
		if opts.Anchor != "" && u.NodeLabel != opts.Anchor {
			continue
		}
		if opts.Attribute != "" {
			if u.Label == LabelChunk {
				// A long attribute's chunks: "<node>#<attribute>" in the address.
				if !strings.Contains(u.Address, u.Node+"#"+opts.Attribute) {
					continue
				}
			} else if u.Attribute() != opts.Attribute {
				continue
			}
		}
		out = append(out, u)
	}
	return out
}

func sortHits(hits []Hit) {
	slices.SortStableFunc(hits, func(a, b Hit) int {
		if a.Score > b.Score {
			return -1
		}
		if a.Score < b.Score {
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// cosine is the cosine similarity of two vectors (0 when either is zero).
func cosine(a, b []float32) float64 {
	if len(a) != len(b) {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}
