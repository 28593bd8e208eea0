package crashtest

import (
	"encoding/binary"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// pagesInUse returns the page size and the high water mark of the newest meta page
// of a bbolt file (the layout is bbolt's: page header 16 bytes, then magic, version,
// page size, flags, root bucket (16), freelist, pgid, txid).
func pagesInUse(t *testing.T, path string) (pageSize, hwm int64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var txid uint64
	for page := int64(0); page < 2; page++ {
		var meta [72]byte
		if _, err := f.ReadAt(meta[:], page*4096); err != nil {
			t.Fatal(err)
		}
		if id := binary.LittleEndian.Uint64(meta[64:]); id >= txid {
			txid = id
			pageSize, hwm = int64(binary.LittleEndian.Uint32(meta[24:])), int64(binary.LittleEndian.Uint64(meta[56:]))
		}
	}
	return pageSize, hwm
}

// readyz answers GET /readyz's status, 0 when nothing answers.
func readyz(listen string) int {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + listen + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// A store damaged under the running daemon — every page in use overwritten, as a
// disk or another program might — makes the daemon fail fast: /readyz stops saying
// ready and `run` exits 1 saying the store is damaged, rather than hanging on the
// writer lock a panic inside bbolt left held, or ticking on with errors.
func TestDamageUnderTheRunningDaemonStopsIt(t *testing.T) {
	slackpollBinary(t)
	e := newEnv(t, 4)
	listen := freePort(t)
	p := e.start(e.writeConfig("slackpoll.yaml", listen))
	defer func() {
		if !p.exited() {
			p.kill(t)
		}
	}()
	ticked := waitFor(60*time.Second, func() bool {
		resp, err := http.Get("http://" + listen + "/v1/status")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var rep struct {
			LastTick *json.RawMessage `json:"last_tick"`
		}
		return json.NewDecoder(resp.Body).Decode(&rep) == nil && rep.LastTick != nil
	})
	if !ticked || readyz(listen) != http.StatusOK {
		t.Fatalf("no tick finished, or not ready, within 60 s:\n%s", p.out.tail(3000))
	}

	ps, hwm := pagesInUse(t, e.storePath)
	f, err := os.OpenFile(e.storePath, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	garbage := []byte(strings.Repeat("\xff", int(ps)))
	for page := int64(2); page < hwm; page++ {
		if _, err := f.WriteAt(garbage, page*ps); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	damaged := time.Now()

	time.Sleep(300 * time.Millisecond)
	if code := readyz(listen); code == http.StatusOK {
		t.Errorf("/readyz answers 200 after the store was damaged")
	}
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("slackpoll run still runs 20 s after its store was damaged (readyz %d):\n%s", readyz(listen), p.out.tail(3000))
	}
	out := p.out.tail(6000)
	if code := p.cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(out, "is damaged") {
		t.Fatalf("exit %d, want 1 saying the store is damaged:\n%s", code, out)
	}
	for _, bad := range []string{"panic:", "goroutine ", "fatal error"} {
		if strings.Contains(out, bad) {
			t.Errorf("output shows %q:\n%s", bad, out)
		}
	}
	t.Logf("exit 1 %v after the damage", time.Since(damaged).Round(time.Millisecond))
}
