package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/kgsync/kgsync/state"
)

// Missed schedule firings. River's leader inserts the periodic jobs of the
// schedules; while a new leader takes over (10–22 s after the old one
// died: River's leadership expires 15 s after its last renewal, renewed
// every 5 s, the other replicas bid every 5–6 s and the new leader's
// periodic-job enqueuer starts within 1 s) a firing can pass with no
// leader to insert it, and River does not insert it afterwards: the new
// leader computes each schedule's next firing from its own start (River
// v0.51.2 internal/leadership/elector.go:28-30, 441, 718-719;
// internal/maintenance/periodic_job_enqueuer.go:430; the standard pilot
// keeps no next firings, rivershared/riverpilot/standard_pilot.go:74-75). So each firing is recorded in state (the cursor
// entry scheduleCursor of the pipeline), and every replica's watch loop
// looks for a firing that is scheduleGrace overdue and not recorded: it
// queues that run once (a second replica doing the same joins the queued
// job) and records it.

// scheduleCursor is the cursor entry holding, as RFC 3339, when the
// pipeline's schedule last fired (state.Store.CursorGet).
const scheduleCursor = "_schedule"

// scheduleGrace is how long past its time a firing waits for River before
// the watch loop fires it itself.
const scheduleGrace = 15 * time.Second

// recordFiring stores t as the pipeline's last schedule firing.
func (d *Daemon) recordFiring(ctx context.Context, name string, t time.Time) error {
	err := d.store.Commit(ctx, state.Commit{Pipeline: name, Cursors: map[string]string{scheduleCursor: t.UTC().Format(time.RFC3339Nano)}})
	if err != nil {
		return fmt.Errorf("record schedule firing of %q: %w", name, err)
	}
	return nil
}

// lastDue returns the latest firing of s after after and at or before
// now; ok is false when there is none.
func lastDue(s cron.Schedule, after, now time.Time) (due time.Time, ok bool) {
	x := s.Next(after)
	if x.IsZero() || x.After(now) {
		return time.Time{}, false
	}
	for range 1 << 20 {
		n := s.Next(x)
		if n.IsZero() || n.After(now) || !n.After(x) {
			break
		}
		x = n
	}
	return x, true
}

// catchUp fires, once, each schedule firing that is overdue and was not
// recorded (see above). A pipeline without a recorded firing gets now
// recorded: a daemon's first start fires nothing it never promised.
func (d *Daemon) catchUp(ctx context.Context) {
	now := d.clock.Now()
	for _, name := range d.names {
		w := d.workers[name]
		if w.sched == nil {
			continue
		}
		raw, err := d.store.CursorGet(ctx, name, scheduleCursor)
		if err != nil {
			d.log.Warn("read schedule firing", slog.String("pipeline", name), slog.String("err", err.Error()))
			continue
		}
		last, perr := time.Parse(time.RFC3339Nano, raw)
		if raw == "" || perr != nil {
			if err := d.recordFiring(ctx, name, now); err != nil {
				d.log.Warn("record schedule firing", slog.String("err", err.Error()))
			}
			continue
		}
		due, ok := lastDue(zonedSchedule{w.sched, w.loc}, last, now.Add(-scheduleGrace))
		if !ok {
			continue
		}
		d.log.Warn("schedule firing missed (no River leader at the time?); firing it now",
			slog.String("pipeline", name), slog.Time("due", due))
		if _, err := d.enqueue(ctx, w, ModeIncremental, state.TriggerCron); err != nil {
			d.log.Error("queue missed scheduled run", slog.String("pipeline", name), slog.String("err", err.Error()))
			continue
		}
		if err := d.recordFiring(ctx, name, due); err != nil {
			d.log.Warn("record schedule firing", slog.String("err", err.Error()))
		}
	}
}
