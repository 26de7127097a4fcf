package tiff

import "fmt"

// Tags that point at child IFDs.
const (
	tagExifIFD             = 34665
	tagGPSIFD              = 34853
	tagInteroperabilityIFD = 40965
)

// maxIFDDepth is how deep child directories nest below a page's IFD before
// the walk refuses to follow: a page's EXIF IFD is at depth 1, its
// Interoperability IFD at 2; a SubIFD of a SubIFD at 2. Real files use 2.
const maxIFDDepth = 4

// Directory is an EXIF, GPS or Interoperability IFD the walk checked.
type Directory struct {
	Page    int    // 1-based page it belongs to
	Path    string // e.g. "EXIF", "EXIF / Interoperability", "SubIFD 1 / EXIF"
	Offset  int64  // byte offset of the IFD
	Entries int
}

// privateIFDs are the pointer tags to metadata directories, in tag order,
// with the name each gets in a path.
var privateIFDs = []struct {
	tag  uint16
	name string
}{
	{tagExifIFD, "EXIF"},
	{tagGPSIFD, "GPS"},
	{tagInteroperabilityIFD, "Interoperability"},
}

// children walks the directories an IFD points at: SubIFDs (as images,
// with the checks of a page) and EXIF, GPS and Interoperability IFDs
// (with the checks of any IFD: entry count, types, counts, values inside
// the file). depth is theirs: 1 below a page's IFD. Every directory counts
// against Limits.MaxPages and the loop check of the main chain.
func (w *walker) children(entries map[uint16]entry, depth int) error {
	parent := w.path
	defer func() { w.path = parent }()
	if depth > maxIFDDepth {
		for _, tag := range []uint16{tagSubIFDs, tagExifIFD, tagGPSIFD, tagInteroperabilityIFD} {
			if e, ok := entries[tag]; ok {
				return w.fail(tag, e.at, "tiff.ifd-depth", ErrIFDDepth, "more than %d levels of child IFDs", maxIFDDepth)
			}
		}
	}
	if e, ok := entries[tagSubIFDs]; ok {
		if err := w.subIFDs(e, parent, depth); err != nil {
			return err
		}
	}
	for _, d := range privateIFDs {
		e, ok := entries[d.tag]
		if !ok {
			continue
		}
		w.path = parent
		offs, err := w.pointers(e, 1)
		if err != nil {
			return err
		}
		w.path = join(parent, d.name)
		if err := w.visit(offs[0], e.valueAt, TagName(d.tag)+" pointer"); err != nil {
			return err
		}
		sub, next, nextAt, err := w.ifd(int64(offs[0]))
		if err != nil {
			return err
		}
		w.info.Directories = append(w.info.Directories, Directory{Page: w.page + 1, Path: w.path, Offset: int64(offs[0]), Entries: len(sub)})
		if next != 0 {
			w.warn("tiff.private-ifd-next", nextAt, "%s IFD has a next-IFD pointer (%d); it is not followed", d.name, next)
		}
		if err := w.children(sub, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// subIFDs walks the SubIFDs of an IFD whose path is parent: each value
// starts a chain of images linked by their next-IFD pointers. A value that
// an earlier chain of the same tag already reached is not walked again.
func (w *walker) subIFDs(e entry, parent string, depth int) error {
	w.path = parent
	offs, err := w.pointers(e, uint64(max(w.lim.MaxPages-w.ifds, 1)))
	if err != nil {
		return err
	}
	ts := typeSize[e.typ]
	inChains := map[uint64]bool{}
	for c, off := range offs {
		at := e.valueAt + int64(c)*ts
		for k := 1; off != 0; k++ {
			if k == 1 && inChains[off] {
				break
			}
			w.path = join(parent, fmt.Sprintf("SubIFD %d", c+1))
			if k > 1 {
				w.path = join(parent, fmt.Sprintf("SubIFD %d.%d", c+1, k))
			}
			what := "SubIFDs value"
			if k > 1 {
				what = "next IFD pointer"
			}
			if err := w.visit(off, at, what); err != nil {
				return err
			}
			inChains[off] = true
			sub, next, nextAt, err := w.ifd(int64(off))
			if err != nil {
				return err
			}
			p, err := w.page_(int64(off), sub)
			if err != nil {
				return err
			}
			p.Path = w.path
			if w.firstOnly {
				w.info.subRefs = append(w.info.subRefs, imageRef{p.Index, p.Path, p.Offset})
			} else {
				w.info.SubImages = append(w.info.SubImages, *p)
			}
			w.info.SubImageCount++
			if err := w.children(sub, depth+1); err != nil {
				return err
			}
			off, at = next, nextAt
		}
	}
	return nil
}

// pointers reads the IFD offsets of a pointer tag: LONG or IFD values (LONG8
// or IFD8 too in BigTIFF), at least one and at most max, none of them 0.
func (w *walker) pointers(e entry, max uint64) ([]uint64, error) {
	switch e.typ {
	case typeLong, typeIFD, typeLong8, typeIFD8:
	default:
		return nil, w.fail(e.tag, e.at+2, "tiff.bad-type", ErrBadEntry, "type %d where an IFD offset (LONG or IFD) is required", e.typ)
	}
	if e.count == 0 {
		return nil, w.fail(e.tag, e.at+4, "tiff.bad-count", ErrBadEntry, "no IFD offset")
	}
	offs, err := w.uints(e, max)
	if err != nil {
		return nil, err
	}
	for i, o := range offs {
		if o == 0 {
			return nil, w.fail(e.tag, e.valueAt+int64(i)*typeSize[e.typ], "tiff.bad-ifd-pointer", ErrBadValue, "IFD offset %d of %s is 0", i+1, TagName(e.tag))
		}
	}
	return offs, nil
}

func join(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + " / " + name
}

// images is every image of the file in walk order: the pages, then the
// SubIFD images.
func (info *TIFFInfo) images() []*Page {
	out := make([]*Page, 0, len(info.Pages)+len(info.SubImages))
	for i := range info.Pages {
		out = append(out, &info.Pages[i])
	}
	for i := range info.SubImages {
		out = append(out, &info.SubImages[i])
	}
	return out
}

// atPath adds p's Path to the position of an error DecodePages returns
// about p (the decoder's errors name the page only).
func atPath(err error, p *Page) error {
	if p == nil || p.Path == "" {
		return err
	}
	switch e := err.(type) {
	case *FormatError:
		if e.Path == "" {
			e.Path = p.Path
		}
	case *LimitError:
		if e.Path == "" {
			e.Path = p.Path
		}
	}
	return err
}
