package httpapi

import (
	"net/http"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/status"
)

// healthz answers while the process serves HTTP at all (liveness).
func healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers 200 when the store can be read and Ready reports nil (Slack accepted
// the token), else 503 with the reason. It sits behind the bearer token, so a 200
// also says the caller's token is accepted.
func (a *api) readyz(w http.ResponseWriter, _ *http.Request) {
	if err := a.store.View(func(tx rm.Tx) error { _, _, err := tx.Identity(); return err }); err != nil {
		writeError(w, http.StatusServiceUnavailable, "not ready: the store cannot be read")
		return
	}
	if a.ready != nil {
		if err := a.ready(); err != nil {
			writeError(w, http.StatusServiceUnavailable, "not ready: %v", err)
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// statusInput is the status report's input as the daemon sees it.
func (a *api) statusInput() status.Input {
	in := status.Input{Configured: a.configuredNow(), Interval: a.interval, Now: a.now(), DaemonRunning: true, Webhooks: a.webhooks, Running: a.running}
	if a.projections != nil {
		in.Projections = a.projections.Statuses()
	}
	return in
}

// status answers GET /v1/status with the status report (internal/status.Report).
func (a *api) status(w http.ResponseWriter, r *http.Request) {
	var rep status.Report
	err := a.store.View(func(tx rm.Tx) error {
		var err error
		rep, err = status.Build(tx, a.statusInput())
		return err
	})
	if err != nil {
		a.internalError(w, r, err)
		return
	}
	if a.workspace != nil {
		rep.Workspace = a.workspace()
	}
	writeJSON(w, http.StatusOK, rep)
}
