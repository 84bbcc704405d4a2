package pipeline

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kgsync/kgsync/config"
)

// CheckRefs reports, for `kgsync validate`, references to tables no source
// of pc (at config path path, "pipelines[i]") provides: a CSV column typed
// ref:<table> or reflist:<table>, an http link's anchor, and a model
// link's `to` (which may also name a model anchor). Such a reference would
// only ever reach placeholder nodes. Nothing is reported when a source may
// provide tables it does not list (a Grist source reading every table,
// offline). Each message starts with the config path of the reference.
func CheckRefs(pc *config.Pipeline, path string, have []SourceTables) []string {
	tables := map[string]bool{}
	for _, st := range have {
		if st.Any {
			return nil
		}
		for t := range st.Tables {
			tables[t] = true
		}
	}
	names := strings.Join(slices.Sorted(maps.Keys(tables)), ", ")
	var out []string
	for j, s := range pc.Sources {
		at := fmt.Sprintf("%s.sources[%d]", path, j)
		if c := s.CSV; c != nil {
			for k, t := range c.Tables {
				for _, col := range slices.Sorted(maps.Keys(t.Columns)) {
					typ := t.Columns[col]
					base, target, ok := strings.Cut(typ, ":")
					if ok && (base == "ref" || base == "reflist") && !tables[target] {
						out = append(out, fmt.Sprintf("%s.csv.tables[%d].columns[%q]: %s names no table of the pipeline (tables: %s)",
							at, k, col, typ, names))
					}
				}
			}
		}
		if h := s.HTTP; h != nil {
			for _, name := range slices.Sorted(maps.Keys(h.Links)) {
				if a := h.Links[name].Anchor; !tables[a] {
					out = append(out, fmt.Sprintf("%s.http.links[%q].anchor: %q names no table of the pipeline (tables: %s)", at, name, a, names))
				}
			}
		}
	}
	if m := pc.Model; m != nil {
		anchors := map[string]bool{}
		for _, a := range m.Anchors {
			anchors[a.Name] = true
		}
		for i, a := range m.Anchors {
			for k, l := range a.Links {
				if l.To != "" && !anchors[l.To] && !tables[l.To] {
					out = append(out, fmt.Sprintf("%s.model.anchors[%d].links[%d].to: %q is no anchor of the model and no table of the pipeline (tables: %s)",
						path, i, k, l.To, names))
				}
			}
		}
	}
	return out
}
