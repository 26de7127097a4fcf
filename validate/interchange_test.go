package validate_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lazaret/lazaret/edifact"
	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/validate"
)

// writeMessages writes an interchange of n good IFTMIN messages, except that
// message bad names a port no registry knows (semantic: quarantined) and
// message noBGM has no BGM (structural: the interchange is rejected); 0
// for neither.
func writeMessages(t *testing.T, n, bad, noBGM int) string {
	t.Helper()
	var msgs []fixtures.Msg
	for i := 1; i <= n; i++ {
		port := "SGSIN"
		if i == bad {
			port = "NLZZZ"
		}
		m := fixtures.IFTMIN(strconv.Itoa(i), [2]string{"CZ", "CN"}, "NLRTM", port, fixtures.ContainerOK2, "847130")
		if i == noBGM {
			var body []fixtures.Seg
			for _, s := range m.Body {
				if s.Tag != "BGM" {
					body = append(body, s)
				}
			}
			m.Body = body
		}
		msgs = append(msgs, m)
	}
	var b bytes.Buffer
	if err := fixtures.WriteInterchange(&b, fixtures.Interchange{Sender: "S", Recipient: "R", Ref: "BIG", Msgs: msgs}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "big.edi")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// msgVerdict is what a test compares of a MessageResult.
type msgVerdict struct {
	Ref    string
	Number int
	Offset int64
	Err    string
}

// verdicts runs both reads with the given budget for kept verdicts.
func verdicts(t *testing.T, path string, budget int64, only string) (*validate.InterchangeResult, []msgVerdict, error) {
	t.Helper()
	rules := validate.DefaultEDIRules()
	rules.MaxRetainedBytes = budget
	_, res, err := validate.CheckInterchange(context.Background(), path, nil, validate.Builtin(), rules, only)
	if err != nil {
		t.Fatalf("first read: %v", err)
	}
	var got []msgVerdict
	err = res.EachMessage(context.Background(), func(m validate.MessageResult) error {
		v := msgVerdict{Ref: m.Ref, Number: m.Number, Offset: m.Offset}
		if m.Err != nil {
			v.Err = m.Err.Error()
		}
		got = append(got, v)
		return nil
	})
	return res, got, err
}

// TestEachMessageReadsAgainWhatDoesNotFit: an interchange whose verdicts
// do not fit the budget hands over, from its second read, exactly the
// verdicts it hands over from memory when they fit; and a replay of one
// message still checks that message alone.
func TestEachMessageReadsAgainWhatDoesNotFit(t *testing.T) {
	t.Parallel()
	path := writeMessages(t, 600, 300, 0)
	res, kept, err := verdicts(t, path, 64<<20, "")
	if err != nil {
		t.Fatal(err)
	}
	if res.Checked != 600 || res.Failed != 1 || len(kept) != 600 || kept[299].Err == "" {
		t.Fatalf("kept: checked %d failed %d, %d verdicts", res.Checked, res.Failed, len(kept))
	}
	_, reread, err := verdicts(t, path, 1, "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(kept, reread); diff != "" {
		t.Errorf("second read (-kept +reread):\n%s", diff)
	}
	_, one, err := verdicts(t, path, 1, "300")
	if err != nil || len(one) != 1 || one[0] != kept[299] {
		t.Errorf("only 300: %+v %v, want %+v", one, err, kept[299])
	}
}

// TestEachMessageFindsTheFileChanged: a file that changes between the two
// reads is ErrFileChanged, and what is handed over is only ever what the
// first read decided: message 300, which failed, read again as passing
// (chunk 2) stops it after chunk 1 (256 messages); a change where the first
// read found nothing to check again (the sender; message 400, which passed
// cleanly and is not checked again) stops it before the last chunk, when
// the SHA-256 differs, with message 400 handed over as the first read
// found it; a file that grew stops it before anything.
func TestEachMessageFindsTheFileChanged(t *testing.T) {
	t.Parallel()
	port := func(ref string, from, to string) func([]byte) []byte {
		return func(data []byte) []byte {
			i := bytes.Index(data, []byte("UNH+"+ref+"+"))
			copy(data[i+bytes.Index(data[i:], []byte(from)):], to)
			return data
		}
	}
	for _, tc := range []struct {
		name   string
		change func(data []byte) []byte
		handed int
	}{
		{"failed message passes", port("300", "NLZZZ", "SGSIN"), 256},
		{"clean message fails", port("400", "SGSIN", "NLZZZ"), 512},
		{"sender", func(data []byte) []byte {
			i := bytes.Index(data, []byte("UNB+"))
			j := i + bytes.Index(data[i:], []byte("+S:ZZ+"))
			data[j+1] = 'X' // no message rule reads it
			return data
		}, 512},
		{"grew", func(data []byte) []byte { return append(data, '\n') }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := writeMessages(t, 600, 300, 0)
			rules := validate.DefaultEDIRules()
			rules.MaxRetainedBytes = 1
			_, res, err := validate.CheckInterchange(context.Background(), path, nil, validate.Builtin(), rules, "")
			if err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(path)
			if err := os.WriteFile(path, tc.change(data), 0o644); err != nil {
				t.Fatal(err)
			}
			handed := 0
			err = res.EachMessage(context.Background(), func(m validate.MessageResult) error {
				if (m.Err != nil) != (m.Ref == "300") {
					t.Errorf("message %s handed over with %v", m.Ref, m.Err)
				}
				handed++
				return nil
			})
			var se *validate.StageError
			if !errors.Is(err, validate.ErrFileChanged) || !errors.As(err, &se) || se.Stage != validate.StageOpen {
				t.Fatalf("got %v, want ErrFileChanged in the open stage", err)
			}
			if handed != tc.handed {
				t.Errorf("%d verdicts handed over, want %d: %v", handed, tc.handed, err)
			}
		})
	}
}

