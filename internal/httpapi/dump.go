package httpapi

import (
	"io"
	"net/http"
	"time"

	"github.com/slackpoll/slackpoll/internal/export"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// backuper is a store that can copy itself consistently while in use
// (boltstore.Store.Backup).
type backuper interface {
	Backup(w io.Writer) (int64, error)
}

// noWriteDeadline lifts the server's write timeout for a response that streams the
// whole store: its length grows with the store, not with the request.
func noWriteDeadline(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{}) // unsupported writer: the server's timeout stays
}

// export is GET /v1/export: the whole read model as JSON Lines (the lines of
// `slackpoll export`), from one read transaction. An error after the first line
// cannot change the status any more: the stream is cut, which the client sees as a
// truncated body.
func (a *api) export(w http.ResponseWriter, r *http.Request) {
	noWriteDeadline(w)
	w.Header().Set("Content-Type", "application/x-ndjson")
	cw := &clientWriter{w: w}
	err := a.store.View(func(tx rm.Tx) error { return export.Write(tx, cw, a.configuredNow()) })
	a.streamFailed(r, cw, "export", err)
}

// backup is GET /v1/backup: a consistent copy of the store file (bbolt Tx.WriteTo),
// for `slackpoll backup` while the daemon holds the store.
func (a *api) backup(w http.ResponseWriter, r *http.Request) {
	b, ok := a.store.(backuper)
	if !ok {
		writeError(w, http.StatusNotImplemented, "this store cannot be backed up through the API")
		return
	}
	noWriteDeadline(w)
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="slackpoll-backup.db"`)
	cw := &clientWriter{w: w}
	_, err := b.Backup(cw)
	a.streamFailed(r, cw, "backup", err)
}

// streamFailed ends a streamed answer that failed: a client that went away (`export
// | head`) is no error of the daemon's; any other failure is logged and the stream is
// cut, so that a partial answer cannot pass for a whole one.
func (a *api) streamFailed(r *http.Request, cw *clientWriter, what string, err error) {
	if err == nil {
		return
	}
	if cw.err != nil || r.Context().Err() != nil {
		a.log.Debug(what+" ended: the client went away", "err", err)
		return
	}
	a.log.Error(what+" failed", "err", err)
	panic(http.ErrAbortHandler)
}

// clientWriter remembers whether writing to the client failed, to tell a client that
// went away from a failure of the store.
type clientWriter struct {
	w   io.Writer
	err error
}

func (c *clientWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if err != nil {
		c.err = err
	}
	return n, err
}
