package api

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
)

// The outcome, failure and event series are counted from the ledger, not
// in the process that routed: in the shipped deployment (serve --no-worker
// beside any number of workers on any number of hosts) the workers have no
// /metrics of their own, and a dead letter must still move
// lazaret_failures_total on serve's. Every serve replica reads the same
// ledger, so each reports the same totals (aggregate with max, not sum),
// and a restart loses nothing: the counters start where the ledger is.

// ledgerSeries counts the ledger's events by their labels, reading only
// what was appended since the last read.
type ledgerSeries struct {
	l   premis.Ledger
	log *slog.Logger

	mu       sync.Mutex
	ready    bool  // the first read reached the ledger's end
	last     int64 // seq of the last event counted
	failures map[[3]string]float64
	outcomes map[[2]string]float64
	events   map[[2]string]float64
	errs     map[string]float64 // routing and ledger failure codes
	onNew    []func(premis.Event)
}

var (
	failuresDesc = prometheus.NewDesc("lazaret_failures_total", "Failures routed, by class, destination and kind, as the ledger records them.",
		[]string{"class", "destination", "kind"}, nil)
	outcomesDesc = prometheus.NewDesc("lazaret_outcomes_total", "Routing decisions and operator actions, by destination and kind (accept included; a message accepted in a chunk counts one), as the ledger records them.",
		[]string{"destination", "kind"}, nil)
	eventsDesc = prometheus.NewDesc("lazaret_events_total", "PREMIS events in the ledger, by event type and outcome.", []string{"type", "outcome"}, nil)
	codesDesc  = prometheus.NewDesc("lazaret_routing_failures_total", "Items that could not be routed (routing.*: the ledger or the broker failed at the decision; routing.exhausted: the routing budget was spent and the item dead-lettered), as the ledger records them.",
		[]string{"code"}, nil)
	seriesReady = prometheus.NewDesc("lazaret_ledger_series_ready", "1 once the ledger-derived counters have read the whole ledger (they are absent before).", nil, nil)
	seriesSeq   = prometheus.NewDesc("lazaret_ledger_seq", "The seq of the newest event the ledger-derived counters have read.", nil, nil)
)

func newLedgerSeries(l premis.Ledger) *ledgerSeries {
	s := &ledgerSeries{l: l, failures: map[[3]string]float64{}, outcomes: map[[2]string]float64{}, events: map[[2]string]float64{},
		errs: map[string]float64{"routing.exhausted": 0}}
	// Every series from the start, at 0: a counter born at 1 shows no
	// increase, and an alert on increase() would miss the first arrival.
	// The kinds a task can have (a registered item kind, or "task": one
	// that never decoded), asked for now: every kind has registered by the
	// time a ledger is served.
	for _, kind := range ingest.ItemKinds() {
		for _, d := range premis.Destinations() {
			s.outcomes[[2]string{string(d), kind}] = 0
		}
		for _, d := range []premis.Destination{premis.Retry, premis.DeadLetter, premis.Quarantined, premis.AuditHold} {
			for _, c := range premis.Classes() {
				s.failures[[3]string{string(c), string(d), kind}] = 0
			}
		}
	}
	return s
}

// count adds one event to the series.
func (s *ledgerSeries) count(e premis.Event) {
	s.events[[2]string{string(e.Type), string(e.Outcome)}]++
	kind := e.Kind
	if kind == "" {
		kind = "unknown"
	}
	switch {
	case e.Type == premis.Ingestion && len(e.Members) > 0:
		// A chunk's ing event accepts each of its messages.
		s.outcomes[[2]string{string(premis.Accepted), kind}] += float64(len(e.Members))
	case e.Destination != "" && e.Destination != premis.Submitted && e.Kind != "batch":
		s.outcomes[[2]string{string(e.Destination), kind}]++
	}
	if e.Outcome == premis.Failure && e.Class != "" && e.Destination != "" {
		s.failures[[3]string{string(e.Class), string(e.Destination), kind}]++
	}
	if len(e.Code) > len("routing.") && e.Code[:len("routing.")] == "routing." && e.Outcome == premis.Failure {
		s.errs[e.Code]++
	}
}

// catchUp reads the events appended since the last read. Events read
// after the first catch-up are new: they go to the onNew hooks (alerts).
func (s *ledgerSeries) catchUp(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	wasReady := s.ready
	var fresh []premis.Event
	err := premis.EachEvent(ctx, s.l, premis.Filter{AfterSeq: s.last}, func(e premis.Event) error {
		s.count(e)
		s.last = e.Seq
		if wasReady && len(s.onNew) > 0 && e.Outcome == premis.Failure {
			fresh = append(fresh, e)
		}
		return nil
	})
	if err == nil {
		s.ready = true
	}
	for _, e := range fresh {
		for _, fn := range s.onNew {
			fn(e)
		}
	}
	return err
}

func (s *ledgerSeries) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{failuresDesc, outcomesDesc, eventsDesc, codesDesc, seriesReady, seriesSeq} {
		ch <- d
	}
}

// Collect reads what is new (within a few seconds; a slow ledger gives
// the last counts) and reports every series.
func (s *ledgerSeries) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.catchUp(ctx); err != nil && s.log != nil {
		s.log.Warn("metrics: the ledger could not be read; the counters stay where they were", slog.String("error", err.Error()))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ready := 0.0
	if s.ready {
		ready = 1
	}
	ch <- prometheus.MustNewConstMetric(seriesReady, prometheus.GaugeValue, ready)
	ch <- prometheus.MustNewConstMetric(seriesSeq, prometheus.GaugeValue, float64(s.last))
	if !s.ready {
		return // a partial count would look like a burst of arrivals
	}
	for k, v := range s.failures {
		ch <- prometheus.MustNewConstMetric(failuresDesc, prometheus.CounterValue, v, k[0], k[1], k[2])
	}
	for k, v := range s.outcomes {
		ch <- prometheus.MustNewConstMetric(outcomesDesc, prometheus.CounterValue, v, k[0], k[1])
	}
	for k, v := range s.events {
		ch <- prometheus.MustNewConstMetric(eventsDesc, prometheus.CounterValue, v, k[0], k[1])
	}
	for k, v := range s.errs {
		ch <- prometheus.MustNewConstMetric(codesDesc, prometheus.CounterValue, v, k)
	}
}

// Tail reads the ledger every period until ctx ends, so that the onNew
// hooks (alerts) hear of new failures without waiting for a scrape.
func (m *Metrics) Tail(ctx context.Context, every time.Duration) {
	if m.ledger == nil {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := m.ledger.catchUp(ctx); err != nil && ctx.Err() == nil && m.ledger.log != nil {
			m.ledger.log.Warn("metrics: the ledger could not be read", slog.String("error", err.Error()))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// OnFailure calls fn for every failure event appended to the ledger after
// the counters first read it to its end (not for the history before).
func (m *Metrics) OnFailure(fn func(premis.Event)) {
	if m.ledger == nil {
		return
	}
	m.ledger.mu.Lock()
	defer m.ledger.mu.Unlock()
	m.ledger.onNew = append(m.ledger.onNew, fn)
}
