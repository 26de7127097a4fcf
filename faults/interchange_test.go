package faults

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lazaret/lazaret/fixtures"
)

// icTemplate is one UN/EDIFACT interchange the batch draws from: generated
// here (so that where every message must end is known) or read from the
// shared corpus (where `lazaret inspect` says it goes, taken as information
// only). Refs are its messages' UNH references, in order; the checks expect
// every one of them somewhere once the envelope is accepted.
type icTemplate struct {
	id     string // template name, part of every item's object id
	file   string // file name in the batch folder
	data   []byte
	sha    string
	refs   []string
	expect string            // the interchange's destination ("accept" when its envelope is sound)
	msgs   map[string]string // ref -> the message's destination, when the envelope is sound
	big    bool              // placed on purpose, not drawn
	corpus bool
}

func newICTemplate(id string, ic fixtures.Interchange, expect string, bad map[string]string) (*icTemplate, error) {
	var buf bytes.Buffer
	if err := fixtures.WriteInterchange(&buf, ic); err != nil {
		return nil, fmt.Errorf("interchange %s: %w", id, err)
	}
	t := &icTemplate{id: id, file: id + ".edi", data: buf.Bytes(), expect: expect, msgs: map[string]string{}}
	sum := sha256.Sum256(t.data)
	t.sha = hex.EncodeToString(sum[:])
	for _, m := range ic.Msgs {
		t.refs = append(t.refs, m.Ref)
		if expect == "accept" {
			t.msgs[m.Ref] = "accept"
			if d, ok := bad[m.Ref]; ok {
				t.msgs[m.Ref] = d
			}
		}
	}
	return t, nil
}

// Sizes of the large interchanges: a few thousand messages (12 chunks of
// 256), routed for long enough that a fault can be fired between two
// chunks (see run.midway).
const (
	bigMessages       = 3000
	bigBrokenMessages = 1000
)

