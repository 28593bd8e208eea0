package httpapi

import (
	"io"
	"net/http"
	"time"

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
	err := a.store.View(func(tx rm.Tx) error { return rm.Export(tx, w, a.configured) })
	if err != nil {
		a.log.Error("export failed", "err", err)
		panic(http.ErrAbortHandler) // cut the stream: a client must not take a partial export for a whole one
	}
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
	if _, err := b.Backup(w); err != nil {
		a.log.Error("backup failed", "err", err)
		panic(http.ErrAbortHandler) // cut the stream: a partial copy must not look whole
	}
}
