// Package sample makes events shaped like those the worker records, for
// benchmarks of the ledgers (tests, and lazaret bench on a user's machine).
package sample

import (
	"fmt"

	"github.com/lazaret/lazaret/premis"
)

// AcceptedMaster returns what a worker records for the n-th accepted TIFF
// master of a batch: one ingestion event holding the fixity check, format
// identification and validation as its steps (premis.Step), with fields
// shaped like a real item's: hashed correlation and keys, a UUID task id,
// a path and the detail texts.
func AcceptedMaster(n int64) []*premis.Event {
	obj := fmt.Sprintf("master-%07d", n)
	corr := premis.EventKey("batch-bench", obj, "corr", 0)
	sha := premis.EventKey(obj, "payload", "sha", 0)
	task := fmt.Sprintf("%08x-1c2d-4e5f-8a9b-%012x", n*2654435761%(1<<32), n)
	return []*premis.Event{{
		Key: premis.EventKey(corr, sha, premis.Ingestion, 1), Type: premis.Ingestion, Outcome: premis.Success,
		Detail: "accepted into the repository by lazaret", Destination: premis.Accepted,
		ObjectID: obj, BatchID: "batch-bench", CorrelationID: corr, Kind: "tiff", SHA256: sha,
		Size: 4321, PUID: "fmt/353", Path: "/srv/ingest/batch-bench/" + obj + ".tif", Attempt: 1, TaskID: task,
		Agent: "lazaret/0.9.0",
		Steps: []premis.Step{
			{Type: premis.FixityCheck, Outcome: premis.Success, Detail: "SHA-256 of the file compared with the manifest", Note: "sha256 " + sha},
			{Type: premis.FormatIdentification, Outcome: premis.Success, Detail: "magic bytes, extension and declared format (PRONOM)",
				Note: "tiff (fmt/353)", PUID: "fmt/353"},
			{Type: premis.Validation, Outcome: premis.Success, Detail: "TIFF structure of every IFD and pixel data of every page (lazaret/0.9.0)",
				Note: "1 page(s), 1 checked to the pixel data", PUID: "fmt/353"},
		},
	}}
}