// TestEachMessageStopsWhenTold: an error from yield stops the second read
// and comes back unchanged.
func TestEachMessageStopsWhenTold(t *testing.T) {
	t.Parallel()
	path := writeMessages(t, 600, 0, 0)
	rules := validate.DefaultEDIRules()
	rules.MaxRetainedBytes = 1
	_, res, err := validate.CheckInterchange(context.Background(), path, nil, validate.Builtin(), rules, "")
	if err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop")
	n := 0
	err = res.EachMessage(context.Background(), func(validate.MessageResult) error {
		if n++; n == 10 {
			return stop
		}
		return nil
	})
	if err != stop || n != 10 {
		t.Errorf("got %v after %d, want the yield's own error after 10", err, n)
	}
}

// TestContrlNamesOnlyTheMessageAtFault: a rejected interchange of 600
// messages gets a CONTRL report of one UCI and one UCM (the message without
// BGM, with its UCS), not a UCM per message.
func TestContrlNamesOnlyTheMessageAtFault(t *testing.T) {
	t.Parallel()
	path := writeMessages(t, 600, 0, 500)
	_, res, err := validate.CheckInterchange(context.Background(), path, nil, validate.Builtin(), validate.DefaultEDIRules(), "")
	var re *validate.RuleError
	if !errors.As(err, &re) || re.Code != "edifact.bgm.missing" || re.Message != "500" {
		t.Fatalf("got %v, want edifact.bgm.missing in message 500", err)
	}
	if err := res.EachMessage(context.Background(), func(validate.MessageResult) error { return nil }); err == nil {
		t.Error("EachMessage on a rejected interchange: no error")
	}
	var out bytes.Buffer
	if err := edifact.WriteCONTRL(&out, res.Contrl(err)); err != nil {
		t.Fatal(err)
	}
	if got := bytes.Count(out.Bytes(), []byte("UCM+")); got != 1 || !bytes.Contains(out.Bytes(), []byte("UCM+500+IFTMIN:D:99B:UN+4'")) ||
		!bytes.Contains(out.Bytes(), []byte("UCI+BIG+S+R+4'")) || !bytes.Contains(out.Bytes(), []byte("UCS+2+13'")) {
		t.Errorf("%d UCM; CONTRL:\n%s", got, out.Bytes())
	}
}

// BenchmarkCheckInterchange_50MB: both reads of the 50 MB benchmark
// interchange, every verdict handed over (compare with
// BenchmarkParseAnchor_50MB, the bare parse, in the same run).
func BenchmarkCheckInterchange_50MB(b *testing.B) {
	benchInterchange(b, func(path string) error {
		_, res, err := validate.CheckInterchange(context.Background(), path, nil, validate.Builtin(), validate.DefaultEDIRules(), "")
		if err != nil {
			return err
		}
		return res.EachMessage(context.Background(), func(validate.MessageResult) error { return nil })
	})
}

// BenchmarkCheckInterchangeFirstRead_50MB is the first read alone: what
// the second costs is the difference.
func BenchmarkCheckInterchangeFirstRead_50MB(b *testing.B) {
	benchInterchange(b, func(path string) error {
		_, _, err := validate.CheckInterchange(context.Background(), path, nil, validate.Builtin(), validate.DefaultEDIRules(), "")
		return err
	})
}

