package slackapi

import (
	"errors"
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// TestSlackErrorCodesAreClassified checks every code the design names, through a real
// slack-go call, and that none of them is retried.
func TestSlackErrorCodesAreClassified(t *testing.T) {
	cases := map[string]readmodel.ErrorClass{
		"invalid_auth":                          readmodel.ClassToken,
		"not_authed":                            readmodel.ClassToken,
		"token_revoked":                         readmodel.ClassToken,
		"token_expired":                         readmodel.ClassToken,
		"account_inactive":                      readmodel.ClassToken,
		"not_in_channel":                        readmodel.ClassConversation,
		"missing_scope":                         readmodel.ClassConversation,
		"channel_not_found":                     readmodel.ClassConversation,
		"is_archived":                           readmodel.ClassConversation,
		"method_not_supported_for_channel_type": readmodel.ClassConversation,
		"thread_not_found":                      readmodel.ClassItem,
		"invalid_cursor":                        readmodel.ClassTransient,
		"some_future_error":                     readmodel.ClassTransient,
	}
	for code, want := range cases {
		t.Run(code, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake()
				f.handle("conversations.replies", func(w http.ResponseWriter, r *http.Request) {
					writeJSON(w, `{"ok":false,"error":"`+code+`"}`)
				})
				c := newTestClient(t, f, nil)
				_, err := c.Replies(bg, readmodel.RepliesRequest{Channel: "C1", TS: "1700000000.000100", Limit: 1000, Cursor: "x"})
				var ae *readmodel.APIError
				if !errors.As(err, &ae) {
					t.Fatalf("err = %v (%T), want *readmodel.APIError", err, err)
				}
				if ae.Class != want || ae.Code != code || ae.Method != readmodel.MethodReplies {
					t.Errorf("got %+v, want class %v code %s", ae, want, code)
				}
				if n := len(f.requests("conversations.replies")); n != 1 {
					t.Errorf("%d requests, want 1 (not retried)", n)
				}
			})
		})
	}
}

func TestMissingScopeCarriesNeeded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle("conversations.history", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, `{"ok":false,"error":"missing_scope","needed":"groups:history","provided":"channels:history"}`)
		})
		c := newTestClient(t, f, nil)
		_, err := c.History(bg, historyReq(""))
		var ae *readmodel.APIError
		if !errors.As(err, &ae) {
			t.Fatalf("err = %v, want *readmodel.APIError", err)
		}
		if ae.Class != readmodel.ClassConversation || ae.Needed != "groups:history" {
			t.Errorf("got class %v needed %q, want conversation groups:history", ae.Class, ae.Needed)
		}
		if got, want := ae.Error(), "conversations.history: missing_scope (needed scope: groups:history)"; got != want {
			t.Errorf("Error() = %q, want %q", got, want)
		}
	})
}

func TestOtherHTTPStatusIsTransientWithoutRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake() // no handler: 404
		c := newTestClient(t, f, nil)
		_, err := c.ConversationInfo(bg, "C1")
		if readmodel.ClassOf(err) != readmodel.ClassTransient || readmodel.CodeOf(err) != "http_404" {
			t.Errorf("err = %v, want transient http_404", err)
		}
		if n := len(f.requests("conversations.info")); n != 1 {
			t.Errorf("%d requests, want 1", n)
		}
	})
}
