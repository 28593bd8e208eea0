package crashtest

import (
	"bytes"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

// proc is one running `slackpoll run`.
type proc struct {
	cmd     *exec.Cmd
	started time.Time
	done    chan struct{}
	out     *syncBuffer
}

// syncBuffer collects a process's stderr (written from exec's copying goroutine).
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// contains reports whether what was written so far contains s.
func (b *syncBuffer) contains(s string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Contains(b.buf.Bytes(), []byte(s))
}

// tail returns the last n bytes written, for failure messages.
func (b *syncBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.Bytes()
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return string(s)
}

// startDaemon starts `slackpoll run --config cfg` with the fake's token in
// SLACK_BOT_TOKEN (the config's default slack.token is ${SLACK_BOT_TOKEN}).
func startDaemon(t *testing.T, bin, cfg, token string) *proc {
	t.Helper()
	p := &proc{out: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, "run", "--config", cfg)
	p.cmd.Env = append(os.Environ(), "SLACK_BOT_TOKEN="+token)
	p.cmd.Stdout = p.out
	p.cmd.Stderr = p.out
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start slackpoll: %v", err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	return p
}

// exited reports whether the process has ended on its own.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill SIGKILLs the process and waits until it is gone. A daemon that had already
// exited is a failure: `run` must only stop on a signal.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	if p.exited() {
		t.Fatalf("slackpoll run exited on its own (%v) before the kill:\n%s", p.cmd.ProcessState, p.out.tail(4000))
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// terminate sends SIGTERM and returns the exit code and how long the exit took; -1
// and the timeout if the process did not exit within timeout (it is then killed).
func (p *proc) terminate(timeout time.Duration) (int, time.Duration) {
	start := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode(), time.Since(start)
	case <-time.After(timeout):
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
		return -1, timeout
	}
}
