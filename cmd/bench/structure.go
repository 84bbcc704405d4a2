package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/internal/corpus"
)

// structureReport prints, per document: the numbered units found with the
// right address and parent against those read independently from the
// file (internal/corpus.ExpectedUnits), by kind; the noise dropped, by
// reason; body coverage (the file's words, less the noise, that are in an
// element) and chunk coverage (element words that are in a chunk covering
// the element); terms; references found, resolved in the document, to
// other documents, unresolved.
func structureReport(w io.Writer, dir string, docs []parsedDoc) {
	fmt.Fprintln(w)
	fmt.Fprintln(w, "## Structure")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| document | numbered units with address and parent | by kind (found / expected) | noise dropped | body words in an element | element words in a chunk | terms | references: found / resolved / other documents / unresolved |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, d := range docs {
		raw, err := readCorpus(dir, d.name)
		if err != nil {
			fmt.Fprintf(w, "| %s | %v |\n", d.name, err)
			continue
		}
		units, kinds := "-", "-"
		if want, ok := corpus.ExpectedUnits(d.name, raw); ok {
			got := corpus.CitedParents(d.root)
			found := map[string]int{}
			total := map[string]int{}
			n := 0
			for _, u := range want {
				total[u.Kind]++
				if p, ok := got[u.Citation]; ok && p == u.Parent {
					found[u.Kind]++
					n++
				}
			}
			units = fmt.Sprintf("%d / %d (%.1f%%)", n, len(want), 100*float64(n)/float64(len(want)))
			var ks []string
			for k := range total {
				ks = append(ks, k)
			}
			sort.Strings(ks)
			var parts []string
			for _, k := range ks {
				parts = append(parts, fmt.Sprintf("%s %d/%d", k, found[k], total[k]))
			}
			kinds = strings.Join(parts, ", ")
		}
		reasons := map[string]int{}
		for _, n := range d.root.Noise {
			reasons[n.Reason]++
		}
		var rs []string
		for r, n := range reasons {
			rs = append(rs, fmt.Sprintf("%s %d", r, n))
		}
		sort.Strings(rs)
		noise := "none"
		if len(rs) > 0 {
			noise = strings.Join(rs, ", ")
		}
		body := "- (pdf)"
		if ws, ok := corpus.BodyWords(d.name, raw); ok {
			body = bodyCoverage(ws, raw, d.root)
		}
		refs := chunker.CrossRefs(d.root)
		resolved, unresolved := chunker.Resolve(d.root, refs)
		external := 0
		for _, r := range refs {
			if r.Doc != "" {
				external++
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %d | %d / %d / %d / %d |\n", d.name, units, kinds, noise, body,
			chunkCoverage(d), len(chunker.Terms(d.root)), len(refs), len(resolved), external, len(unresolved))
	}
}

// bodyCoverage is the share of body words (less the noise) found in elements.
func bodyCoverage(body []string, raw []byte, root *chunker.Element) string {
	want := corpus.ExpectedBodyWords(body, raw, root)
	have := map[string]int{}
	var walk func(e *chunker.Element)
	walk = func(e *chunker.Element) {
		for _, c := range e.Children {
			for _, w := range corpus.Words(c.Title + " " + c.Text) {
				have[w]++
			}
			walk(c)
		}
	}
	walk(root)
	total, in := 0, 0
	for w, n := range want {
		if n <= 0 {
			continue
		}
		total += n
		in += min(n, have[w])
	}
	if total == 0 {
		return "-"
	}
	return fmt.Sprintf("%d / %d (%.2f%%)", in, total, 100*float64(in)/float64(total))
}

// chunkCoverage is the share of leaf words found in a chunk covering the leaf.
func chunkCoverage(d parsedDoc) string {
	covered := map[string]map[string]bool{}
	for _, c := range d.chunks {
		for _, e := range c.Elements {
			if covered[e] == nil {
				covered[e] = map[string]bool{}
			}
			for _, w := range corpus.Words(c.Text) {
				covered[e][w] = true
			}
		}
	}
	total, in := 0, 0
	var walk func(e *chunker.Element, path string)
	walk = func(e *chunker.Element, path string) {
		for _, c := range e.Children {
			p := path + chunker.PathSep + c.Address
			if len(c.Children) > 0 {
				walk(c, p)
				continue
			}
			for _, w := range corpus.Words(c.Text) {
				total++
				if covered[p][w] {
					in++
				}
			}
		}
	}
	walk(d.root, d.name)
	if total == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f%%", 100*float64(in)/float64(total))
}
