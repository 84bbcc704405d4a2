package config

import (
	"fmt"
	"os"
)

// Position returns "file:line: " for a key path of a Config from Load or
// Parse ("pipelines[1].model.anchors[0]"), or of its nearest written
// parent; "" when unknown.
func (c *Config) Position(path string) string { return c.src.atPath(path) }

// CheckPaths reports, for `kgsync validate`, the paths a Config names that
// are not there: a files source's root that does not exist or is not a
// directory, a CSV table's file that does not exist or is not a file, and
// an assistant.playbook file that is not there. Each error starts with the
// file and line and the key path. Load does not run it: a root may be
// mounted only where the daemon runs.
func CheckPaths(c *Config) []error {
	ck := &checker{src: c.src}
	if pb := c.Assistant.Playbook; pb != "" {
		if info, err := os.Stat(pb); err != nil {
			ck.add("assistant.playbook", "%s: %v", pb, unwrapPathError(err))
		} else if info.IsDir() {
			ck.add("assistant.playbook", "%s is a directory, not a file", pb)
		}
	}
	for i := range c.Pipelines {
		p := &c.Pipelines[i]
		for j, s := range p.Sources {
			at := fmt.Sprintf("pipelines[%d].sources[%d]", i, j)
			if f := s.Files; f != nil {
				if info, err := os.Stat(f.Root); err != nil {
					ck.add(at+".files.root", "%s: %v", f.Root, unwrapPathError(err))
				} else if !info.IsDir() {
					ck.add(at+".files.root", "%s is not a directory", f.Root)
				}
			}
			if cs := s.CSV; cs != nil {
				for k, t := range cs.Tables {
					if info, err := os.Stat(t.Path); err != nil {
						ck.add(fmt.Sprintf("%s.csv.tables[%d].path", at, k), "%s: %v", t.Path, unwrapPathError(err))
					} else if info.IsDir() {
						ck.add(fmt.Sprintf("%s.csv.tables[%d].path", at, k), "%s is a directory, not a CSV file", t.Path)
					}
				}
			}
		}
	}
	return ck.errs
}

// unwrapPathError drops the path an *os.PathError repeats.
func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// MaxChunkTokens bounds chunking.max_tokens whatever the embedder: no
// embedding model takes a chunk of more tokens.
const MaxChunkTokens = 1 << 16

// chunkFits checks that a pipeline's chunks fit its embedder: max_tokens
// plus overlap_tokens within embedder.max_input_tokens, and max_tokens at
// most MaxChunkTokens. An inherited chunking section is reported once,
// under its top-level path.
func (ck *checker) chunkFits(c *Config, at string, p *Pipeline, done map[string]bool) {
	if p.Chunking == nil {
		return
	}
	cat := at + ".chunking"
	if c.Chunking != nil && *p.Chunking == *c.Chunking {
		cat = "chunking"
	}
	if p.Chunking.MaxTokens > MaxChunkTokens && !done[cat+"/max"] {
		done[cat+"/max"] = true
		ck.add(cat+".max_tokens", "must be at most %d, got %d", MaxChunkTokens, p.Chunking.MaxTokens)
		return
	}
	if p.Embedder == nil || p.Embedder.MaxInputTokens <= 0 {
		return
	}
	if n := p.Chunking.MaxTokens + p.Chunking.OverlapTokens; n > p.Embedder.MaxInputTokens && !done[cat] {
		done[cat] = true
		ck.add(cat+".max_tokens", "a chunk of max_tokens + overlap_tokens = %d tokens exceeds the embedder's max_input_tokens %d (pipeline %q, model %q)",
			n, p.Embedder.MaxInputTokens, p.Name, p.Embedder.Model)
	}
}
