package daemon

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestModeCarriesMassDeleteConfirmation(t *testing.T) {
	t.Parallel()
	m, err := ParseMode("full+allow-mass-delete")
	require.NoError(t, err)
	require.Equal(t, ModeFull, m.Base())
	require.True(t, m.AllowsMassDelete())
	require.Equal(t, m, m.WithAllowMassDelete(), "marking twice changes nothing")

	m, err = ParseMode("+allow-mass-delete")
	require.NoError(t, err)
	require.Equal(t, ModeIncremental.WithAllowMassDelete(), m, `"" is incremental`)
	_, err = ParseMode("everything+allow-mass-delete")
	require.Error(t, err)

	// Merging: the base modes merge as before; the confirmation survives
	// when either trigger carried it, whichever side.
	allow := ModeIncremental.WithAllowMassDelete()
	require.Equal(t, ModeFull.WithAllowMassDelete(), allow.Merge(ModeRebuildGraph))
	require.Equal(t, ModeReembed.WithAllowMassDelete(), ModeReembed.Merge(allow))
	require.Equal(t, ModeReembed, ModeReembed.Merge(ModeIncremental))
}

func TestSyncAPIAllowMassDelete(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	code, body := b.do(t, "POST", "/api/pipelines/p/sync?mode=full&allow_mass_delete=maybe", "", nil)
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Contains(t, body, "allow_mass_delete")

	code, body = b.do(t, "POST", "/api/pipelines/p/sync?mode=full&allow_mass_delete=true", "", nil)
	require.Equal(t, http.StatusAccepted, code, body)
	var tr JobJSON
	require.NoError(t, json.Unmarshal([]byte(body), &tr))
	require.Equal(t, "full+allow-mass-delete", tr.Mode, "shown with the job")
	c := b.nextCall(t)
	require.Equal(t, ModeFull, c.mode.Base())
	require.True(t, c.mode.AllowsMassDelete(), "the runner is told")
	b.settled(t)

	code, body = b.do(t, "POST", "/api/pipelines/p/sync?mode=full&allow_mass_delete=false", "", nil)
	require.Equal(t, http.StatusAccepted, code, body)
	require.False(t, b.nextCall(t).mode.AllowsMassDelete())
}
