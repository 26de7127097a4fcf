// Package api is Lazaret's HTTP face: the JSON API under /v1/, health
// checks, Prometheus metrics and dead-letter alerts. It acts through
// ingest.Operator; the broker stays behind that seam.
package api

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/lazaret/lazaret/ingest"
)

// Metrics are Lazaret's Prometheus series: those counted from the ledger
// (outcomes, failures, events: see ledgerSeries), the broker's queues read
// at scrape time, and what this process itself does (processing time,
// alerts).
type Metrics struct {
	Registry   *prometheus.Registry
	ledger     *ledgerSeries
	duration   *prometheus.HistogramVec
	alertsSent *prometheus.CounterVec
	alertsDrop prometheus.Counter
	// This process's ledger appends (see ObserveAppend).
	appends       *prometheus.CounterVec
	appendSeconds prometheus.Histogram
	// What this process's reconciliations repaired (ObserveReconcile).
	repairs *prometheus.CounterVec
	// The broker's maxmemory-policy as read at start (ObserveEvictionPolicy).
	eviction *prometheus.GaugeVec
}

// ObserveEvictionPolicy records the broker's maxmemory-policy as a worker
// read it at start ("unknown" when it could not): the series with that
// policy is 1, any other this process reported before is removed.
func (m *Metrics) ObserveEvictionPolicy(policy string) {
	m.eviction.Reset()
	m.eviction.WithLabelValues(policy).Set(1)
}

// repairKinds are the repairs of a reconciliation, as the metric labels them.
var repairKinds = []string{"archived_recorded", "reenqueued", "reparked", "stale_parked", "rearchived", "missing",
	"ledger_behind", "broker_lost", "deduplicated"}

// ObserveReconcile counts what one reconciliation repaired, by kind
// (Operator.Repaired): each is a broker write the ledger had to put back.
func (m *Metrics) ObserveReconcile(rep *ingest.ReconcileReport) {
	for kind, items := range map[string][]string{"archived_recorded": rep.ArchivedRecorded, "reenqueued": rep.Reenqueued, "reparked": rep.Reparked,
		"stale_parked": rep.StaleParked, "rearchived": rep.Rearchived, "missing": rep.Missing,
		"ledger_behind": rep.LedgerBehind, "broker_lost": rep.BrokerLost, "deduplicated": rep.Deduplicated} {
		m.repairs.WithLabelValues(kind).Add(float64(len(items)))
	}
}

// NewMetrics registers the series: with ops, the ledger's counts and the
// queue depths, read on each scrape; and Go and process collectors.
func NewMetrics(ops *ingest.Operator) *Metrics {
	m := &Metrics{Registry: prometheus.NewRegistry()}
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lazaret_processing_seconds",
		Help: "Time from task start to routing decision, in this process's workers.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 14)}, []string{"kind", "destination"})
	m.alertsSent = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lazaret_alerts_total",
		Help: "Webhook alerts, by result (sent, failed)."}, []string{"result"})
	m.alertsDrop = prometheus.NewCounter(prometheus.CounterOpts{Name: "lazaret_alerts_dropped_total",
		Help: "Alerts not sent because the alert queue was full or the rate limit held them back too long."})
	m.appends = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lazaret_ledger_appends_total", Help: appendsDesc}, []string{"result"})
	for _, r := range []string{"ok", "busy", "tampered", "canceled", "error"} {
		m.appends.WithLabelValues(r) // at 0 from the start, like the failure series
	}
	m.appendSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "lazaret_ledger_append_seconds",
		Help: "Time of one ledger append by this process (a group commit's wait and fsync included).", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)})
	m.repairs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lazaret_reconcile_repairs_total",
		Help: "Items this process's broker reconciliations repaired from the ledger, by repair: archived_recorded (an archived task recorded), reenqueued (a lost task enqueued again), reparked, stale_parked (removed), rearchived, missing (a dead letter the broker no longer holds, reported), ledger_behind (a task the broker completed whose outcome the ledger lacks: run again), broker_lost (a task the broker lost or left where no worker takes it), deduplicated (an id listed twice, cut to one)."}, []string{"repair"})
	for _, k := range repairKinds {
		m.repairs.WithLabelValues(k)
	}
	m.eviction = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "lazaret_redis_maxmemory_policy",
		Help: "The broker Redis's maxmemory-policy as this process's workers read it at start (1 for the policy read; \"unknown\" when CONFIG GET was refused). Anything but noeviction loses tasks silently under memory pressure."}, []string{"policy"})
	m.Registry.MustRegister(m.duration, m.alertsSent, m.alertsDrop, m.appends, m.appendSeconds, m.repairs, m.eviction,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if ops != nil && ops.Ledger != nil {
		m.ledger = newLedgerSeries(ops.Ledger)
		m.ledger.log = ops.Logger
		m.Registry.MustRegister(m.ledger)
	}
	if ops != nil && ops.Broker != nil {
		m.Registry.MustRegister(&queueCollector{ops: ops})
	}
	return m
}

