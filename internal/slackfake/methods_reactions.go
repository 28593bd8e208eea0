package slackfake

import "github.com/slackpoll/slackpoll/internal/readmodel"

// reactionsGet answers reactions.get for a message (channel + timestamp), top-level or
// reply, with full=true or not (the fake always lists every reaction user, as Slack
// does with full=true). It needs reactions:read. A message the workspace does not hold
// (never posted, or deleted) answers message_not_found. Shape:
//
//	{"ok":true,"type":"message","channel":"C…","message":{…the message, with reactions…}}
func (s *Server) reactionsGet(c *call) (segments, *apiErr) {
	if e := s.needScope("reactions:read"); e != nil {
		return nil, e
	}
	cv := s.convs[c.params.Get("channel")]
	if cv == nil || cv.hidden() {
		return nil, &apiErr{code: "channel_not_found"}
	}
	if !cv.BotMember {
		return nil, &apiErr{code: "not_in_channel"}
	}
	ts := c.params.Get("timestamp")
	if ts == "" {
		return nil, &apiErr{code: "no_item_specified"}
	}
	k, ok := keyOf(readmodel.TS(ts))
	if !ok {
		return nil, &apiErr{code: "bad_timestamp"}
	}
	m := cv.byKey[k]
	if m == nil || m.tombstone {
		return nil, &apiErr{code: "message_not_found"}
	}
	head := []byte(`{"ok":true,"type":"message","channel":`)
	head = appendString(head, cv.ID)
	head = append(head, `,"message":`...)
	return segments{head, s.encoded(m), []byte(`}`)}, nil
}
