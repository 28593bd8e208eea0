package projection

import (
	"reflect"
	"strings"
	"testing"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// TestRecordingTxCoversEveryWrite: a write method added to readmodel.Tx must be
// either recorded by recordingTx (it changes what the projection shows) or listed
// here as not shown, so that no write escapes the projection unnoticed.
func TestRecordingTxCoversEveryWrite(t *testing.T) {
	recorded := map[string]bool{
		"PutMessage": true, "DeleteMessage": true, "PutUser": true, "PutConversation": true, "PutIdentity": true,
		"PutWatched": true, "DeleteWatched": true, "AppendChange": true,
	}
	notShown := map[string]string{
		"PutRecord":      "records are shown from messages.record, which the same transaction puts",
		"DeleteRecord":   "as PutRecord",
		"PutMethodState": "pacing",
		"PutLastTick":    "the tick summary",
		"DeleteChange":   "retention; the projector detects a feed pruned past its cursor",
		"PutOutbox":      "webhooks",
		"DeleteOutbox":   "webhooks",
	}
	tx := reflect.TypeOf((*rm.Tx)(nil)).Elem()
	rec := reflect.TypeOf(&recordingTx{})
	for i := range tx.NumMethod() {
		name := tx.Method(i).Name
		if !strings.HasPrefix(name, "Put") && !strings.HasPrefix(name, "Delete") && !strings.HasPrefix(name, "Append") {
			continue
		}
		switch {
		case recorded[name]:
			m, _ := rec.MethodByName(name)
			// A method declared on recordingTx itself has recordingTx's file; a
			// promoted one is a wrapper with no source of ours.
			if m.Func.IsValid() && !strings.Contains(runtimeFile(m.Func), "watch.go") {
				t.Errorf("recordingTx does not override %s", name)
			}
		case notShown[name] != "":
		default:
			t.Errorf("readmodel.Tx.%s writes the store: record it in recordingTx (watch.go) or list it here as not shown", name)
		}
	}
}
