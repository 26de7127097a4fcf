package validate

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
)

// The kinds built in. A manifest item's kind is one of the registered
// kinds' names (see RegisterKind).
const (
	// KindTIFF: a TIFF or BigTIFF preservation master (CheckMasterSource).
	KindTIFF = "tiff"
	// KindEDIFACT: a UN/EDIFACT interchange, whose messages are decided one
	// by one (CheckInterchangeSource).
	KindEDIFACT = "edifact"
)

// Kind is a kind of item a manifest submits: how a file of it is
// recognised, how an item is checked, and whether it holds messages that
// are decided one by one. A new kind is its checks plus one RegisterKind.
type Kind struct {
	// Name is the manifest's kind value ("tiff").
	Name string
	// Sniff reports whether a file's first bytes (up to SniffLen of them)
	// look like this kind; inspect uses it when no kind is given.
	Sniff func(head []byte) bool
	// Check validates one item read from src (item is nil for a bare file:
	// no manifest rules). A kind with Messages returns the interchange's
	// per-message verdicts.
	Check func(ctx context.Context, src Source, item *Item, opt CheckOptions) (*Report, *InterchangeResult, error)
	// Messages: an item is a container of messages, each decided on its
	// own and recorded in chunks (an interchange).
	Messages bool
	// Fields, when set, checks the kind's manifest fields that need no
	// file (a master's color_profile given, its resolution_dpi a number),
	// as *FieldError values joined with errors.Join: what an operator's
	// correction of an item is held to before its replay reads the file.
	Fields func(it Item) error
}

// CheckOptions are the rules a Kind's Check applies; each kind reads the
// ones that concern it.
type CheckOptions struct {
	Master     MasterPolicy
	Registries *Registries // nil: the built-in ones
	EDI        EDIRules
	// Message, when set, checks only that message of an interchange (a
	// replay of one message), in the file's interchange number
	// Interchange (0 or 1: the first).
	Message     string
	Interchange int
}

// SniffLen is how many bytes of a file Sniff is shown.
const SniffLen = 64

var (
	kindsMu sync.RWMutex
	kinds   []Kind
)

// RegisterKind adds a kind. It is meant for init: a second kind of the
// same name, or one without a name or Check, is a programming error and
// panics.
func RegisterKind(k Kind) {
	if k.Name == "" || k.Check == nil {
		panic("validate: RegisterKind needs a name and a Check")
	}
	kindsMu.Lock()
	defer kindsMu.Unlock()
	if slices.ContainsFunc(kinds, func(o Kind) bool { return o.Name == k.Name }) {
		panic(fmt.Sprintf("validate: kind %q registered twice", k.Name))
	}
	kinds = append(kinds, k)
}

// Kinds lists the registered kinds, in the order they were registered
// (the built-in ones first).
func Kinds() []Kind {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	return slices.Clone(kinds)
}

// KindNames lists the registered kinds' names.
func KindNames() []string {
	ks := Kinds()
	names := make([]string, len(ks))
	for i, k := range ks {
		names[i] = k.Name
	}
	return names
}

// KindNamed is the registered kind called name.
func KindNamed(name string) (Kind, bool) {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	for _, k := range kinds {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// SniffKind names the kind a file's first bytes look like: the first
// registered kind whose Sniff says yes, and otherwise TIFF, whose checks
// then say what the file is not.
func SniffKind(head []byte) string {
	for _, k := range Kinds() {
		if k.Sniff != nil && k.Sniff(head) {
			return k.Name
		}
	}
	return KindTIFF
}

func init() {
	RegisterKind(Kind{Name: KindTIFF, Sniff: sniffTIFF,
		Check: func(ctx context.Context, src Source, item *Item, opt CheckOptions) (*Report, *InterchangeResult, error) {
			rep, err := CheckMasterSource(ctx, src, item, opt.Master)
			return rep, nil, err
		},
		Fields: func(it Item) error { return CheckItemRules(it, nil, nil, MasterRules{}) }})
	RegisterKind(Kind{Name: KindEDIFACT, Sniff: sniffEDIFACT, Messages: true,
		Check: func(ctx context.Context, src Source, item *Item, opt CheckOptions) (*Report, *InterchangeResult, error) {
			regs := opt.Registries
			if regs == nil {
				regs = Builtin()
			}
			return CheckMessagesSource(ctx, src, item, regs, opt.EDI, MessageKey{Interchange: opt.Interchange, Ref: opt.Message})
		}})
}

// sniffTIFF: the byte order and 42 (TIFF) or 43 (BigTIFF).
func sniffTIFF(h []byte) bool {
	for _, magic := range []string{"II*\x00", "MM\x00*", "II+\x00", "MM\x00+"} {
		if bytes.HasPrefix(h, []byte(magic)) {
			return true
		}
	}
	return false
}

// sniffEDIFACT: UNA, UNB or UNH first, after a byte-order mark and blank
// lines.
func sniffEDIFACT(h []byte) bool {
	h = bytes.TrimLeft(bytes.TrimPrefix(h, []byte("\xef\xbb\xbf")), " \t\r\n")
	return bytes.HasPrefix(h, []byte("UNA")) || bytes.HasPrefix(h, []byte("UNB")) || bytes.HasPrefix(h, []byte("UNH"))
}
