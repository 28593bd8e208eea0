package httpapi_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	boltstore "github.com/slackpoll/slackpoll/internal/bolt"
	"github.com/slackpoll/slackpoll/internal/httpapi"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// writeTexts writes mib MiB of message texts into channel ch of s, 4 KiB a message,
// from message number from on.
func writeTexts(t *testing.T, s rm.Store, ch string, from, mib int) error {
	t.Helper()
	text := strings.Repeat("x", 4<<10)
	for i := from; i < from+mib*256; i += 256 {
		err := s.Update(func(tx rm.Tx) error {
			for j := i; j < i+256; j++ {
				m := rm.Message{Channel: ch, TS: rm.TS(fmt.Sprintf("17%08d.000000", j)), User: "U1", Text: text}
				if err := tx.PutMessage(m); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// bigStore opens a store of about mib MiB: larger than the sockets' buffers.
func bigStore(t *testing.T, mib int) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "slackpoll.db"), boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	err = s.Update(func(tx rm.Tx) error {
		return tx.PutConversation(rm.Conversation{ID: "C0BIG", Name: "big", Type: rm.TypePublicChannel, Status: rm.StatusOK})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := writeTexts(t, s, "C0BIG", 0, mib); err != nil {
		t.Fatal(err)
	}
	return s
}

// stalledClient asks path of the server at addr with a 4 KiB receive buffer, reads
// the status line, and stops reading. The connection is closed when the test ends.
func stalledClient(t *testing.T, addr, path string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	status, err := bufio.NewReaderSize(conn, 16).ReadString('\n')
	if err != nil || !strings.Contains(status, " 200 ") {
		t.Fatalf("GET %s: %q, %v", path, status, err)
	}
	return conn
}

// within fails the test when fn has not returned after d (its goroutine is left
// behind: a hang is a failure, not a test that never ends).
func within(t *testing.T, d time.Duration, what string, fn func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
	case <-time.After(d):
		t.Fatalf("%s: still blocked after %v", what, d)
	}
}

// A client that stops reading GET /v1/backup or a large GET /v1/export must not
// freeze the daemon. Streamed from a read transaction, the answer held it open: the
// writer, when the file must grow, waits for it, and every new reader waits behind
// the writer. Here the writer grows the file by 24 MiB while the client stalls, and
// /readyz and /v1/status must keep answering.
func TestAStalledReaderFreezesNothing(t *testing.T) {
	for _, path := range []string{"/v1/backup", "/v1/export"} {
		t.Run(path, func(t *testing.T) {
			s := bigStore(t, 16)
			srv := httptest.NewServer(httpapi.New(httpapi.Options{Store: s}))
			defer srv.Close()
			conn := stalledClient(t, srv.Listener.Addr().String(), path)
			defer conn.Close()                 // before the server closes: it waits for its connections
			time.Sleep(200 * time.Millisecond) // the server fills the socket buffers

			within(t, 20*time.Second, "writes that grow the file while the client stalls", func() error {
				return writeTexts(t, s, "C0MORE", 0, 24)
			})
			for _, p := range []string{"/readyz", "/v1/status"} {
				within(t, 5*time.Second, "GET "+p, func() error {
					resp, err := http.Get(srv.URL + p)
					if err != nil {
						return err
					}
					defer resp.Body.Close()
					_, _ = io.Copy(io.Discard, resp.Body)
					if resp.StatusCode != http.StatusOK {
						return fmt.Errorf("status %d", resp.StatusCode)
					}
					return nil
				})
			}
		})
	}
}

// A streamed answer has a minimum throughput: a client that stops reading is cut off
// once a chunk has waited StreamChunkTimeout, and the rest of the answer is not sent.
func TestAStalledReaderIsCutOff(t *testing.T) {
	s := bigStore(t, 16)
	srv := httptest.NewServer(httpapi.New(httpapi.Options{Store: s, StreamChunkTimeout: 300 * time.Millisecond, SpoolDir: t.TempDir()}))
	defer srv.Close()
	conn := stalledClient(t, srv.Listener.Addr().String(), "/v1/backup")
	time.Sleep(2 * time.Second)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := io.Copy(io.Discard, conn)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("the connection of a client that stalled was still open after 10 s (read %d bytes more)", n)
		}
	}
	if n > 12<<20 {
		t.Errorf("the stalled client got %d bytes more after it resumed, want the answer cut (16 MiB store)", n)
	}
}
