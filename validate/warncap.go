package validate

import "fmt"

// warnCap lists at most max warnings of each code (all when max is 0) and
// counts the rest, by code and page, for one summary warning a code.
type warnCap struct {
	max    int
	warned map[string]*elided
	capped []string // the codes over max, in the order they went over
}

// elided counts the warnings of one code: listed, then not listed (more),
// with the first and last page of those not listed.
type elided struct {
	listed, more, first, last int
}

// maxWarningsPerCode is the most warnings of one code CheckMaster lists.
const maxWarningsPerCode = 100

// listed reports whether a warning of code on page (1-based) is to be
// listed; one that is not is counted.
func (c *warnCap) listed(code string, page int) bool {
	if c.max <= 0 {
		return true
	}
	if c.warned == nil {
		c.warned = map[string]*elided{}
	}
	el := c.warned[code]
	if el == nil {
		el = &elided{}
		c.warned[code] = el
	}
	if el.listed++; el.listed <= c.max {
		return true
	}
	if el.more == 0 {
		el.first = page
		c.capped = append(c.capped, code)
	}
	el.more, el.last = el.more+1, page
	return false
}

// summarise appends to ws, for each code with warnings not listed, one
// warning that says how many and on which pages, in the order the codes
// met their cap.
func (c *warnCap) summarise(ws []Warning) []Warning {
	for _, code := range c.capped {
		el := c.warned[code]
		first := el.first
		ws = append(ws, Warning{Code: code, Page: &first,
			Message: fmt.Sprintf("%d more %s warnings not listed (the first %d are), on pages %d to %d", el.more, code, c.max, el.first, el.last)})
	}
	return ws
}

// warn records wr, unless info's decodeCap says it is only counted.
