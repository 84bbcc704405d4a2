package daemon

import (
	"context"
	"errors"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kgsync/kgsync/state"
)

// VerifyFunc compares pipeline's graph with its state (`kgsync verify
// --sample -1`: counts and vector indexes) and returns the number of
// differences. ErrVerifySkipped means the pipeline cannot be verified (its
// sink writes files); state.ErrLocked that it is running.
type VerifyFunc func(ctx context.Context, pipeline string) (differences int, err error)

// ErrVerifySkipped is returned by a VerifyFunc for a pipeline it does not
// verify; the daemon then leaves kgsync_verify_differences unset for it.
var ErrVerifySkipped = errors.New("verify skipped")

func newVerifyGauge(reg prometheus.Registerer) (*prometheus.GaugeVec, error) {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "kgsync", Name: "verify_differences",
		Help: "Differences between the graph and state found by the last periodic verify (nodes, plus vector indexes)."},
		[]string{"pipeline"})
	if err := reg.Register(g); err != nil {
		return nil, err
	}
	return g, nil
}

// verifyLoop verifies every pipeline at start-up, then every
// VerifyInterval, until ctx is done. A pipeline that is running (locked)
// is verified at the next tick.
func (d *Daemon) verifyLoop(ctx context.Context) {
	for {
		for _, name := range d.names {
			if ctx.Err() != nil {
				return
			}
			d.verifyOne(ctx, name)
		}
		t := d.clock.NewTimer(d.cfg.VerifyInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

func (d *Daemon) verifyOne(ctx context.Context, name string) {
	log := d.log.With(slog.String("pipeline", name))
	n, err := d.verify(ctx, name)
	switch {
	case errors.Is(err, ErrVerifySkipped):
		log.Debug("verify skipped: the sink cannot be read back")
	case errors.Is(err, state.ErrLocked):
		log.Debug("verify skipped: the pipeline is running")
	case err != nil:
		if ctx.Err() == nil {
			log.Warn("verify failed", slog.String("err", err.Error()))
		}
	case n > 0:
		d.verifyGauge.WithLabelValues(name).Set(float64(n))
		log.Warn("graph differs from state; run kgsync verify "+name+" --repair", slog.Int("differences", n))
	default:
		d.verifyGauge.WithLabelValues(name).Set(0)
		log.Info("verify: the graph matches state")
	}
	if d.verified != nil {
		d.verified(name, n, err)
	}
}