// generatedInterchanges are the interchanges the harness writes itself,
// with fixtures' message builders: sound ones, ones with failing messages
// among good ones (each failing message quarantined alone), broken
// envelopes (dead-lettered whole), and two large ones.
func generatedInterchanges() ([]*icTemplate, error) {
	parties := [2]string{"CZ", "CN"}
	good := func(n int) fixtures.Msg {
		ref := strconv.Itoa(n)
		switch n % 3 {
		case 0:
			return fixtures.VERMAS(ref, fixtures.ContainerOK1, 24000)
		case 1:
			return fixtures.IFTMIN(ref, parties, "NLRTM", "SGSIN", fixtures.ContainerOK2, "847130")
		default:
			return fixtures.COPRAR(ref, fixtures.ContainerOK3, "DEHAM")
		}
	}
	// bad is a message a semantic or regulatory rule fails: quarantined.
	bad := func(n int) fixtures.Msg {
		ref := strconv.Itoa(n)
		switch n % 4 {
		case 0:
			return fixtures.IFTMIN(ref, parties, "NLRTM", "NLZZZ", fixtures.ContainerOK2, "847130") // unknown UN/LOCODE
		case 1:
			return fixtures.IFTMIN(ref, parties, "NLRTM", "SGSIN", fixtures.ContainerWrong, "847130") // ISO 6346 check digit
		case 2:
			return fixtures.VERMAS(ref, fixtures.ContainerOK1, 900) // VGM below the floor
		default:
			return fixtures.IFTMIN(ref, parties, "NLRTM", "SGSIN", fixtures.ContainerOK2, "772100") // HS code not in the tariff
		}
	}
	ic := func(ref string, msgs []fixtures.Msg) fixtures.Interchange {
		return fixtures.Interchange{Syntax: "UNOC", Sender: "FAULTS", Recipient: "LAZARET", Ref: ref, UNA: true, Msgs: msgs}
	}
	msgs := func(n int, badAt func(int) bool) ([]fixtures.Msg, map[string]string) {
		var out []fixtures.Msg
		q := map[string]string{}
		for i := 1; i <= n; i++ {
			if badAt != nil && badAt(i) {
				out = append(out, bad(i))
				q[strconv.Itoa(i)] = "quarantine"
				continue
			}
			out = append(out, good(i))
		}
		return out, q
	}
	var ts []*icTemplate
	add := func(id string, ic fixtures.Interchange, expect string, q map[string]string, big bool) error {
		t, err := newICTemplate(id, ic, expect, q)
		if err != nil {
			return err
		}
		t.big = big
		ts = append(ts, t)
		return nil
	}
	one, _ := msgs(1, nil)
	five, _ := msgs(5, nil)
	mixed, mixedQ := msgs(40, func(i int) bool { return i == 7 || i == 18 || i == 33 || i == 40 })
	big, bigQ := msgs(bigMessages, func(i int) bool { return i%97 == 0 })
	unz, _ := msgs(3, nil)
	unzIC := ic("FX0005", unz)
	unzIC.UNZRef = "FX9999"
	bgm, _ := msgs(10, nil)
	bgm[3] = fixtures.Msg{Ref: bgm[3].Ref, Type: bgm[3].Type, Body: bgm[3].Body[1:]} // message 4 without BGM: structural
	unt, _ := msgs(6, nil)
	unt[1].UNTCount = 99 // message 2's UNT miscounts
	late, _ := msgs(bigBrokenMessages, nil)
	late[len(late)-1].UNTCount = 3 // the last message's UNT miscounts: the whole interchange is dead-lettered
	for _, a := range []struct {
		id     string
		ic     fixtures.Interchange
		expect string
		q      map[string]string
		big    bool
	}{
		{"ic-good-one", ic("FX0001", one), "accept", nil, false},
		{"ic-good-five", ic("FX0002", five), "accept", nil, false},
		{"ic-mixed", ic("FX0003", mixed), "accept", mixedQ, false},
		{"ic-big", ic("FX0004", big), "accept", bigQ, true},
		{"ic-unz-mismatch", unzIC, "dead-letter", nil, false},
		{"ic-missing-bgm", ic("FX0006", bgm), "dead-letter", nil, false},
		{"ic-unt-count", ic("FX0007", unt), "dead-letter", nil, false},
		{"ic-big-late-unt", ic("FX0008", late), "dead-letter", nil, true},
	} {
		if err := add(a.id, a.ic, a.expect, a.q, a.big); err != nil {
			return nil, err
		}
	}
	return ts, nil
}

// corpusDir is ../shared/corpus/edifact beside the repository: "" when it
// is absent (then only generated interchanges are drawn), an error when it
// is absent under CI=true.
func corpusDir(root string) (string, error) {
	p := filepath.Join(root, "..", "shared", "corpus", "edifact")
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") == "true" {
			return "", fmt.Errorf("the shared corpus is required under CI=true, not found at %s (it lives beside the repository as ../shared): %w", p, err)
		}
		return "", nil
	}
	return p, nil
}

// inspectLine is what the checks take from one line of `lazaret inspect
// --json`.
type inspectLine struct {
	Verdict    string `json:"verdict"`
	Class      string `json:"class"`
	Code       string `json:"code"`
	MessageRef string `json:"message_ref"`
}

