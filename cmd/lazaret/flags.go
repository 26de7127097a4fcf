package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// Flag values of more than one command, and the "did you mean" of an unknown flag.

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Type() string   { return "strings" }
func (l *listFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// suggestFlag adds "did you mean --X?" to pflag's error for an unknown
// flag, when a declared one is close: an edit or two away, or one it
// begins.
// A long flag written with one dash (-ledger), which pflag reads as
// shorthands, is pointed at its two-dash form.
func suggestFlag(fs *pflag.FlagSet, err error) error {
	if rest, ok := strings.CutPrefix(err.Error(), "unknown shorthand flag: "); ok {
		if _, word, ok := strings.Cut(rest, " in -"); ok {
			if name, _, _ := strings.Cut(word, "="); len(name) > 1 && fs.Lookup(name) != nil {
				return fmt.Errorf("unknown flag -%s: did you mean --%s?", name, name)
			}
		}
		return err
	}
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return err
	}
	best, bestD := "", 3 // at most two edits away
	fs.VisitAll(func(f *pflag.Flag) {
		if d := editDistance(name, f.Name); d < bestD {
			best, bestD = f.Name, d
		}
	})
	if best == "" { // --pipeline for --pipeline-items
		fs.VisitAll(func(f *pflag.Flag) {
			if best == "" && len(name) >= 3 && strings.HasPrefix(f.Name, name) {
				best = f.Name
			}
		})
	}
	if best == "" {
		return fmt.Errorf("unknown flag --%s", name)
	}
	return fmt.Errorf("unknown flag --%s: did you mean --%s?", name, best)
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
