package statetest

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/state"
	"github.com/kgsync/kgsync/state/sqlite"
)

// SQLite opens an empty, migrated SQLite state store in a temporary
// directory of tb, closed when tb ends: the state of a test or benchmark
// that needs a real store and not a particular one. It fails tb when the
// store does not open.
func SQLite(tb testing.TB) state.Store {
	tb.Helper()
	st, err := sqlite.Open(tb.Context(), filepath.Join(tb.TempDir(), "state.db"))
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = st.Close() })
	return st
}