// Observe is the ingest.Worker Observe hook of the workers serve runs
// itself: their processing time. What they decided is counted from the
// ledger, like every other worker's.
func (m *Metrics) Observe(d ingest.Observation) {
	if d.Redone {
		return // counted when it was decided
	}
	kind := d.Kind
	if kind == "" {
		kind = "unknown"
	}
	m.duration.WithLabelValues(kind, string(d.Destination)).Observe(d.Duration.Seconds())
}

var queueDepth = prometheus.NewDesc("lazaret_queue_depth", "Tasks in Lazaret's queues by state (archived = the dead-letter queue).",
	[]string{"queue", "state"}, nil)

var (
	queueLatency   = prometheus.NewDesc("lazaret_queue_latency_seconds", "Age of the oldest pending task (asynq).", []string{"queue"}, nil)
	queueProcessed = prometheus.NewDesc("lazaret_queue_processed_total", "Tasks processed since the queue was created (asynq).", []string{"queue"}, nil)
	queueFailed    = prometheus.NewDesc("lazaret_queue_failed_total", "Task attempts that failed since the queue was created (asynq).", []string{"queue"}, nil)
	queueMemory    = prometheus.NewDesc("lazaret_queue_memory_bytes", "Redis memory used by the queue (asynq's estimate).", []string{"queue"}, nil)
	queuePaused    = prometheus.NewDesc("lazaret_queue_paused", "1 when the queue is paused.", []string{"queue"}, nil)
)

var brokerUp = prometheus.NewDesc("lazaret_broker_up", "1 when the broker answered the last scrape.", nil, nil)

// queueCollector reads queue depths from the broker at scrape time.
type queueCollector struct{ ops *ingest.Operator }

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{queueDepth, brokerUp, queueLatency, queueProcessed, queueFailed, queueMemory, queuePaused} {
		ch <- d
	}
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	stats, err := c.ops.Stats()
	up := 1.0
	if err != nil {
		up = 0
	}
	ch <- prometheus.MustNewConstMetric(brokerUp, prometheus.GaugeValue, up)
	for _, s := range stats {
		paused := 0.0
		if s.Paused {
			paused = 1
		}
		ch <- prometheus.MustNewConstMetric(queueLatency, prometheus.GaugeValue, s.LatencySeconds, s.Queue)
		ch <- prometheus.MustNewConstMetric(queueProcessed, prometheus.CounterValue, float64(s.ProcessedTotal), s.Queue)
		ch <- prometheus.MustNewConstMetric(queueFailed, prometheus.CounterValue, float64(s.FailedTotal), s.Queue)
		ch <- prometheus.MustNewConstMetric(queueMemory, prometheus.GaugeValue, float64(s.MemoryBytes), s.Queue)
		ch <- prometheus.MustNewConstMetric(queuePaused, prometheus.GaugeValue, paused, s.Queue)
		for state, n := range map[string]int{"pending": s.Pending, "active": s.Active, "scheduled": s.Scheduled, "retry": s.Retry, "archived": s.Archived} {
			ch <- prometheus.MustNewConstMetric(queueDepth, prometheus.GaugeValue, float64(n), s.Queue, state)
		}
	}
}
