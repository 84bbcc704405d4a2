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
// ReadMigrations gives them) above applied, the highest version a database
// records. A database at a version above the last of ms was migrated by a
// newer build; that is an error naming both versions, and nothing is
// pending.
func Pending(ms []Migration, applied int64) ([]Migration, error) {
	if len(ms) > 0 {
		if last := ms[len(ms)-1].Version; applied > last {
			return nil, fmt.Errorf("at version %d, newer than this build's %d", applied, last)
		}
	}
	i := sort.Search(len(ms), func(i int) bool { return ms[i].Version > applied })
	return ms[i:], nil
}
