package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/lazaret/lazaret/premis"
)

// TestBodiesAreStrict: a body with a field the operation does not take —
// misspelt (dryRun for dry_run), in another case, unknown, or given twice
// at any depth — is a 400 naming the field, and nothing is recorded: a
// preview asked for with a misspelt flag must not become the real discard,
// replay or submission.
func TestBodiesAreStrict(t *testing.T) {
	const token = "s3cret"
	e := setup(t, token)
	if code, body := e.do("POST", "/v1/batches", token, map[string]string{"manifest": e.batch.Manifest}); code != http.StatusAccepted {
		t.Fatalf("submit: %d %v", code, body)
	}
	e.waitSettled()
	id := rid0(e)
	count := func() int {
		n := 0
		if err := premis.EachEvent(context.Background(), e.ledger, premis.Filter{}, func(premis.Event) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := count()
	for _, c := range []struct {
		path, body, names string
	}{
		{"/v1/failures/" + id + "/discard", `{"operator":"ana","reason":"bad scan","dryRun":true}`, `"dryRun" (did you mean "dry_run"?)`},
		{"/v1/failures/" + id + "/discard", `{"operator":"ana","reason":"bad scan","Dry_Run":true}`, `"Dry_Run" (did you mean "dry_run"?)`},
		{"/v1/failures/" + id + "/discard", `{"Operator":"ana","reason":"bad scan","dry_run":true}`, `"Operator" (did you mean "operator"?)`},
		{"/v1/failures/" + id + "/discard", `{"operator":"ana","reason":"bad scan","dry_run":true,"dry_run":false}`, `"dry_run" appears twice`},
		{"/v1/failures/" + id + "/discard", `{"operator":"ana","operator":"bob","reason":"bad scan"}`, `"operator" appears twice`},
		{"/v1/failures/" + id + "/discard", `{"operator":"ana","reason":"bad scan","force":true}`, `unknown field "force"`},
		{"/v1/failures/" + id + "/discard", `{"operator":"ana","reason":"bad scan"} {"dry_run":true}`, `more after it`},
		{"/v1/failures/" + id + "/discard", `["operator"]`, `want a JSON object`},
		{"/v1/failures/" + id + "/replay", `{"operator":"ana","reason":"fixed","set":{"color_profile":"sRGB","color_profile":"AdobeRGB"}}`, `"set.color_profile" appears twice`},
		{"/v1/batches", `{"manifest":"` + e.batch.Manifest + `","dryrun":true}`, `"dryrun" (did you mean "dry_run"?)`},
		{"/v1/batches", `{"manifest":"` + e.batch.Manifest + `","manifest":"/etc/passwd"}`, `"manifest" appears twice`},
	} {
		code, body := e.doRaw("POST", c.path, token, c.body)
		msg, _ := body["error"].(string)
		if code != http.StatusBadRequest || !strings.Contains(msg, c.names) {
			t.Errorf("%s %s: %d %q, want 400 naming %s", c.path, c.body, code, msg, c.names)
		}
	}
	if after := count(); after != before {
		t.Errorf("the refused bodies recorded %d events", after-before)
	}
	// The same body spelt right is the preview it asked for, and the
	// action itself is taken: the refusals above were the spelling.
	if code, body := e.doRaw("POST", "/v1/failures/"+id+"/discard", token, `{"operator":"ana","reason":"bad scan","dry_run":true}`); code != http.StatusOK || body["dry_run"] != true {
		t.Errorf("dry_run spelt right: %d %v", code, body)
	}
	if after := count(); after != before {
		t.Errorf("a dry run recorded %d events", after-before)
	}
	if code, body := e.doRaw("POST", "/v1/failures/"+id+"/discard", token, `{"operator":"ana","reason":"bad scan"}`); code != http.StatusOK {
		t.Errorf("discard: %d %v", code, body)
	}
	if after := count(); after != before+1 {
		t.Errorf("the discard recorded %d events, want 1", after-before)
	}
}

// doRaw sends body as it is, not marshalled: a duplicate key survives.
func (e *env) doRaw(method, path, token, body string) (int, map[string]any) {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}
