package pipeline

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/kgsync/kgsync/diff"
	"github.com/kgsync/kgsync/sink/memgraph"
)

// SearchOptions narrow a search.
type SearchOptions struct {
	// K is the number of hits (default 10).
	K int
	// Anchor and Attribute restrict the search to one embeddable attribute's
	// vectors (Attribute "" with Anchor set: all of the anchor's vectors,
	// its chunks included). Both empty: every vector of the pipeline.
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

// candidate is a vector in state with what a hit reports.
type candidate struct {
	hit      Hit
	textHash uint64
}

// Search embeds query with the pipeline's embedder and returns the nearest
// vectors, best first: through Memgraph's vector indexes when the sink is
// Memgraph (vector_search.search, docs/memgraph.md §4), otherwise by a
// brute-force cosine scan over the vectors in state and the embedding cache
// (the embedded default).
func (p *Pipeline) Search(ctx context.Context, query string, opts SearchOptions) ([]Hit, error) {
	if strings.TrimSpace(query) == "" {
		return nil, errors.New("search: empty query")
	}
	k := opts.K
	if k <= 0 {
		k = 10
	}
	vecs, err := p.Embedder.Embed(ctx, []string{query})
	if err != nil {
		return nil, fmt.Errorf("search: embed query: %w", err)
	}
	q := vecs[0]
	cands, err := p.candidates(ctx, opts)
	if err != nil {
		return nil, err
	}
	if mg, ok := p.Sink.(*memgraph.Sink); ok {
		return p.searchMemgraph(ctx, mg, q, k, cands)
	}
	hashes := make([]uint64, 0, len(cands))
	for _, c := range cands {
		hashes = append(hashes, c.textHash)
	}
	cached := map[uint64][]float32{}
	for i := 0; i < len(hashes); i += 1000 {
		part, err := p.Store.EmbeddingsGet(ctx, p.Embedder.Model(), hashes[i:min(i+1000, len(hashes))])
		if err != nil {
			return nil, fmt.Errorf("search: embedding cache: %w", err)
		}
		for h, v := range part {
			cached[h] = v
		}
	}
	var hits []Hit
	for _, c := range cands {
		v, ok := cached[c.textHash]
		if !ok {
			continue
		}
		h := c.hit
		h.Score = cosine(q, v)
		hits = append(hits, h)
	}
	sortHits(hits)
	return hits[:min(k, len(hits))], nil
}

func (p *Pipeline) searchMemgraph(ctx context.Context, mg *memgraph.Sink, q []float32, k int, cands []candidate) ([]Hit, error) {
	byIndex := map[string]map[string]Hit{}
	for _, c := range cands {
		name := ChunkVectorIndex
		if c.hit.Property != PropEmbedding {
			name = VectorIndexName(c.hit.Label, strings.TrimSuffix(c.hit.Property, "_embedding"))
		}
		if byIndex[name] == nil {
			byIndex[name] = map[string]Hit{}
		}
		byIndex[name][c.hit.ID] = c.hit
	}
	var hits []Hit
	for _, name := range slices.Sorted(maps.Keys(byIndex)) {
		res, err := mg.VectorSearch(ctx, name, k, q)
		if err != nil {
			return nil, fmt.Errorf("search: vector index %s: %w", name, err)
		}
		for _, r := range res {
			// Hits outside the filter (another anchor's chunks) are dropped.
			if h, ok := byIndex[name][r.ID]; ok {
				h.Score = r.Similarity
				hits = append(hits, h)
			}
		}
	}
	sortHits(hits)
	return hits[:min(k, len(hits))], nil
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

// candidates lists the pipeline's vectors from state, filtered by opts.
func (p *Pipeline) candidates(ctx context.Context, opts SearchOptions) ([]candidate, error) {
	var out []candidate
	for _, src := range p.Sources {
		recs, err := p.Store.RecordList(ctx, p.Name, src.Name())
		if err != nil {
			return nil, fmt.Errorf("search: list records: %w", err)
		}
		keys := make([]string, 0, len(recs))
		for k := range recs {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		// Search holds every candidate's text anyway: all chunks in one go.
		chunksOf, err := p.Store.ChunkGet(ctx, p.Name, src.Name(), keys)
		if err != nil {
			return nil, fmt.Errorf("search: %w", err)
		}
		for _, key := range keys {
			rec := recs[key]
			if opts.Anchor != "" && rec.Anchor != opts.Anchor {
				continue
			}
			rp, err := decodeRecordProps(rec.Props)
			if err != nil {
				return nil, fmt.Errorf("search: record %q: %w", key, err)
			}
			if rp.Edge != nil {
				continue
			}
			nodeID := nodeIDOf(src.Name(), key, rp)
			for _, attr := range rp.Vectors {
				if opts.Attribute != "" && attr != opts.Attribute {
					continue
				}
				text, _ := rp.Node[attr].(string)
				out = append(out, candidate{
					hit:      Hit{ID: nodeID, Label: rec.Anchor, Property: VectorProperty(attr), Node: nodeID, Text: text},
					textHash: diff.TextHash(text),
				})
			}
			for _, c := range chunksOf[key] {
				props, err := decodeProps(c.Props)
				if err != nil {
					return nil, fmt.Errorf("search: chunk %q: %w", c.ID, err)
				}
				addr, _ := props["address"].(string)
				if opts.Attribute != "" && !strings.Contains(addr, nodeID+"#"+opts.Attribute) {
					continue
				}
				var elems []string
				if list, ok := props["elements"].([]any); ok {
					for _, e := range list {
						if s, ok := e.(string); ok {
							elems = append(elems, s)
						}
					}
				}
				text, _ := props["text"].(string)
				cctx, _ := props["context"].(string)
				if cctx != "" {
					text = cctx + "\n\n" + text
				}
				out = append(out, candidate{
					hit:      Hit{ID: c.ID, Label: LabelChunk, Property: PropEmbedding, Node: nodeID, Text: text, Address: addr, Elements: elems},
					textHash: c.TextHash,
				})
			}
		}
	}
	return out, nil
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
