package state

import (
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

func TestReadMigrationsAndPending(t *testing.T) {
	fsys := fstest.MapFS{
		"m/002_b.up.sql":  {Data: []byte("B")},
		"m/001_a.up.sql":  {Data: []byte("A")},
		"m/010_c.up.sql":  {Data: []byte("C")},
		"m/notes.txt":     {Data: []byte("not matched")},
		"x/001_x.up.sql":  {Data: []byte("other dir")},
		"m/README.up.txt": {Data: []byte("not matched")},
	}
	ms, err := ReadMigrations(fsys, "m/*.up.sql")
	require.NoError(t, err)
	var versions []int64
	for _, m := range ms {
		versions = append(versions, m.Version)
	}
	require.Equal(t, []int64{1, 2, 10}, versions)
	require.Equal(t, "A", ms[0].SQL)

	for _, c := range []struct {
		applied, want []int64
	}{
		{nil, []int64{1, 2, 10}},
		{[]int64{1}, []int64{2, 10}},
		{[]int64{1, 2, 10}, nil},
		// 2 landed after 10 was applied: it is still pending.
		{[]int64{1, 10}, []int64{2}},
	} {
		got, err := Pending(ms, c.applied)
		require.NoError(t, err)
		var gv []int64
		for _, m := range got {
			gv = append(gv, m.Version)
		}
		require.Equal(t, c.want, gv, "applied %v", c.applied)
	}
	_, err = Pending(ms, []int64{1, 11})
	require.EqualError(t, err, "at version 11, which this build (last version 10) does not know")

	_, err = ReadMigrations(fstest.MapFS{"m/000_a.up.sql": {}}, "m/*.up.sql")
	require.EqualError(t, err, "migration m/000_a.up.sql: name must be NNN_name.up.sql with NNN > 0")
	_, err = ReadMigrations(fstest.MapFS{"m/1_a.up.sql": {}, "m/001_b.up.sql": {}}, "m/*.up.sql")
	require.EqualError(t, err, "migration m/1_a.up.sql: version 1 already used by m/001_b.up.sql")
}
