package validate

import "github.com/lazaret/lazaret/tiff"

// Warning is something worth a look that does not fail the item: the TIFF
// reader's warnings and the rules' own share one type, so a Report lists
// them together.
type Warning = tiff.Warning
