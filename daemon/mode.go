package daemon

import (
	"fmt"
	"strings"
)

// Mode is the variant of run a trigger asks for; a job keeps it in its
// SyncArgs, and the Runner maps it onto pipeline.Mode.
type Mode string

// Modes, as accepted by POST /api/pipelines/{name}/sync?mode=.
const (
	// ModeIncremental processes what changed (the default).
	ModeIncremental Mode = "incremental"
	// ModeFull ignores stored record hashes (resync --full).
	ModeFull Mode = "full"
	// ModeReembed ignores the embedding cache (resync --reembed).
	ModeReembed Mode = "reembed"
	// ModeRebuildGraph rewrites the graph from state without reading the
	// sources (resync --rebuild-graph).
	ModeRebuildGraph Mode = "rebuild-graph"
)

// ParseMode parses a mode name; "" is ModeIncremental. A name may end in
// "+allow-mass-delete" (see Mode.WithAllowMassDelete), as stored modes do.
func ParseMode(s string) (Mode, error) {
	base, allow := strings.CutSuffix(s, allowMassDeleteSuffix)
	switch m := Mode(base); m {
	case "":
		return ModeIncremental.withAllow(allow), nil
	case ModeIncremental, ModeFull, ModeReembed, ModeRebuildGraph:
		return m.withAllow(allow), nil
	default:
		return "", fmt.Errorf("unknown mode %q: want incremental, full, reembed or rebuild-graph", s)
	}
}

// rank orders modes by how much of the pipeline a run redoes.
func (m Mode) rank() int {
	switch m {
	case ModeRebuildGraph:
		return 1
	case ModeFull:
		return 2
	case ModeReembed:
		return 3
	default:
		return 0
	}
}

// Merge returns the strongest of m and o, the mode of one run serving
// both: incremental < rebuild-graph < full < reembed, except that
// incremental with rebuild-graph gives full, since a rebuild does not read
// the sources and would miss the incremental trigger's changes. The result
// allows a mass delete when either does.
func (m Mode) Merge(o Mode) Mode {
	return m.Base().mergeBase(o.Base()).withAllow(m.AllowsMassDelete() || o.AllowsMassDelete())
}

func (m Mode) mergeBase(o Mode) Mode {
	if (m == ModeIncremental && o == ModeRebuildGraph) || (m == ModeRebuildGraph && o == ModeIncremental) {
		return ModeFull
	}
	if o.rank() > m.rank() {
		return o
	}
	return m
}
