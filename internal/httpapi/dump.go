package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/slackpoll/slackpoll/internal/export"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// GET /v1/export and GET /v1/backup answer with the whole store. They are not
// streamed from a read transaction: a client that stops reading would hold the
// transaction open, and bbolt's writer, when the file must grow, waits for every
// open read transaction — while every new reader waits behind the writer: ticks,
// /readyz and /v1/status would stop until the client went away. The answer is made
// in a read transaction into a spool file first (at disk speed), and then sent
// from the file, with no transaction held, at a minimum throughput.

// DefaultStreamChunkTimeout is Options.StreamChunkTimeout's default.
const DefaultStreamChunkTimeout = 20 * time.Second

// streamChunk is the unit of the minimum throughput of streamed answers: each chunk
// must be taken by the client within the chunk timeout.
const streamChunk = 64 << 10

// UndecodableHeader names, on GET /v1/export, the stored records the export skipped
// because they could not be decoded: a JSON array of "record: error" strings, at
// most maxUndecodableNamed of them (then "… and N more"). Absent when none was.
const UndecodableHeader = "Slackpoll-Undecodable-Records"

const maxUndecodableNamed = 100

// backuper is a store that can copy itself consistently while in use
// (boltstore.Store.Backup).
type backuper interface {
	Backup(w io.Writer) (int64, error)
}

// export is GET /v1/export: the whole read model as JSON Lines (the lines of
// `slackpoll export`), as of one read transaction. Records the export skipped as
// undecodable are named in the Slackpoll-Undecodable-Records header.
func (a *api) export(w http.ResponseWriter, r *http.Request) {
	var undecodable *export.UndecodableError
	f, size, err := a.spooler.spool(func(out io.Writer) error {
		err := a.store.View(func(tx rm.Tx) error { return export.Write(tx, out, a.configuredNow()) })
		if errors.As(err, &undecodable) {
			return nil // everything else is exported; the header names them
		}
		return err
	})
	if err != nil {
		a.spoolFailed(w, r, "export", err)
		return
	}
	defer closeSpool(f)
	w.Header().Set("Content-Type", "application/x-ndjson")
	if undecodable != nil {
		w.Header().Set(UndecodableHeader, undecodableValue(undecodable.Records))
	}
	a.spooler.send(w, f, size, "export")
}

// backup is GET /v1/backup: a consistent copy of the store file (bbolt Tx.WriteTo),
// for `slackpoll backup` while the daemon holds the store.
func (a *api) backup(w http.ResponseWriter, r *http.Request) {
	b, ok := a.store.(backuper)
	if !ok {
		writeError(w, http.StatusNotImplemented, "this store cannot be backed up through the API")
		return
	}
	f, size, err := a.spooler.spool(func(out io.Writer) error { _, err := b.Backup(out); return err })
	if err != nil {
		a.spoolFailed(w, r, "backup", err)
		return
	}
	defer closeSpool(f)
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="slackpoll-backup.db"`)
	a.spooler.send(w, f, size, "backup")
}

// undecodableValue renders the header value naming undecodable records.
func undecodableValue(records []string) string {
	named := records
	if len(named) > maxUndecodableNamed {
		named = append(named[:maxUndecodableNamed:maxUndecodableNamed], fmt.Sprintf("… and %d more", len(records)-maxUndecodableNamed))
	}
	b, _ := json.Marshal(named) // strings marshal; control bytes are escaped
	return string(b)
}

// spooler makes a streamed answer in a file before sending it, so that no bbolt
// read transaction is held while a client reads (a stalled client would hold the
// writer, and every reader behind it), and sends it at a minimum throughput.
type spooler struct {
	dir          string        // Options.SpoolDir, else os.TempDir()
	chunkTimeout time.Duration // Options.StreamChunkTimeout, else DefaultStreamChunkTimeout
	log          *slog.Logger
}

// spool runs fill into a new spool file (mode 0600: it holds message texts) in the
// spool directory and returns the file, rewound, and its size. The file is removed
// from the directory at once where the system allows it (it is read through the
// descriptor), and by closeSpool otherwise.
func (s spooler) spool(fill func(io.Writer) error) (*os.File, int64, error) {
	f, err := os.CreateTemp(s.dir, ".slackpoll-spool-*")
	if err != nil {
		return nil, 0, fmt.Errorf("spool file in %s: %w", s.dir, err)
	}
	_ = os.Remove(f.Name()) // unlinked while open (Unix): nothing is left behind by a crash
	fail := func(err error) (*os.File, int64, error) {
		closeSpool(f)
		return nil, 0, err
	}
	if err := f.Chmod(0o600); err != nil {
		return fail(err)
	}
	if err := fill(f); err != nil {
		return fail(err)
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return fail(err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fail(err)
	}
	return f, size, nil
}

func closeSpool(f *os.File) {
	_ = f.Close()           // read-only from here: nothing to lose
	_ = os.Remove(f.Name()) // where the system kept it while open
}

// spoolFailed answers a streamed request whose answer could not be made: 503 when
// the spool file could not be written (a full disk), 500 for a store failure.
func (a *api) spoolFailed(w http.ResponseWriter, r *http.Request, what string, err error) {
	var pe *os.PathError
	if errors.As(err, &pe) {
		a.log.Error(what+": could not spool the answer", "dir", a.spooler.dir, "err", err)
		writeError(w, http.StatusServiceUnavailable, "%s: the answer could not be prepared in the daemon's spool directory (see its log): free disk space there, then retry", what)
		return
	}
	a.internalError(w, r, err)
}

// send copies the spooled answer to the client in chunks, each of which the client
// must take within the chunk timeout: one that stops reading is cut off, instead
// of holding the connection (and the daemon's shutdown) for ever. The answer has a
// Content-Length, so a client sees a cut as a short body.
func (s spooler) send(w http.ResponseWriter, f *os.File, size int64, what string) {
	w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	rc := http.NewResponseController(w)
	buf := make([]byte, streamChunk)
	var sent int64
	for sent < size {
		n, err := f.Read(buf)
		if n > 0 {
			// An unsupported writer keeps the server's write timeout.
			_ = rc.SetWriteDeadline(time.Now().Add(s.chunkTimeout))
			if _, werr := w.Write(buf[:n]); werr != nil {
				s.log.Info(what+": the client went away or read too slowly; the answer was cut",
					"sent_bytes", sent, "size_bytes", size, "min_rate", fmt.Sprintf("%d KiB per %s", streamChunk>>10, s.chunkTimeout), "err", werr)
				return
			}
			sent += int64(n)
		}
		if err != nil {
			if sent < size {
				s.log.Error(what+": reading the spool file failed; the answer was cut", "err", err)
				panic(http.ErrAbortHandler) // a short body, never one that passes for whole
			}
			break
		}
	}
}
