package api

import (
	"html/template"
	"net/http"

	"github.com/lazaret/lazaret/ingest"
)

// batchPage is GET /batches/{id}: a batch's progress for a person in a
// browser — the bar submit --wait draws on a terminal, the summary line,
// and every item's latest outcome — refreshed every few seconds until the
// batch is finished. Read access as for /v1/.
var batchPage = template.Must(template.New("batch").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
{{if not .Finished}}<meta http-equiv="refresh" content="2">{{end}}
<title>batch {{.ID}} — lazaret</title>
<style>
body{font:15px/1.4 system-ui,sans-serif;margin:2em;max-width:70em}
progress{width:40em;height:1.4em}
table{border-collapse:collapse;margin-top:1em}
td,th{padding:.2em .8em;border-bottom:1px solid #ddd;text-align:left}
.failed{color:#a00}
</style></head><body>
<h1>batch {{.ID}}</h1>
<p><progress id="progress" value="{{.P.Done}}" max="{{.Total}}">{{.P.Done}}/{{.Total}}</progress></p>
<p id="summary">{{.Summary}}</p>
{{if .Finished}}<p id="verdict" class="{{if .P.Failed}}failed{{end}}">{{if .P.Failed}}{{.P.Failed}} of {{.Total}} items failed: see the dead-letter queue, quarantine and audit-hold for this batch.{{else}}finished: every item accepted.{{end}}</p>{{end}}
<table><thead><tr><th>object</th><th>kind</th><th>destination</th><th>class</th><th>code</th><th>attempt</th></tr></thead><tbody>
{{range .Items}}<tr><td>{{.ObjectID}}</td><td>{{.Kind}}</td><td>{{.Destination}}</td><td>{{.Class}}</td><td>{{.Code}}</td><td>{{.Attempt}}</td></tr>
{{end}}</tbody></table>
</body></html>
`))

type batchView struct {
	ID       string
	P        *ingest.Progress
	Total    int
	Finished bool
	Summary  string
	Items    []ingest.ItemStatus
}

func (s *Server) batchHTML(w http.ResponseWriter, r *http.Request) {
	id, p, items, ok := s.batchState(w, r)
	if !ok {
		return
	}
	v := batchView{ID: id, P: p, Total: p.Total(), Finished: p.Finished(), Summary: p.Summary(), Items: items}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := batchPage.Execute(w, v); err != nil && s.Logger != nil {
		s.Logger.Warn("batch page", "error", err.Error())
	}
}
