package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/internal/testenv"
)

// asMainEnv makes this test binary run lazaret's main (TestMain), so a
// terminal test can start the real command in a real terminal.
const asMainEnv = "LAZARET_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) != "" {
		os.Args = append([]string{"lazaret"}, os.Args[1:]...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestSubmitWaitInTerminal runs `lazaret submit --wait` in a real terminal
// (tmux) while workers drain the batch: the screen shows the progress bar
// at 100 % and the final summary, and the command exits 1 because the
// fixture batch holds failing items.
func TestSubmitWaitInTerminal(t *testing.T) {
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		if testenv.InCI() {
			t.Fatal("tmux is required in CI (.ci/run installs it)")
		}
		t.Skip("tmux not installed")
	}
	url := testenv.Redis(t, 11)
	dir := t.TempDir()
	ledger := filepath.Join(dir, "ledger.db")
	b, err := fixtures.WriteArchiveBatch(filepath.Join(dir, "batch"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"worker", "--redis", url, "--ledger", ledger, "--retry-base", "100ms", "--log-level", "error"}, &bytes.Buffer{}, &bytes.Buffer{})
	}()
	defer func() { cancel(); <-done }()

	session := "lazaret-test-" + filepath.Base(dir)
	sock := filepath.Join(dir, "tmux.sock")
	tm := func(args ...string) string {
		out, err := exec.Command(tmux, append([]string{"-S", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	cmdline := strings.Join([]string{"env", asMainEnv + "=1", "LAZARET_LOG_LEVEL=error", os.Args[0], "submit", "--wait", "--redis", url, "--ledger", ledger, b.Manifest}, " ")
	tm("new-session", "-d", "-s", session, "-x", "160", "-y", "40", cmdline+"; echo EXIT=$?; sleep 60")
	defer exec.Command(tmux, "-S", sock, "kill-server").Run()
	var screen string
	deadline := time.Now().Add(60 * time.Second)
	for {
		screen = tm("capture-pane", "-p", "-t", session)
		if strings.Contains(screen, "EXIT=") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("submit --wait did not end:\n%s", screen)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, want := range []string{
		"batch fixtures-archive-0001: 10 enqueued",
		"100%",         // the bar, finished
		"10/10 done",   // the summary line
		"items failed", // why it exits 1
		"EXIT=1",
	} {
		if !strings.Contains(screen, want) {
			t.Errorf("the terminal does not show %q:\n%s", want, screen)
		}
	}
	t.Logf("the terminal:\n%s", screen)
	if !strings.ContainsAny(screen, "█=") {
		t.Errorf("no progress bar on the terminal:\n%s", screen)
	}
}
