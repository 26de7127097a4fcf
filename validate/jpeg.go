package validate

import "io"

func decodeJPEGPage(r io.ReaderAt, info *TIFFInfo, p *Page, avail int64, skipped *[]*UnsupportedError) error {
	*skipped = append(*skipped, &UnsupportedError{Page: p.Index + 1, Path: p.Path, Offset: p.Offset, Reason: "JPEG compression"})
	return nil
}

func decodeOldJPEG(r io.ReaderAt, info *TIFFInfo, p *Page, avail int64, skipped *[]*UnsupportedError) error {
	*skipped = append(*skipped, &UnsupportedError{Page: p.Index + 1, Path: p.Path, Offset: p.Offset, Reason: "old-style JPEG (compression 6, deprecated by TIFF Technical Note 2)"})
	return nil
}
