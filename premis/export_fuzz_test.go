package premis_test

import (
	"bytes"
	"encoding/xml"
	"io"
	"testing"
	"time"

	"github.com/lazaret/lazaret/premis"
)

// FuzzExport: whatever a ledger holds, every export (premis:premis, for
// Archivematica, METS) is well-formed XML and nothing panics.
func FuzzExport(f *testing.F) {
	f.Add("master-1", "scans/m 1.tif", "fix", "suc", "lazaret/0.9", "ana", `{"rel":"a/b.tif","manifest":{"sha256":"ab","size":3}}`, "x<y>&\"z'", int64(3616))
	f.Add("inv#M1", "", "qua", "fai", "", "", `{"manifest":{"size":-1}}`, "\x00\x01\xff", int64(-1))
	f.Add("a/", "../../x/", "del", "war", "noslash", "\u2028", `not json`, "]]>", int64(0))
	f.Fuzz(func(t *testing.T, obj, rel, typ, outcome, agent, operator, envelope, text string, size int64) {
		at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
		e := premis.Event{ID: text, Type: premis.EventType(typ), DateTime: at, Outcome: premis.Outcome(outcome), ObjectID: obj, BatchID: text,
			Kind: text, SHA256: text, Size: size, PUID: text, Path: rel, Detail: text, Note: text, Message: text, Code: text,
			Agent: agent, Operator: operator, Envelope: []byte(envelope), Class: premis.Class(text), Destination: premis.Destination(text),
			Members: []premis.Member{{ObjectID: obj + "#" + text, Type: text}}}
		e.Tag = text
		second := e
		second.ID, second.Members, second.Kind = "second", nil, "batch"
		for _, opt := range []premis.ExportOptions{{}, {Archivematica: true, Organisation: text}, {METS: true, Organisation: text}} {
			var buf bytes.Buffer
			if err := premis.WriteXMLOptions(&buf, []premis.Event{e, second}, premis.Software{Name: "lazaret", Version: text}, opt); err != nil {
				continue // nothing to export (only a batch's events, for Archivematica)
			}
			dec := xml.NewDecoder(&buf)
			for {
				_, err := dec.Token()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("METS %v Archivematica %v: not well-formed: %v\n%s", opt.METS, opt.Archivematica, err, buf.String())
				}
			}
		}
	})
}
