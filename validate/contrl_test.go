package validate_test

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/lazaret/lazaret/edifact"
	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/validate"
)

// codes0085 are the UNSL 0085 codes a CONTRL of Lazaret may carry.
var codes0085 = map[string]bool{"2": true, "12": true, "13": true, "15": true, "16": true, "18": true, "20": true, "21": true,
	"28": true, "29": true, "30": true, "32": true, "33": true, "37": true, "39": true, "46": true}

// TestContrlRoundTrip writes the CONTRL Lazaret answers every corpus and
// logistics-fixture interchange with (every one, rejected or not; the
// rejected are the point), reads it back through edifact.Parse, and checks
// its envelope against the interchange it answers: syntax identifier and
// version, sender and recipient swapped whole, its own control reference in
// UNB and UNZ (Parse checks UNZ and UNT), UCI echoing 0020, S002 and S003
// whole with the right action, one UCF per group, one UCM per message read
// with S009 whole, a 0085 code from UNSL wherever the interchange was
// rejected; and no two CONTRLs sharing a control reference.
func TestContrlRoundTrip(t *testing.T) {
	t.Parallel()
	var files []string
	for _, glob := range []string{filepath.Join(testenv.Corpus(t, "edifact"), "*"), filepath.Join(testenv.RepoRoot(t), "fixtures", "logistics", "*.edi")} {
		m, _ := filepath.Glob(glob)
		files = append(files, m...)
	}
	if len(files) < 30 {
		t.Fatalf("%d interchanges", len(files))
	}
	refs := map[string]string{}
	rejected := 0
	for _, path := range files {
		name := filepath.Base(filepath.Dir(path)) + "/" + filepath.Base(path)
		rep, res, err := validate.CheckInterchange(context.Background(), path, nil, validate.Builtin(), validate.DefaultEDIRules(), "")
		orig := validate.ReadEnvelope(validate.SourceOf(path), 0)
		cr := res.ContrlFor(orig, err)
		cr.Reference = edifact.ControlReference(rep.SHA256, path)
		cr.Now = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		var out bytes.Buffer
		if werr := edifact.WriteCONTRL(&out, cr); werr != nil {
			t.Errorf("%s: write: %v", name, werr)
			continue
		}
		parked := len(cr.Faults) > 0
		if err != nil || parked {
			rejected++
		}
		if prev, ok := refs[cr.Reference]; ok {
			t.Errorf("%s and %s: one control reference %s", prev, name, cr.Reference)
		}
		refs[cr.Reference] = name

		var msgs []edifact.Message
		var segs []edifact.Segment
		ic, perr := edifact.Parse(bytes.NewReader(out.Bytes()), edifact.Limits{}, func(m *edifact.Message) error {
			msgs = append(msgs, m.Header())
			for _, s := range m.All() {
				segs = append(segs, s.Clone())
			}
			return nil
		})
		if perr != nil {
			t.Errorf("%s: the CONTRL does not parse: %v\n%s", name, perr, out.String())
			continue
		}
		back := edifact.ReadEnvelope(bytes.NewReader(out.Bytes()), edifact.Limits{})
		fail := func(format string, args ...any) {
			t.Helper()
			t.Errorf("%s: "+format+"\n%s", append(append([]any{name}, args...), out.String())...)
		}

		// Envelope.
		ver := 3
		if orig.HasUNB && orig.SyntaxVersion == "4" {
			ver = 4
		}
		if orig.HasUNB && len(orig.SyntaxID) == 4 && orig.SyntaxID[:3] == "UNO" {
			if back.SyntaxID != orig.SyntaxID || back.SyntaxVersion != orig.SyntaxVersion {
				fail("answers in %s:%s, the interchange is %s:%s", back.SyntaxID, back.SyntaxVersion, orig.SyntaxID, orig.SyntaxVersion)
			}
		}
		if orig.HasUNB && (!slices.Equal(back.Sender, orig.Recipient) || !slices.Equal(back.Recipient, orig.Sender)) {
			fail("UNB %v -> %v, the interchange %v -> %v", back.Sender, back.Recipient, orig.Sender, orig.Recipient)
		}
		if ic.Reference != cr.Reference || back.UNZReference != cr.Reference || back.UNZCount != "1" {
			fail("UNB 0020 %q, UNZ %s %q, want %q", ic.Reference, back.UNZCount, back.UNZReference, cr.Reference)
		}
		if len(msgs) != 1 || msgs[0].Type != "CONTRL" || (ver == 4) != (msgs[0].Version == "4" && msgs[0].Release == "1") ||
			(ver != 4) != (msgs[0].Version == "D" && msgs[0].Release == "3") {
			fail("messages %+v, want one CONTRL for syntax %d", msgs, ver)
			continue
		}

		// UCI.
		if len(segs) < 3 || segs[1].Tag != "UCI" {
			fail("no UCI after UNH")
			continue
		}
		uci := &segs[1]
		want := "7"
		if err != nil {
			want = "4"
		}
		if uci.Value(4, 1) != want {
			fail("UCI action %q, want %q (err %v)", uci.Value(4, 1), want, err)
		}
		if orig.HasUNB {
			if uci.Value(1, 1) != orig.Reference || !slices.Equal(comps(uci, 2), orig.Sender) || !slices.Equal(comps(uci, 3), orig.Recipient) {
				fail("UCI %q %v %v, UNB %q %v %v", uci.Value(1, 1), comps(uci, 2), comps(uci, 3), orig.Reference, orig.Sender, orig.Recipient)
			}
		} else if uci.Value(1, 1) == "" || uci.Value(2, 1) == "" || uci.Value(3, 1) == "" {
			fail("UCI without UNB has empty 0020/S002/S003")
		}

		// UCF, UCM, codes.
		ucf, ucm, codes := 0, 0, 0
		for i := range segs {
			s := &segs[i]
			code := ""
			switch s.Tag {
			case "UCI", "UCF":
				code = s.Value(5, 1)
				if s.Tag == "UCF" {
					ucf++
				}
			case "UCM":
				code = s.Value(4, 1)
				ref := s.Value(1, 1)
				n := slices.IndexFunc(cr.Messages, func(m edifact.Message) bool { return m.Ref == ref })
				if n < 0 {
					fail("UCM for %q, a message never read", ref)
					break
				}
				if h := orig.Message(cr.Messages[n].Number); h != nil && !slices.Equal(comps(s, 2), h.ID) {
					fail("UCM S009 %v, UNH %v", comps(s, 2), h.ID)
				}
				ucm++
			case "UCS":
				code = s.Value(2, 1)
			case "UCD":
				code = s.Value(1, 1)
			}
			if code != "" {
				codes++
				if !codes0085[code] {
					fail("0085 code %s is not one of UNSL's that Lazaret uses", code)
				}
			}
		}
		if ucf != len(orig.Groups) && err == nil {
			fail("%d UCF, %d groups", ucf, len(orig.Groups))
		}
		if ucm != len(cr.Messages) {
			fail("%d UCM, %d messages read", ucm, len(cr.Messages))
		}
		if (err != nil || parked) && codes == 0 {
			fail("rejected (%v) without a 0085 code", err)
		}
		if unt := segs[len(segs)-1]; unt.Tag != "UNT" || unt.Value(1, 1) != strconv.Itoa(len(segs)) {
			fail("UNT %q for %d segments", unt.Value(1, 1), len(segs))
		}
	}
	if rejected < 15 {
		t.Errorf("%d rejected interchanges answered; the corpus and fixtures hold more", rejected)
	}
	t.Logf("%d CONTRLs read back, %d of them rejecting", len(files), rejected)
}

func comps(s *edifact.Segment, e int) []string {
	var out []string
	last := 0
	for c := 1; c <= s.Components(e); c++ {
		v := s.Value(e, c)
		out = append(out, v)
		if v != "" {
			last = c
		}
	}
	return out[:last]
}
