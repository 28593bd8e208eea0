package httpapi

import (
	"errors"
	"net/http"

	"github.com/slackpoll/slackpoll/internal/export"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// conversations answers GET /v1/conversations: every stored conversation and every
// configured one not stored yet (status pending), by id, as conversation lines. The
// list is short (one entry per conversation), so it is never paged.
func (a *api) conversations(w http.ResponseWriter, r *http.Request) {
	var items []export.ConversationLine
	err := a.store.View(func(tx rm.Tx) error {
		var err error
		items, err = export.ConversationLines(tx, a.configuredNow())
		return err
	})
	if err != nil {
		a.internalError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, list[export.ConversationLine]{Items: items})
}

// errUnknownConversation is returned inside a View for a conversation the model
// knows nothing about.
var errUnknownConversation = errors.New("unknown conversation")

// message answers GET /v1/conversations/{id}/messages/{ts}: the message line of one
// stored record. A thread reply comes back as its own line, without replies; its
// thread_ts names the parent, whose line holds the whole thread.
func (a *api) message(w http.ResponseWriter, r *http.Request) {
	channel := r.PathValue("id")
	if !rm.ValidConversationID(channel) {
		writeError(w, http.StatusNotFound, "%.80q is not a Slack conversation ID (C…, G… or D…)", channel)
		return
	}
	ts, err := rm.ParseTS(r.PathValue("ts"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	a.serveMessage(w, r, rm.Ref{Channel: channel, TS: ts})
}

// serveMessage writes the message line of ref, or 404.
func (a *api) serveMessage(w http.ResponseWriter, r *http.Request, ref rm.Ref) {
	line, ok, err := a.messageLine(ref)
	switch {
	case err != nil:
		a.internalError(w, r, err)
	case !ok:
		writeError(w, http.StatusNotFound, "message %s %s is not in the read model (POST /v1/tracked to have it read on the next tick)", ref.Channel, ref.TS)
	default:
		writeJSON(w, http.StatusOK, line)
	}
}

func (a *api) messageLine(ref rm.Ref) (export.MessageLine, bool, error) {
	return export.MessageLineAt(a.store, ref)
}
