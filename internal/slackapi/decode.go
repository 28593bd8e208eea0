package slackapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/slack-go/slack"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// rawPage is the envelope of a conversations.history / conversations.replies answer
// with the messages left undecoded, so each can fail on its own.
type rawPage struct {
	OK               bool   `json:"ok"`
	Error            string `json:"error"`
	Needed           string `json:"needed"`
	Provided         string `json:"provided"`
	ResponseMetadata struct {
		NextCursor string `json:"next_cursor"`
	} `json:"response_metadata"`
	Messages []json.RawMessage `json:"messages"`
}

// salvageable reports whether slack-go's err for a page is a decode failure of a
// complete HTTP 200 body that we captured — the case where slack-go returns nil and
// loses the whole page for one bad message (slack-go v0.35). Slack error codes, HTTP
// statuses, rate limits and transport errors are not.
func salvageable(err error, c *capture) bool {
	if !c.got || c.status != http.StatusOK {
		return false
	}
	var ser slack.SlackErrorResponse
	var sce slack.StatusCodeError
	var rl *slack.RateLimitedError
	var ne *strconv.NumError
	return !errors.As(err, &ser) && !errors.As(err, &sce) && !errors.As(err, &rl) && !errors.As(err, &ne)
}

// salvagePage decodes a captured page body message by message. A message that does not
// decode into slack.Message is decoded from the fields slackpoll keeps (keptMessage);
// one whose kept fields do not decode either, or that has an invalid ts, becomes an
// ItemError carrying its ts when the raw object has a valid string ts; the others and
// the cursor are kept.
//
// Errors: an ok:false envelope returns slack.SlackErrorResponse (classified as usual);
// a body that is not a JSON envelope (HTML, truncated) returns an error wrapping
// errMalformed.
func salvagePage(channel string, body []byte) (readmodel.Page, error) {
	var env rawPage
	if err := json.Unmarshal(body, &env); err != nil {
		return readmodel.Page{}, fmt.Errorf("%w: %v", errMalformed, err)
	}
	if !env.OK {
		if env.Error == "" {
			return readmodel.Page{}, fmt.Errorf("%w: ok is false without an error code", errMalformed)
		}
		return readmodel.Page{}, slack.SlackErrorResponse{Err: env.Error, Needed: env.Needed, Provided: env.Provided}
	}
	var good []slack.Message
	var skipped, notes []readmodel.ItemError
	for _, raw := range env.Messages {
		var m slack.Message
		if err := json.Unmarshal(raw, &m); err != nil {
			// slack-go fails on fields we do not keep (blocks, attachments,
			// files); the kept ones decide whether the message is stored.
			k, note, kerr := decodeKept(raw)
			if kerr != nil {
				skipped = append(skipped, readmodel.ItemError{TS: rawTS(raw), Err: "decode message: " + kerr.Error()})
				continue
			}
			if note != "" {
				notes = append(notes, readmodel.ItemError{TS: rawTS(raw), Err: note})
			}
			m = k
		}
		good = append(good, m)
	}
	msgs, bad := convertPage(channel, good)
	return readmodel.Page{
		Messages:   msgs,
		Skipped:    append(skipped, bad...),
		Notes:      notes,
		NextCursor: env.ResponseMetadata.NextCursor,
	}, nil
}

// salvageReactionsMessage decodes the message of a captured reactions.get answer from
// its kept fields, when slack-go failed on a field slackpoll does not keep.
//
// Errors: as salvagePage for the envelope; a message whose kept fields do not decode
// wraps errMalformed.
func salvageReactionsMessage(body []byte) (slack.Message, error) {
	var env struct {
		OK       bool            `json:"ok"`
		Error    string          `json:"error"`
		Needed   string          `json:"needed"`
		Provided string          `json:"provided"`
		Message  json.RawMessage `json:"message"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return slack.Message{}, fmt.Errorf("%w: %v", errMalformed, err)
	}
	if !env.OK {
		if env.Error == "" {
			return slack.Message{}, fmt.Errorf("%w: ok is false without an error code", errMalformed)
		}
		return slack.Message{}, slack.SlackErrorResponse{Err: env.Error, Needed: env.Needed, Provided: env.Provided}
	}
	m, _, err := decodeKept(env.Message) // one message, no page to note it on: read as decoded
	if err != nil {
		return slack.Message{}, fmt.Errorf("%w: reactions.get message: %v", errMalformed, err)
	}
	return m, nil
}

// rawTS reads "ts" from a raw message object when it is a valid ts string, else "".
func rawTS(raw json.RawMessage) readmodel.TS {
	var probe struct {
		TS any `json:"ts"`
	}
	if json.Unmarshal(raw, &probe) != nil {
		return ""
	}
	s, ok := probe.TS.(string)
	if !ok {
		return ""
	}
	return validTS(s)
}

// envelopeOK reports whether a Slack answer that slack-go accepted is one: "ok": true,
// or "ok": false with an error code (which slack-go returned as an error, unless the
// caller took it as an answer, as users.info's user_not_found). Every Web API answer
// carries "ok" (see the method reference's output schemas).
func envelopeOK(body []byte) bool {
	var env struct {
		Ok    bool   `json:"ok"`
		Error string `json:"error"`
	}
	return json.Unmarshal(body, &env) == nil && (env.Ok || env.Error != "")
}