// corpusInterchanges reads every interchange of the corpus folder and asks
// `lazaret inspect --json` where it (and each of its messages) goes. An
// interchange whose envelope is sound gives one line per message (with its
// reference); one rejected whole gives one line. The message references are
// checked against a count of UNH segments in the bytes, which needs no
// parser: when they disagree the file is left out (and said so), since the
// checks could not know which messages to expect.
func corpusInterchanges(dir, bin string, note func(string, ...any)) ([]*icTemplate, error) {
	files, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var regular []os.DirEntry
	for _, f := range files {
		if !f.IsDir() {
			regular = append(regular, f)
		}
	}
	inspected := make([]cmdResult, len(regular))
	pool(len(regular), 4, func(i int) {
		inspected[i] = runShort(context.Background(), time.Minute, childEnv("LAZARET_CONFIG=", "LAZARET_LOG_LEVEL=error"), bin,
			"inspect", "--json", filepath.Join(dir, regular[i].Name()))
	})
	var ts []*icTemplate
	for i, f := range regular {
		data, err := os.ReadFile(filepath.Join(dir, f.Name()))
		if err != nil {
			return nil, err
		}
		res := inspected[i]
		if res.code != 0 && res.code != 1 {
			return nil, fmt.Errorf("lazaret inspect %s: exit %d: %s", f.Name(), res.code, firstLine(res.stderr))
		}
		var lines []inspectLine
		sc := bufio.NewScanner(strings.NewReader(res.stdout))
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var l inspectLine
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Verdict != "" {
				lines = append(lines, l)
			}
		}
		if len(lines) == 0 {
			return nil, fmt.Errorf("lazaret inspect %s: no verdict in %.300s", f.Name(), res.stdout)
		}
		name := "corpus-" + strings.ToLower(strings.TrimSuffix(unsafeID(f.Name()), filepath.Ext(f.Name())))
		t := &icTemplate{id: name, file: name + ".edi", data: data, corpus: true, msgs: map[string]string{}}
		sum := sha256.Sum256(data)
		t.sha = hex.EncodeToString(sum[:])
		sound := len(lines) > 1 || lines[0].Verdict == "accept" || lines[0].Class != "structural" && lines[0].MessageRef != ""
		if !sound {
			t.expect = lines[0].Verdict
		} else {
			t.expect = "accept"
			seen := map[string]bool{}
			for _, l := range lines {
				if seen[l.MessageRef] || l.MessageRef == "" {
					note("corpus %s: message reference %q twice or empty in inspect's verdicts: left out", f.Name(), l.MessageRef)
					t = nil
					break
				}
				seen[l.MessageRef] = true
				t.refs = append(t.refs, l.MessageRef)
				t.msgs[l.MessageRef] = l.Verdict
			}
			if t == nil {
				continue
			}
			if n := countUNH(data); n != len(t.refs) {
				note("corpus %s: %d UNH segment(s) in the bytes, inspect gave %d message verdict(s): left out", f.Name(), n, len(t.refs))
				continue
			}
		}
		ts = append(ts, t)
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].id < ts[j].id })
	return ts, nil
}

// countUNH counts the segments tagged UNH: "UNH" at the start of the file
// or right after a segment terminator (the UNA's, or "'"), line breaks and
// spaces skipped.
func countUNH(b []byte) int {
	term := byte('\'')
	if bytes.HasPrefix(b, []byte("UNA")) && len(b) >= 9 {
		term = b[8]
	}
	n := 0
	at := true
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case c == term:
			at = true
		case c == '\r' || c == '\n' || c == ' ':
		case at:
			if bytes.HasPrefix(b[i:], []byte("UNH")) {
				n++
			}
			at = false
		}
	}
	return n
}

func unsafeID(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return b.String()
}

// messageObjectID names a message of an interchange the way Lazaret's
// README says it does: the interchange's object id, '#', and the UNH
// reference, bytes outside printable ASCII and '%' and '#' percent-encoded.
// Written here again (not imported) so that the checks do not take the
// naming on trust.
func messageObjectID(interchange, ref string) string {
	var b strings.Builder
	b.WriteString(interchange)
	b.WriteByte('#')
	for i := 0; i < len(ref); i++ {
		c := ref[i]
		if c <= ' ' || c >= 0x7f || c == '%' || c == '#' {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// loadInterchanges fills the templates' interchanges: the generated ones,
// and the corpus's when the folder is there.
func (t *templates) loadInterchanges(root, bin string, note func(string, ...any)) error {
	gen, err := generatedInterchanges()
	if err != nil {
		return err
	}
	dir, err := corpusDir(root)
	if err != nil {
		return err
	}
	var corp []*icTemplate
	if dir == "" {
		note("shared corpus not found beside the repository (../shared/corpus/edifact): only generated interchanges are drawn")
	} else if corp, err = corpusInterchanges(dir, bin, note); err != nil {
		return err
	}
	t.ics = map[string]*icTemplate{}
	for _, ic := range append(gen, corp...) {
		if t.ics[ic.id] != nil {
			return errors.New("two interchange templates named " + ic.id)
		}
		t.ics[ic.id] = ic
		t.icOrder = append(t.icOrder, ic.id)
	}
	return nil
}
