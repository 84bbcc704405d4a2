package daemon

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/state"
)

// TestMissedFiringIsFiredOnce: a schedule firing that passed with no River
// leader to insert it (a takeover takes 10–22 s) was lost. The watch loop
// finds it overdue and not recorded, and fires it once.
func TestMissedFiringIsFiredOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{pipelines: []config.Pipeline{{Name: "p", Schedule: "0 10 * * *", TimeZone: "UTC"}},
		daemon: config.Daemon{PollInterval: 10 * time.Minute}})
	// The last firing recorded was yesterday's; today's 10:00 passes while
	// River inserts nothing (its periodic jobs follow the real clock).
	require.NoError(t, b.d.recordFiring(context.Background(), "p", time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)))
	b.clock.waitTimers(t, 1)          // the watch loop
	b.clock.Advance(10 * time.Minute) // 10:08
	c := b.nextCall(t)
	require.Equal(t, state.TriggerCron, c.trigger)
	b.settled(t)
	raw, err := b.store.CursorGet(context.Background(), "p", scheduleCursor)
	require.NoError(t, err)
	require.Equal(t, "2026-03-02T10:00:00Z", raw, "the firing is recorded")

	b.clock.waitTimers(t, 1)
	b.clock.Advance(10 * time.Minute) // 10:18: nothing more is due
	b.noCall(t, 300*time.Millisecond)
}

// TestScheduleJobRecordsItsFiring: a schedule job records the firing it
// stands for (its ScheduledAt), not the replica's clock at work time: a
// clock behind the database's recorded a time before the firing, and the
// watch loop fired that firing a second time.
func TestScheduleJobRecordsItsFiring(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{pipelines: []config.Pipeline{{Name: "p", Schedule: "0 10 * * *", TimeZone: "UTC"}},
		daemon: config.Daemon{PollInterval: time.Hour}})
	firing := b.clock.Now().Add(time.Minute).UTC() // the replica's clock is a minute behind
	job := &river.Job[ScheduleArgs]{JobRow: &rivertype.JobRow{ScheduledAt: firing}, Args: ScheduleArgs{Pipeline: "p"}}
	require.NoError(t, (&scheduleWorker{d: b.d}).Work(context.Background(), job))
	require.Equal(t, state.TriggerCron, b.nextCall(t).trigger)
	raw, err := b.store.CursorGet(context.Background(), "p", scheduleCursor)
	require.NoError(t, err)
	require.Equal(t, firing.Format(time.RFC3339Nano), raw)
}
