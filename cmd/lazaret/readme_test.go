package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestReadmeConfiguration: every key a config file may set is in the
// configuration table (docs/configuration.md), and the table names no key
// the code does not know, so the table an operator reads is the one the
// program parses.
func TestReadmeConfiguration(t *testing.T) {
	b, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(b)
	documented := map[string]bool{}
	key := regexp.MustCompile("`([a-z][a-z0-9_]*)`")
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.Split(line, "|")[1] // the JSON column
		for _, m := range key.FindAllStringSubmatch(first, -1) {
			documented[m[1]] = true
		}
	}
	cfg := defaultConfig()
	known, durations := cfg.jsonSettings()
	var keys []string
	for k := range known {
		keys = append(keys, k)
	}
	for k := range durations {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !documented[k] {
			t.Errorf("setting %q is not in the configuration table (docs/configuration.md)", k)
		}
	}
	for k := range documented {
		if !slices.Contains(keys, k) {
			t.Errorf("the configuration table (docs/configuration.md) names %q, which no config file can set", k)
		}
	}
}
