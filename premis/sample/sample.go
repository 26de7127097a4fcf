// Package sample makes events shaped like those the worker records, for
// benchmarks of the ledgers (tests, and lazaret bench on a user's machine).
package sample

import (
	"fmt"

	"github.com/lazaret/lazaret/premis"
)

// AcceptedMaster returns the four events a worker records for the n-th
// accepted TIFF master of a batch (fixity, format, validation,
// ingestion), with fields shaped like a real item's: hashed correlation
// and keys, a UUID task id, a path and the detail texts.
func AcceptedMaster(n int64) []*premis.Event {
	obj := fmt.Sprintf("master-%07d", n)
	corr := premis.EventKey("batch-bench", obj, "corr", 0)
	sha := premis.EventKey(obj, "payload", "sha", 0)
	task := fmt.Sprintf("%08x-1c2d-4e5f-8a9b-%012x", n*2654435761%(1<<32), n)
	evs := make([]*premis.Event, 0, 4)
	for _, t := range []struct {
		typ          premis.EventType
		detail, note string
		dest         premis.Destination
	}{
		{premis.FixityCheck, "SHA-256 of the file compared with the manifest", "sha256 " + sha, ""},
		{premis.FormatIdentification, "magic bytes, extension and declared format (PRONOM)", "tiff (fmt/353)", ""},
		{premis.Validation, "TIFF structure of every IFD and pixel data of every page (lazaret/0.9.0)", "1 page(s), 1 checked to the pixel data", ""},
		{premis.Ingestion, "accepted into the repository by lazaret", "", premis.Accepted},
	} {
		evs = append(evs, &premis.Event{
			Key: premis.EventKey(corr, sha, t.typ, 1), Type: t.typ, Outcome: premis.Success, Detail: t.detail, Note: t.note,
			Destination: t.dest, ObjectID: obj, BatchID: "batch-bench", CorrelationID: corr, Kind: "tiff", SHA256: sha,
			Size: 4321, PUID: "fmt/353", Path: "/srv/ingest/batch-bench/" + obj + ".tif", Attempt: 1, TaskID: task,
			Agent: "lazaret/0.9.0",
		})
	}
	return evs
}