// BenchmarkParseAnchor_50MB is the envelope parse alone, no message rules.
func BenchmarkParseAnchor_50MB(b *testing.B) {
	benchInterchange(b, func(path string) error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = edifact.Parse(f, edifact.Limits{}, nil)
		return err
	})
}

func benchInterchange(b *testing.B, run func(path string) error) {
	path := filepath.Join(b.TempDir(), "large.edi")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := fixtures.LargeInterchange(f, 50<<20); err != nil {
		b.Fatal(err)
	}
	st, _ := f.Stat()
	f.Close()
	b.SetBytes(st.Size())
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := run(path); err != nil {
			b.Fatal(err)
		}
	}
}

// handedOver is all of a MessageResult, its error as text.
type handedOver struct {
	Ref, Type string
	Number    int
	Offset    int64
	Warnings  []validate.Warning
	Err       string
}

func handed(m validate.MessageResult) handedOver {
	h := handedOver{Ref: m.Ref, Type: m.Type, Number: m.Number, Offset: m.Offset, Warnings: m.Warnings}
	if m.Err != nil {
		h.Err = m.Err.Error()
	}
	return h
}

// TestEachMessageHandsOverWhatCheckMessageFinds: every verdict EachMessage
// hands over, from the verdicts kept in memory and from a second read, is
// CheckMessage's on that message, whole: good messages, messages whose one
// warning is that the directory does not hold them (VERMAS D:16A, and
// more distinct types than the kept verdicts' tables hold), messages with
// warnings of their own and failed ones.
func TestEachMessageHandsOverWhatCheckMessageFinds(t *testing.T) {
	t.Parallel()
	var msgs []fixtures.Msg
	for i := 1; i <= 700; i++ {
		ref := strconv.Itoa(i)
		switch {
		case i%7 == 0:
			m := fixtures.VERMAS(ref, fixtures.ContainerOK1, 24000)
			m.Type = fmt.Sprintf("ZZ%04d", i) // a type no directory holds, one of 100
			msgs = append(msgs, m)
		case i%5 == 0:
			msgs = append(msgs, fixtures.VERMAS(ref, fixtures.ContainerOK1, 24000))
		case i%11 == 0:
			msgs = append(msgs, fixtures.IFTMIN(ref, [2]string{"CZ", "CN"}, "NLRTM", "NLZZZ", fixtures.ContainerOK2, "847130")) // unknown port
		case i%13 == 0:
			m := fixtures.IFTMIN(ref, [2]string{"CZ", "CN"}, "NLRTM", "SGSIN", fixtures.ContainerOK2, "847130")
			for j, s := range m.Body {
				if s.Tag == "NAD" {
					m.Body[j] = fixtures.S("NAD", "CZ", strings.Repeat("S", 40)+"::92") // 3039 is an..35: a warning
					break
				}
			}
			msgs = append(msgs, m)
		default:
			msgs = append(msgs, fixtures.IFTMIN(ref, [2]string{"CZ", "CN"}, "NLRTM", "SGSIN", fixtures.ContainerOK2, "847130"))
		}
	}
	var b bytes.Buffer
	if err := fixtures.WriteInterchange(&b, fixtures.Interchange{Sender: "S", Recipient: "R", Ref: "MIX", Msgs: msgs}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mixed.edi")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	rules := validate.DefaultEDIRules()
	var want []handedOver
	kinds := map[string]int{}
	if _, err := edifact.Parse(bytes.NewReader(b.Bytes()), edifact.Limits{}, func(m *edifact.Message) error {
		warns, err := validate.CheckMessage(m, validate.Builtin(), rules)
		h := handed(validate.MessageResult{Ref: m.Ref, Type: m.Type, Number: m.Number, Offset: m.Offset, Warnings: warns, Err: err})
		switch {
		case err != nil:
			kinds["failed"]++
		case len(warns) == 0:
			kinds["clean"]++
		case warns[0].Code == "edifact.directory.unknown":
			kinds["unknown"]++
		default:
			kinds["warned"]++
		}
		want = append(want, h)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"failed", "clean", "unknown", "warned"} {
		if kinds[k] == 0 {
			t.Fatalf("no %s message among %v: the test checks nothing of them", k, kinds)
		}
	}
	for _, budget := range []int64{0, 1} { // the default: kept; 1: read again
		rules.MaxRetainedBytes = budget
		_, res, err := validate.CheckInterchange(context.Background(), path, nil, validate.Builtin(), rules, "")
		if err != nil {
			t.Fatal(err)
		}
		var got []handedOver
		if err := res.EachMessage(context.Background(), func(m validate.MessageResult) error {
			got = append(got, handed(m))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("budget %d (-CheckMessage +EachMessage):\n%s", budget, diff)
		}
	}
}
