package state

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Migration is one versioned SQL migration file, NNN_name.up.sql.
type Migration struct {
	Version int64
	Name    string // file name, for errors
	SQL     string
}

// ReadMigrations returns the migrations matching pattern in fsys (a
// store's embedded migration/*.up.sql) ordered by version; a name that is
// not NNN_name.up.sql with NNN > 0, or a version used twice, is an error.
func ReadMigrations(fsys fs.FS, pattern string) ([]Migration, error) {
	names, err := fs.Glob(fsys, pattern)
	if err != nil {
		return nil, fmt.Errorf("list migrations: %w", err)
	}
	var out []Migration
	seen := map[int64]string{}
	for _, name := range names {
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.ParseInt(num, 10, 64)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must be NNN_name.up.sql with NNN > 0", name)
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("migration %s: version %d already used by %s", name, v, prev)
		}
		seen[v] = name
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", name, err)
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// Pending returns the migrations of ms (ordered by version, as
// ReadMigrations gives them) whose versions are not in applied, the
// versions a database records, in version order. A version landed below
// the highest applied one (migrations numbered by range, not by landing
// date) is still applied. A database recording a version ms does not
// have was migrated by a newer build; that is an error naming the
// version and this build's last, and nothing is pending.
func Pending(ms []Migration, applied []int64) ([]Migration, error) {
	known := make(map[int64]bool, len(ms))
	for _, m := range ms {
		known[m.Version] = true
	}
	done := make(map[int64]bool, len(applied))
	for _, v := range applied {
		if !known[v] {
			var last int64
			if len(ms) > 0 {
				last = ms[len(ms)-1].Version
			}
			return nil, fmt.Errorf("at version %d, which this build (last version %d) does not know", v, last)
		}
		done[v] = true
	}
	var out []Migration
	for _, m := range ms {
		if !done[m.Version] {
			out = append(out, m)
		}
	}
	return out, nil
}
