package tiff

import "io"

// WalkFirst walks r as WalkTIFF does but keeps only the first page in
// info.Pages (info.PageCount counts them all); onPage, when not nil, sees
// every page of the main chain as it is read. A Decoder reads the pages
// again, one at a time, so a file of many pages costs what one page does.
func WalkFirst(r io.ReaderAt, size int64, lim Limits, onPage func(p *Page)) (*TIFFInfo, error) {
	return walkTIFF(r, size, lim, true, onPage)
}

// A Decoder decodes, or counts, the pixel data of a walked file page by
// page, within the budgets of its DecodeOptions.
type Decoder struct {
	r    io.ReaderAt
	info *TIFFInfo
	lim  Limits
	dec  *pageDecoder
}

// NewDecoder returns a Decoder for info, the result of WalkFirst or
// WalkTIFF over r with lim. The warnings decoding finds are appended to
// info.Warnings, at most 100 of each code, the rest summarised.
func NewDecoder(r io.ReaderAt, info *TIFFInfo, lim Limits, opt DecodeOptions) *Decoder {
	info.decodeCap = &WarnCap{Max: MaxWarningsPerCode}
	return &Decoder{r: r, info: info, lim: lim, dec: newPageDecoder(r, info, opt)}
}

// Decode reads again and decodes every page of the main chain, then every
// SubIFD image. sub, when not nil, is called on each SubIFD image before it
// is decoded; an error from it stops decoding and is returned unchanged.
func (d *Decoder) Decode(sub func(p *Page) error) error {
	err := eachPage(d.r, d.info, d.lim, d.dec.decode)
	if err == nil {
		var refused error
		err = eachSubImage(d.r, d.info, d.lim, func(p *Page) error {
			if sub != nil {
				if refused = sub(p); refused != nil {
					return refused
				}
			}
			return d.dec.decode(p)
		})
		if refused != nil && err == refused {
			return err // sub's verdict: decoding did not finish, nothing to summarise
		}
	}
	d.info.Warnings = d.info.decodeCap.Summarise(d.info.Warnings)
	return err
}

// Skipped lists the images whose pixel data was valid as far as the
// decoder could tell but not decoded, in the order they were met.
func (d *Decoder) Skipped() []*UnsupportedError { return d.dec.skipped }
