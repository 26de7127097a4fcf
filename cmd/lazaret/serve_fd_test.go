//go:build linux

package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lazaret/lazaret/fixtures"
	"github.com/lazaret/lazaret/internal/testenv"
)

// TestServeUnderADescriptorFlood: serve in a child process limited to
// 1,024 file descriptors (ulimit -n 1024), with 1,100 idle connections
// held against it. Before, the connections took every descriptor: the API
// stopped answering (/healthz waited behind them until their header
// timeout), and the worker, unable to open a good master (EMFILE),
// quarantined it as unclassified. Now serve holds at most half its
// descriptors as connections, evicting the longest idle one for a new
// one: /healthz answers at once and the master submitted meanwhile is
// accepted on its first attempt.
func TestServeUnderADescriptorFlood(t *testing.T) {
	url := testenv.Redis(t, 9)
	dir := t.TempDir()
	batch := filepath.Join(dir, "batch")
	if err := os.MkdirAll(batch, 0o755); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	icc := fixtures.ICCProfile("sRGB IEC61966-2.1")
	if _, err := fixtures.WriteTIFF(&buf, []fixtures.Page{{Width: 64, Height: 48, Samples: 3, Deflate: true, RowsPerStrip: 16, DPI: 400, ICC: icc}}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(batch, "m.tif"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	manifest := filepath.Join(batch, "manifest.json")
	m := fmt.Sprintf(`{"batch_id": "flood", "submitter": "t", "items": [{"object_id": "good", "kind": "tiff", "path": "m.tif", "sha256": %q,
 "color_profile": "sRGB IEC61966-2.1", "resolution_dpi": 400}]}`, hex.EncodeToString(sum[:]))
	if err := os.WriteFile(manifest, []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	ledger := filepath.Join(dir, "ledger.db")
	common := []string{"--redis", url, "--ledger", ledger}
	if _, stderr, code := runCmd(t, append([]string{"submit", "--dry-run"}, append(common, manifest)...)...); code != 0 {
		t.Fatal(stderr)
	}

	args, _ := json.Marshal(append([]string{"serve", "--listen", "127.0.0.1:0", "--reconcile-every", "1h"}, common...))
	cmd := exec.Command("sh", "-c", `ulimit -n 1024 && exec "$0" -test.run='^$'`, os.Args[0])
	cmd.Env = append(os.Environ(), inspectArgsEnv+"="+string(args), inspectReportEnv+"="+filepath.Join(dir, "report.json"), "LAZARET_LOG_LEVEL=info")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	sc := bufio.NewScanner(stdout)
	var addr string
	for sc.Scan() {
		if m := regexp.MustCompile(`serving on http://(\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
			break
		}
	}
	go io.Copy(io.Discard, stdout)
	if addr == "" {
		t.Fatalf("serve did not say where it listens:\n%s", stderr.String())
	}
	limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", cmd.Process.Pid))
	if err != nil || !regexp.MustCompile(`Max open files\s+1024\s+1024`).Match(limits) {
		t.Fatalf("serve's descriptor limit is not 1024: %v\n%s", err, limits)
	}

	const flood = 1100
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range flood {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", len(conns)+1, err)
		}
		conns = append(conns, c)
	}
	start := time.Now()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatalf("/healthz behind %d idle connections: %v\n%s", flood, err, stderr.String())
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %s", resp.Status)
	}
	t.Logf("/healthz answered in %s behind %d idle connections", time.Since(start).Round(time.Millisecond), flood)
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", cmd.Process.Pid))
	t.Logf("serve holds %d descriptors of 1024", len(fds))

	out, serr, code := runCmd(t, append([]string{"submit", "--wait", "--wait-timeout", "60s"}, append(common, manifest)...)...)
	if code != 0 {
		t.Fatalf("a good master submitted during the flood: exit %d\n%s%s\nserve:\n%s", code, out, serr, stderr.String())
	}
	evs, _, code := runCmd(t, "events", "ls", "--json", "--batch", "flood", "--ledger", ledger)
	if code != 0 || !strings.Contains(evs, `"type":"ing","date_time"`) || !strings.Contains(evs, `"destination":"accept","object_id":"good"`) || strings.Contains(evs, "unclassified") || strings.Contains(evs, "io.descriptors") {
		t.Errorf("events of the master (want accepted on the first attempt):\n%s", evs)
	}
	// Every line serve wrote is JSON (net/http's own log too).
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if line != "" && !json.Valid([]byte(line)) {
			t.Errorf("serve wrote a line that is not JSON: %s", line)
		}
	}
	// And every connection still open is one serve chose to keep.
	alive := 0
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err != nil && strings.Contains(err.Error(), "timeout") {
			alive++
		}
	}
	t.Logf("%d of %d flood connections still held", alive, flood)
	if alive > 1024/2 {
		t.Errorf("%d flood connections held, more than the limit of %d", alive, 1024/2)
	}
}
