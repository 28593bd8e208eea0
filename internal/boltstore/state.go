package boltstore

import "github.com/slackpoll/slackpoll/internal/readmodel"

// Identity returns the cached auth.test answer (state/"identity").
func (t *tx) Identity() (readmodel.Identity, bool, error) {
	var id readmodel.Identity
	ok, err := t.getJSON(bState, kIdentity, &id)
	return id, ok, err
}

// PutIdentity replaces the cached auth.test answer.
func (t *tx) PutIdentity(id readmodel.Identity) error {
	return t.putJSON(bState, kIdentity, id)
}

// LastTick returns the summary of the last finished tick (state/"last_tick").
func (t *tx) LastTick() (readmodel.TickSummary, bool, error) {
	var s readmodel.TickSummary
	ok, err := t.getJSON(bState, kLastTick, &s)
	return s, ok, err
}

// PutLastTick replaces the summary of the last finished tick.
func (t *tx) PutLastTick(s readmodel.TickSummary) error {
	return t.putJSON(bState, kLastTick, s)
}

// MethodState returns the persisted pacing state of a Slack method such as
// "conversations.history" (bucket pacing).
func (t *tx) MethodState(method string) (readmodel.MethodState, bool, error) {
	var s readmodel.MethodState
	if err := checkKey("method name", method); err != nil {
		return s, false, err
	}
	ok, err := t.getJSON(bPacing, []byte(method), &s)
	return s, ok, err
}

// PutMethodState replaces the pacing state of one Slack method.
func (t *tx) PutMethodState(method string, s readmodel.MethodState) error {
	if err := checkKey("method name", method); err != nil {
		return err
	}
	return t.putJSON(bPacing, []byte(method), s)
}
