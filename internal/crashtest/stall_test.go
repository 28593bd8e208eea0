package crashtest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// prefill writes mib MiB of 4 KiB messages into a conversation the daemon does not
// poll, so that the store is larger than the sockets' buffers from the start.
func prefill(t *testing.T, path string, mib int) {
	t.Helper()
	writeStore(t, path, "C0PREFILL", mib*256, strings.Repeat("x", 4<<10))
}

// lastTickFinished returns the finish time of the daemon's last tick (GET
// /v1/status), zero when none or when the API does not answer within 2 s.
func lastTickFinished(listen string) time.Time {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + listen + "/v1/status")
	if err != nil {
		return time.Time{}
	}
	defer resp.Body.Close()
	var rep struct {
		LastTick *struct {
			Finished time.Time `json:"finished"`
		} `json:"last_tick"`
	}
	if json.NewDecoder(resp.Body).Decode(&rep) != nil || rep.LastTick == nil {
		return time.Time{}
	}
	return rep.LastTick.Finished
}

// A client that asks for a backup of a store larger than the socket buffers and
// stops reading freezes nothing while the daemon writes tens of MiB (its store
// must grow): ticks go on, /readyz and /v1/status answer, and SIGTERM ends the
// daemon within 5 s, the client still connected.
func TestStalledBackupReaderFreezesNothing(t *testing.T) {
	slackpollBinary(t)
	e := newEnv(t, 6)
	prefill(t, e.storePath, 6) // 9 MiB of pages in a 16 MiB file: bbolt maps 16 MiB
	channel, user := e.publicChannel()
	big := strings.Repeat("y", 16<<10)
	for i := range 1500 { // 24 MiB for the first sync to write: the file must grow
		if _, err := e.fake.Post(channel, user, fmt.Sprintf("%d %s", i, big)); err != nil {
			t.Fatal(err)
		}
	}
	listen := freePort(t)
	p := e.start(e.writeConfig("slackpoll.yaml", listen))
	defer func() {
		if !p.exited() {
			p.kill(t)
		}
	}()
	if !waitFor(20*time.Second, func() bool { return readyz(listen) == http.StatusOK }) {
		t.Fatalf("not ready within 20 s:\n%s", p.out.tail(3000))
	}

	// The stalled client: a 4 KiB receive buffer, the status line read, then nothing.
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	conn, err := d.Dial("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /v1/backup HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	if status, err := bufio.NewReaderSize(conn, 16).ReadString('\n'); err != nil || !strings.Contains(status, " 200 ") {
		t.Fatalf("GET /v1/backup: %q %v", status, err)
	}
	stalled := time.Now()

	// Ticks go on (the first sync writes its 24 MiB, then ticks every second).
	if !waitFor(60*time.Second, func() bool { return lastTickFinished(listen).After(stalled.Add(2 * time.Second)) }) {
		t.Errorf("no tick finished in the 60 s after the client stalled (readyz %d):\n%s", readyz(listen), p.out.tail(3000))
	}
	if code := readyz(listen); code != http.StatusOK {
		t.Errorf("/readyz = %d while the client stalls, want 200", code)
	}
	code, took := p.terminate(5 * time.Second)
	if code != 0 {
		t.Fatalf("exit %d after SIGTERM (%v), want 0 within 5 s, the client still connected:\n%s", code, took, p.out.tail(3000))
	}
	t.Logf("exit 0 %v after SIGTERM", took.Round(time.Millisecond))
}
