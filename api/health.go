package api

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lazaret/lazaret/premis"
)

// What /readyz says, and the ledger's own health, as series: an alert can
// fire on a ledger that stopped answering or stopped verifying, not only
// on the probe.

var (
	readyDesc = prometheus.NewDesc("lazaret_ready", "1 when the component answered the last scrape (what /readyz checks): broker, ledger.",
		[]string{"component"}, nil)
	intactDesc = prometheus.NewDesc("lazaret_ledger_intact", "1 when the ledger passed its last (incremental) verification, 0 when it failed; absent when serve does not verify.",
		nil, nil)
	checkpointAge = prometheus.NewDesc("lazaret_ledger_checkpoint_age_seconds", "Seconds since the newest signed checkpoint of the ledger's head; absent when there is none.",
		nil, nil)
	appendsDesc = "Ledger appends by this process, by result: ok, busy (the ledger was locked), tampered (a guard refused it), canceled, error."
)

// healthCollector reads the broker, the ledger and the verifier at scrape
// time.
type healthCollector struct {
	ping     func(context.Context) error // the ledger's
	broker   func() error
	verifier LedgerChecker
}

func (c *healthCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{readyDesc, intactDesc, checkpointAge} {
		ch <- d
	}
}

func (c *healthCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	up := func(err error) float64 {
		if err != nil {
			return 0
		}
		return 1
	}
	if c.broker != nil {
		ch <- prometheus.MustNewConstMetric(readyDesc, prometheus.GaugeValue, up(c.broker()), "broker")
	}
	if c.ping != nil {
		ch <- prometheus.MustNewConstMetric(readyDesc, prometheus.GaugeValue, up(c.ping(ctx)), "ledger")
	}
	if c.verifier == nil {
		return
	}
	if v, err := c.verifier.Check(ctx); err == nil {
		ch <- prometheus.MustNewConstMetric(intactDesc, prometheus.GaugeValue, up(errorIf(!v.Intact())))
	}
	if s, ok := c.verifier.(interface{ Signed() time.Time }); ok {
		if at := s.Signed(); !at.IsZero() {
			ch <- prometheus.MustNewConstMetric(checkpointAge, prometheus.GaugeValue, time.Since(at).Seconds())
		}
	}
}

var errNotIntact = errors.New("not intact")

func errorIf(b bool) error {
	if b {
		return errNotIntact
	}
	return nil
}

// WatchHealth adds the readiness and ledger-health series: the broker and
// the ledger as /readyz sees them, and, with a verifier, whether the
// ledger is intact and how old its newest checkpoint is.
func (m *Metrics) WatchHealth(ping func(context.Context) error, broker func() error, verifier LedgerChecker) {
	m.Registry.MustRegister(&healthCollector{ping: ping, broker: broker, verifier: verifier})
}

// ObserveAppend counts one ledger append of this process and its time.
func (m *Metrics) ObserveAppend(took time.Duration, err error) {
	result := "ok"
	switch {
	case err == nil:
	case errors.Is(err, premis.ErrBusy):
		result = "busy"
	case errors.Is(err, premis.ErrTampered):
		result = "tampered"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		result = "canceled"
	default:
		result = "error"
	}
	m.appends.WithLabelValues(result).Inc()
	m.appendSeconds.Observe(took.Seconds())
}
