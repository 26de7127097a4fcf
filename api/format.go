package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/lazaret/lazaret/ingest"
	"github.com/lazaret/lazaret/premis"
)

// PayloadFormatter renders a task payload for asynqmon: the envelope as
// indented JSON under a header that says, from the ledger, where the item
// stands (class, code, destination, page or segment, byte offset).
func PayloadFormatter(l premis.Ledger) func(taskType string, payload []byte) string {
	return func(taskType string, payload []byte) string {
		var b strings.Builder
		switch taskType {
		case ingest.TypeHeld:
			var h ingest.Held
			if json.Unmarshal(payload, &h) == nil {
				fmt.Fprintf(&b, "%s\nclass: %s\ncode: %s\noffset: %s\n", strings.ToUpper(h.Destination), h.Class, h.Code, ptr64(h.Offset))
				if h.Page != nil {
					fmt.Fprintf(&b, "page: %d\n", *h.Page)
				}
				fmt.Fprintf(&b, "attempt: %d\nevent: %s\nmessage: %s\n", h.Attempt, h.EventID, h.Message)
			}
		case ingest.TypeValidate:
			if e, err := ingest.DecodeEnvelope(payload); err == nil {
				b.WriteString(ledgerSummary(l, e))
			} else {
				fmt.Fprintf(&b, "UNDECODABLE PAYLOAD: %v\n", err)
			}
		}
		var pretty bytes.Buffer
		if json.Indent(&pretty, payload, "", "  ") == nil {
			b.Write(pretty.Bytes())
		} else {
			fmt.Fprintf(&b, "%q", payload)
		}
		return b.String()
	}
}

func ledgerSummary(l premis.Ledger, env *ingest.Envelope) string {
	if l == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	evs, err := l.Events(ctx, premis.Filter{CorrelationID: env.CorrelationID})
	if err != nil || len(evs) == 0 {
		return fmt.Sprintf("%s (%s, batch %s): no ledger event yet\n", env.ObjectID, env.Kind, env.BatchID)
	}
	e := evs[len(evs)-1]
	if e.Outcome != premis.Failure {
		return fmt.Sprintf("%s: %s (%s) at attempt %d\n", env.ObjectID, e.Destination, e.Type, e.Attempt)
	}
	where := ""
	if e.Page != nil {
		where = fmt.Sprintf("page: %d\n", *e.Page)
	}
	if e.Segment > 0 {
		where = fmt.Sprintf("segment: %d\nelement: %d:%d\n", e.Segment, e.Element, e.Component)
	}
	return fmt.Sprintf("%s\nclass: %s\ncode: %s\noffset: %s\n%sattempt: %d\nevent: %s\nmessage: %s\n",
		strings.ToUpper(string(e.Destination)), e.Class, e.Code, ptr64(e.Offset), where, e.Attempt, e.ID, e.Message)
}

func ptr64(p *int64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}
