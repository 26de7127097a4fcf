package faults

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"

	"github.com/lazaret/lazaret/fixtures"
)

// templates are the archive fixtures (fixtures.WriteArchiveBatch): one file
// per kind of item and its manifest entry, with where it must end up.
type templates struct {
	dir     string
	ics     map[string]*icTemplate
	icOrder []string
	entries map[string]map[string]any // object id -> manifest entry
	files   map[string][]byte         // object id -> file content
	expect  map[string]fixtures.Expectation
	order   []string
}

func loadTemplates(dir string) (*templates, error) {
	b, err := fixtures.WriteArchiveBatch(dir)
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(b.Manifest)
	if err != nil {
		return nil, err
	}
	var m struct {
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("fixture manifest: %w", err)
	}
	t := &templates{dir: dir, entries: map[string]map[string]any{}, files: map[string][]byte{}, expect: b.Expect, order: b.Order}
	for _, it := range m.Items {
		id, _ := it["object_id"].(string)
		path, _ := it["path"].(string)
		data, err := os.ReadFile(filepath.Join(dir, path))
		if err != nil {
			return nil, err
		}
		t.entries[id], t.files[id] = it, data
	}
	for _, need := range []string{"master-good-single", "master-good-multipage"} {
		if _, ok := t.entries[need]; !ok {
			return nil, fmt.Errorf("fixture %s is gone: the harness's item mix needs it", need)
		}
	}
	return t, nil
}

// Item mix, in per mille. Every fixture of a failing kind gets an equal share
// of its class's weight.
const (
	mixGoodSingle  = 380
	mixInterchange = 70 // UN/EDIFACT interchanges (see icMix)
	mixGoodMulti   = 300
	mixStructural  = 80  // -> dead-letter after one attempt
	mixSemantic    = 120 // -> quarantine
	mixMissing     = 50  // file removed after submit: transient, retried
)

// icMix shares out mixInterchange among the interchanges, in per mille:
// sound ones, ones with failing messages among good ones, broken envelopes,
// and the corpus's (each file an equal share; their share goes to the sound
// ones when the corpus is absent). The large ones are not drawn: newBatch
// places them where a fault fires.
var icMix = []struct {
	id     string
	weight int
}{
	{"ic-good-one", 150}, {"ic-good-five", 200}, {"ic-mixed", 200},
	{"ic-unz-mismatch", 50}, {"ic-missing-bgm", 50}, {"ic-unt-count", 50},
	{"corpus", 300},
}

// drawInterchange picks an interchange template for one drawn item.
func (t *templates) drawInterchange(rng *rand.Rand) *icTemplate {
	var corpus []*icTemplate
	for _, id := range t.icOrder {
		if t.ics[id].corpus {
			corpus = append(corpus, t.ics[id])
		}
	}
	r := rng.IntN(1000)
	for _, m := range icMix {
		if r -= m.weight; r < 0 {
			if m.id == "corpus" {
				if len(corpus) == 0 {
					return t.ics["ic-good-five"]
				}
				return corpus[rng.IntN(len(corpus))]
			}
			return t.ics[m.id]
		}
	}
	return t.ics["ic-good-one"]
}

// item is one submitted item.
type item struct {
	ObjectID string
	Template string      // fixture object id it copies
	Expect   string      // destination the fixture expects ("" for a missing file: timing decides)
	Missing  string      // "", "late" (put back 1.5 s after submit), "never"
	IC       *icTemplate // the interchange it copies (Template is its id); nil for a master
	file     string      // file name in the batch folder
	entry    map[string]any
}

// messages are the object ids of an interchange item's messages.
func (it *item) messages() []string {
	if it.IC == nil {
		return nil
	}
	out := make([]string, len(it.IC.refs))
	for i, ref := range it.IC.refs {
		out[i] = messageObjectID(it.ObjectID, ref)
	}
	return out
}

// batch is one run's items, written as chunk manifests (submitted over the
// fault window) and one manifest of everything (for resubmission).
type batch struct {
	id, dir    string
	items      []*item
	byObject   map[string]*item
	chunks     []string
	chunkItems [][]*item
	all        string
	tmpl       *templates
}

func (t *templates) classOf(id string) string {
	return t.expect[id].Destination
}

