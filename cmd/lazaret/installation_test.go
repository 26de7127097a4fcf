package main

import (
	"strings"
	"testing"
)

// --installation-id reaches the reply policy, and an id that could not
// stand in a reference's hash input as typed (spaces, control characters,
// over 64 bytes) is refused by Validate.
func TestInstallationID(t *testing.T) {
	cfg := defaultConfig()
	cfg.InstallationID = "site-a"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := cfg.replies().Installation; got != "site-a" {
		t.Errorf("reply policy installation %q", got)
	}
	for _, bad := range []string{"site a", "site\x1b", strings.Repeat("x", 65)} {
		cfg.InstallationID = bad
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "installation_id") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
