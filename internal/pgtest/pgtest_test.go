package pgtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// schemaExists reports whether the schema is in the test database.
func schemaExists(t *testing.T, name string) bool {
	t.Helper()
	var ok bool
	require.NoError(t, Connect(t).QueryRow(context.Background(),
		`SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, name).Scan(&ok))
	return ok
}

func TestSchemaCreatedAndDropped(t *testing.T) {
	var name string
	t.Run("inner", func(t *testing.T) {
		_, name = Schema(t)
		require.True(t, schemaExists(t, name))
		_, other := Schema(t)
		require.NotEqual(t, name, other, "each call gets its own schema")
	})
	require.False(t, schemaExists(t, name), "dropped when the test ended")
}

func TestSweepDropsOnlyStaleSchemas(t *testing.T) {
	conn := Connect(t)
	ctx := context.Background()
	now := time.Now()
	// pid 0 never belongs to a running test binary.
	stale := fmt.Sprintf("%s%d_0_1", schemaPrefix, now.Add(-2*time.Hour).Unix())
	young := fmt.Sprintf("%s%d_0_1", schemaPrefix, now.Add(-50*time.Minute).Unix())
	odd := schemaPrefix + "not_a_time"
	for _, s := range []string{stale, young, odd} {
		_, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+s)
		require.NoError(t, err)
		t.Cleanup(func() { _, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+s) })
	}
	require.NoError(t, sweep(ctx, conn, now))
	require.False(t, schemaExists(t, stale), "two hours old: dropped")
	require.True(t, schemaExists(t, young), "under an hour old: kept")
	require.True(t, schemaExists(t, odd), "no start time in the name: kept")
}

func TestSchemaStart(t *testing.T) {
	got, ok := schemaStart("kgsync_test_1700000000_42_7")
	require.True(t, ok)
	require.Equal(t, int64(1700000000), got.Unix())
	for _, bad := range []string{"public", "kgsync_test_", "kgsync_test_x_1_2", "kgsync_test_17"} {
		_, ok := schemaStart(bad)
		require.False(t, ok, bad)
	}
}
