package api

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"golang.org/x/time/rate"

	"github.com/lazaret/lazaret/premis"
)

// Alert is what the webhook receives for every arrival in the dead-letter
// queue, quarantine or audit-hold.
type Alert struct {
	EventID       string             `json:"event_id"`
	ObjectID      string             `json:"object_id"`
	BatchID       string             `json:"batch_id"`
	CorrelationID string             `json:"correlation_id"`
	Kind          string             `json:"kind"`
	Class         premis.Class       `json:"class"`
	Code          string             `json:"code"`
	Destination   premis.Destination `json:"destination"`
	Offset        *int64             `json:"offset"`
	Page          *int               `json:"page,omitempty"`
	Segment       int                `json:"segment,omitempty"`
	Attempt       int                `json:"attempt"`
	Message       string             `json:"message"`
	At            time.Time          `json:"at"`
}

// Alerter POSTs alerts to a webhook from its own goroutine: rate-limited,
// retried with exponential backoff, and never blocking the worker (a full
// queue drops the alert and counts it; the failure itself is in the ledger
// and the log regardless).
type Alerter struct {
	URL string
	// Secret, when set, signs every body: header X-Lazaret-Signature is
	// "sha256=" + hex(HMAC-SHA256(Secret, body)), so the receiver can tell
	// Lazaret's alerts from anyone else's POSTs.
	Secret  string
	Limit   rate.Limit // alerts per second; 0 = 5
	Retries int        // per alert; 0 = 5
	Client  *http.Client
	Logger  *slog.Logger
	Metrics *Metrics

	// StopTimeout bounds Stop; what is still queued then is dropped and
	// counted. 0 means 10 s.
	StopTimeout time.Duration

	queue  chan Alert
	done   chan struct{}
	cancel context.CancelFunc
}

// Start begins delivering; Stop drains what is queued (bounded by ctx).
func (a *Alerter) Start(ctx context.Context) {
	if a.Limit == 0 {
		a.Limit = 5
	}
	if a.Retries == 0 {
		a.Retries = 5
	}
	if a.Client == nil {
		a.Client = &http.Client{Timeout: 10 * time.Second, CheckRedirect: sameHostOnly}
	}
	ctx, a.cancel = context.WithCancel(ctx)
	a.queue = make(chan Alert, 1024)
	a.done = make(chan struct{})
	lim := rate.NewLimiter(a.Limit, 1)
	go func() {
		defer close(a.done)
		for al := range a.queue {
			if err := lim.Wait(ctx); err != nil || ctx.Err() != nil {
				a.drop(al, "stopping")
				continue
			}
			a.deliver(ctx, al)
		}
	}()
}

// Stop closes the queue and waits for the sender to finish.
func (a *Alerter) Stop() {
	if a.queue == nil {
		return
	}
	close(a.queue)
	timeout := a.StopTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	select {
	case <-a.done:
	case <-time.After(timeout):
		a.cancel() // a hanging hook: what is left is dropped, and counted
		<-a.done
	}
	a.cancel()
}

// sameHostOnly refuses a webhook redirect to another host: the alert's
// body and signature must not follow it there.
func sameHostOnly(req *http.Request, via []*http.Request) error {
	if len(via) >= 3 {
		return errors.New("webhook: too many redirects")
	}
	if req.URL.Host != via[0].URL.Host {
		return fmt.Errorf("webhook: refused a redirect from %s to another host (%s)", via[0].URL.Host, req.URL.Host)
	}
	return nil
}

// ObserveEvent queues an alert for e when it is a failure that arrived in
// the dead-letter queue, quarantine or audit-hold (see Metrics.OnFailure:
// serve alerts on what the ledger records, whichever worker decided it).
func (a *Alerter) ObserveEvent(e premis.Event) {
	switch e.Destination {
	case premis.DeadLetter, premis.Quarantined, premis.AuditHold:
	default:
		return
	}
	al := Alert{EventID: e.ID, ObjectID: e.ObjectID, BatchID: e.BatchID, CorrelationID: e.CorrelationID, Kind: e.Kind, Class: e.Class,
		Code: e.Code, Destination: e.Destination, Offset: e.Offset, Page: e.Page, Segment: e.Segment, Attempt: e.Attempt, Message: e.Message, At: e.DateTime}
	select {
	case a.queue <- al:
	default:
		a.drop(al, "alert queue full")
	}
}

func (a *Alerter) drop(al Alert, why string) {
	if a.Metrics != nil {
		a.Metrics.alertsDrop.Inc()
	}
	if a.Logger != nil {
		a.Logger.Warn("alert not sent", slog.String("event_id", al.EventID), slog.String("reason", why))
	}
}

func (a *Alerter) deliver(ctx context.Context, al Alert) {
	body, _ := json.Marshal(al)
	delay := 500 * time.Millisecond
	for try := 0; try <= a.Retries; try++ {
		err := a.post(ctx, body)
		if err == nil {
			if a.Metrics != nil {
				a.Metrics.alertsSent.WithLabelValues("sent").Inc()
			}
			return
		}
		if a.Logger != nil {
			a.Logger.Warn("alert webhook failed", slog.String("event_id", al.EventID), slog.Int("try", try+1), slog.String("error", err.Error()))
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(delay*2, 30*time.Second)
	}
	if a.Metrics != nil {
		a.Metrics.alertsSent.WithLabelValues("failed").Inc()
	}
}

func (a *Alerter) post(ctx context.Context, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if a.Secret != "" {
		req.Header.Set("X-Lazaret-Signature", Sign(a.Secret, body))
	}
	resp, err := a.Client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("webhook answered %s", resp.Status)
	}
	return nil
}

// Sign is the X-Lazaret-Signature value for body.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}
