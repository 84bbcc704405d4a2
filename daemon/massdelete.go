package daemon

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// allowMassDeleteSuffix marks a mode whose run may delete more than the
// pipeline's max_delete_ratio of its records (pipeline.Mode.AllowMassDelete).
// It is carried in the mode text, as the API shows a job's mode
// ("incremental+allow-mass-delete"); a job's SyncArgs keep it apart
// (AllowMassDelete).
const allowMassDeleteSuffix = "+allow-mass-delete"

// WithAllowMassDelete returns m marked as confirming a mass delete, as
// POST /api/pipelines/{name}/sync?allow_mass_delete=true asks.
func (m Mode) WithAllowMassDelete() Mode {
	if m.AllowsMassDelete() {
		return m
	}
	return m + allowMassDeleteSuffix
}

// AllowsMassDelete reports whether m confirms a mass delete.
func (m Mode) AllowsMassDelete() bool {
	return strings.HasSuffix(string(m), allowMassDeleteSuffix)
}

// Base returns m without the mass-delete confirmation: one of the Mode
// constants for a mode that ParseMode accepted.
func (m Mode) Base() Mode {
	return Mode(strings.TrimSuffix(string(m), allowMassDeleteSuffix))
}

// withAllow adds the confirmation when allow is set.
func (m Mode) withAllow(allow bool) Mode {
	if allow {
		return m.WithAllowMassDelete()
	}
	return m
}

// withMassDeleteParam applies the query parameter allow_mass_delete
// (strconv.ParseBool: true, 1, false, 0, ...; absent = false) to mode.
func withMassDeleteParam(mode Mode, q url.Values) (Mode, error) {
	v := q.Get("allow_mass_delete")
	if v == "" {
		return mode, nil
	}
	allow, err := strconv.ParseBool(v)
	if err != nil {
		return mode, fmt.Errorf("allow_mass_delete %q: want true or false", v)
	}
	return mode.withAllow(allow), nil
}