// newBatch writes sum(sizes) items drawn from the templates with the given
// seed, as one chunk manifest per size (in order) and manifest.json. The
// chunks listed in bigAt start with a large interchange: the first (and
// every eighth) a sound one of bigMessages messages, the next one whose
// last message breaks the envelope, the others none (each sound one delays
// its fault until it is midway, and with it the end of the run); a single
// listed chunk gets both.
func newBatch(t *templates, dir, batchID string, sizes []int, seed uint64, bigAt []int) (*batch, error) {
	n := 0
	for _, s := range sizes {
		n += s
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var structural, semantic []string
	for _, id := range t.order {
		switch t.classOf(id) {
		case "dead-letter":
			structural = append(structural, id)
		case "quarantine", "audit-hold":
			semantic = append(semantic, id)
		}
	}
	sort.Strings(structural)
	sort.Strings(semantic)
	// Shared files: every item of a template reads the same file.
	for id, data := range t.files {
		if err := os.WriteFile(filepath.Join(dir, t.entries[id]["path"].(string)), data, 0o644); err != nil {
			return nil, err
		}
	}
	for _, ic := range t.ics {
		if err := os.WriteFile(filepath.Join(dir, ic.file), ic.data, 0o644); err != nil {
			return nil, err
		}
	}
	big := map[int]*icTemplate{} // item index -> large interchange placed there
	starts := make([]int, len(sizes))
	for c := 1; c < len(sizes); c++ {
		starts[c] = starts[c-1] + sizes[c-1]
	}
	for j, c := range bigAt {
		if c < 0 || c >= len(sizes) || sizes[c] == 0 {
			continue
		}
		at := starts[c]
		for big[at] != nil && at+1 < starts[c]+sizes[c] {
			at++
		}
		switch j % 8 {
		case 0:
			big[at] = t.ics["ic-big"]
		case 1:
			big[at] = t.ics["ic-big-late-unt"]
		default:
			continue
		}
		if len(bigAt) == 1 && sizes[c] > 1 {
			big[at+1] = t.ics["ic-big-late-unt"]
		}
	}
	rng := rand.New(rand.NewPCG(seed, 0x1a2a7e7))
	b := &batch{id: batchID, dir: dir, byObject: map[string]*item{}, tmpl: t}
	for i := range n {
		r := rng.IntN(1000)
		var tmpl, missing string
		var ic *icTemplate
		switch {
		case big[i] != nil:
			ic = big[i]
		case r < mixInterchange && len(t.ics) > 0:
			ic = t.drawInterchange(rng)
		case r < mixGoodSingle+mixInterchange:
			tmpl = "master-good-single"
		case r < mixGoodSingle+mixInterchange+mixGoodMulti:
			tmpl = "master-good-multipage"
		case r < mixGoodSingle+mixInterchange+mixGoodMulti+mixStructural && len(structural) > 0:
			tmpl = structural[rng.IntN(len(structural))]
		case r < mixGoodSingle+mixInterchange+mixGoodMulti+mixStructural+mixSemantic && len(semantic) > 0:
			tmpl = semantic[rng.IntN(len(semantic))]
		default:
			tmpl, missing = "master-good-single", "late"
			if rng.IntN(2) == 0 {
				missing = "never"
			}
		}
		if ic != nil {
			it := &item{ObjectID: fmt.Sprintf("fx-%05d-%s", i, ic.id), Template: ic.id, Expect: ic.expect, IC: ic, file: ic.file}
			it.entry = map[string]any{"object_id": it.ObjectID, "kind": "edifact", "path": ic.file, "sha256": ic.sha}
			b.items = append(b.items, it)
			b.byObject[it.ObjectID] = it
			continue
		}
		it := &item{ObjectID: fmt.Sprintf("fx-%05d-%s", i, tmpl), Template: tmpl, Expect: t.classOf(tmpl), Missing: missing}
		entry := map[string]any{}
		for k, v := range t.entries[tmpl] {
			entry[k] = v
		}
		entry["object_id"] = it.ObjectID
		it.file = t.entries[tmpl]["path"].(string)
		if missing != "" {
			it.file = fmt.Sprintf("missing-%05d.tif", i)
			entry["path"] = it.file
			if err := os.WriteFile(filepath.Join(dir, it.file), t.files[tmpl], 0o644); err != nil {
				return nil, err
			}
			// Where it ends depends on timing and policy (retries left when
			// the file is back, or before it is hidden): no expectation.
			it.Expect = ""
		}
		it.entry = entry
		b.items = append(b.items, it)
		b.byObject[it.ObjectID] = it
	}
	write := func(name string, items []*item) (string, error) {
		entries := make([]map[string]any, len(items))
		for i, it := range items {
			entries[i] = it.entry
		}
		js, err := json.MarshalIndent(map[string]any{"batch_id": batchID, "submitter": "lazaret fault harness", "items": entries}, "", " ")
		if err != nil {
			return "", err
		}
		p := filepath.Join(dir, name)
		return p, os.WriteFile(p, js, 0o644)
	}
	var err error
	if b.all, err = write("manifest.json", b.items); err != nil {
		return nil, err
	}
	lo := 0
	for c, size := range sizes {
		p, err := write(fmt.Sprintf("manifest-%03d.json", c), b.items[lo:lo+size])
		if err != nil {
			return nil, err
		}
		b.chunks = append(b.chunks, p)
		b.chunkItems = append(b.chunkItems, b.items[lo:lo+size])
		lo += size
	}
	return b, nil
}

// bigSound is the object id of the large sound interchange in chunk k
// ("" when there is none).
func (b *batch) bigSound(k int) string {
	for _, it := range b.chunkItems[k] {
		if it.IC != nil && it.IC.big && it.IC.expect == "accept" {
			return it.ObjectID
		}
	}
	return ""
}

// hide removes an item's file (it was there at submit: the worker finds it
// gone, a transient failure); restore puts it back.
func (b *batch) hide(it *item) error { return os.Remove(filepath.Join(b.dir, it.file)) }

func (b *batch) restore(it *item) error {
	p := filepath.Join(b.dir, it.file)
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	return os.WriteFile(p, b.tmpl.files[it.Template], 0o644)
}

func itemKey(batchID, objectID string) string { return batchID + "/" + objectID }
