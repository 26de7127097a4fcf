package ledgersql

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lazaret/lazaret/internal/testenv"
	"github.com/lazaret/lazaret/premis"
)

// FuzzMembers: whatever the members column holds, DecodeMembers returns
// members or an error, never a panic or more than premis.MaxMembers; what
// EncodeMembers writes reads back the same; and the text a lookup searches
// for (memberNeedle) is in the column exactly when the object is a member,
// whatever the object ids hold (quotes, brackets, commas, escapes).
func FuzzMembers(f *testing.F) {
	seeds := testenv.NewSeeds(f)
	seeds.Add(`[["inv#1",1,64,"IFTMIN"]]`, "inv#1", "inv#2", int64(7), "INVOIC")
	seeds.Add(`[["a",1,2,"b"],["c",3,4,"d"]]`, `a","b`, `["a",`, int64(0), "")
	seeds.Add(`[[null,1,2,3]]`, `x\"y`, "x", int64(-1), "[")
	seeds.Add(`[["",0,0,""]] junk`, "", "a,", int64(1<<62), `"],["`)
	seeds.Add(`[["\u0069nv#1",1,64,"IFTMIN"]]`, "inv#1", "", int64(0), "")
	seeds.Add(`[ ["inv#1",1,64,"IFTMIN",5]]`, "inv#1", "", int64(0), "")
	f.Fuzz(func(t *testing.T, column, id1, id2 string, offset int64, typ string) {
		if ms, err := DecodeMembers(column); err == nil && (len(ms) == 0) != (column == "") || len(ms) > premis.MaxMembers {
			t.Fatalf("DecodeMembers(%q) = %d members, %v", column, len(ms), err)
		} else if err == nil {
			// Only the ledger's own text decodes: no other spelling of the
			// same members can hide one from a lookup.
			if again, _ := EncodeMembers(ms); again != column {
				t.Fatalf("DecodeMembers accepted %q, which the ledger writes as %q", column, again)
			}
		}
		id1, id2, typ = strings.ToValidUTF8(id1, "?"), strings.ToValidUTF8(id2, "?"), strings.ToValidUTF8(typ, "?")
		if id1 == "" {
			return // no member has an empty object id
		}
		ms := []premis.Member{{ObjectID: id1, Number: 1, Offset: offset, Type: typ}}
		if id2 != "" && id2 != id1 {
			ms = append(ms, premis.Member{ObjectID: id2, Number: 2, Offset: offset / 2, Type: typ + id1})
		}
		text, err := EncodeMembers(ms)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeMembers(text)
		if err != nil || !slices.Equal(back, ms) {
			t.Fatalf("round trip of %+v through %q: %+v, %v", ms, text, back, err)
		}
		for _, probe := range []string{id1, id2, typ, id1 + id2, typ + id1} {
			if !utf8.ValidString(probe) || probe == "" {
				continue
			}
			member := slices.ContainsFunc(ms, func(m premis.Member) bool { return m.ObjectID == probe })
			if found := strings.Contains(text, memberNeedle(probe)); found != member {
				t.Fatalf("needle of %q in %q: found %v, member %v", probe, text, found, member)
			}
		}
	})
}
