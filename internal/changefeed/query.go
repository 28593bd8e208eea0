package changefeed

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// ParseFilter reads a change filter from query parameters: kind, channel and record
// (each repeatable, or comma-separated), own (true or false). Unknown kinds are an
// error naming the allowed ones.
func ParseFilter(q url.Values) (rm.ChangeFilter, error) {
	var f rm.ChangeFilter
	f.Kinds = listParam(q, "kind")
	for _, k := range f.Kinds {
		if !slices.Contains(rm.ChangeKinds(), k) {
			return f, fmt.Errorf("unknown kind %q (allowed: %s)", k, strings.Join(rm.ChangeKinds(), ", "))
		}
	}
	f.Channels = listParam(q, "channel")
	f.Records = listParam(q, "record")
	if s := q.Get("own"); s != "" {
		own, err := strconv.ParseBool(s)
		if err != nil {
			return f, fmt.Errorf("own=%q: want true or false", s)
		}
		f.Own = &own
	}
	return f, nil
}

// FilterQuery is the inverse of ParseFilter.
func FilterQuery(f rm.ChangeFilter) url.Values {
	q := url.Values{}
	for _, k := range f.Kinds {
		q.Add("kind", k)
	}
	for _, c := range f.Channels {
		q.Add("channel", c)
	}
	for _, r := range f.Records {
		q.Add("record", r)
	}
	if f.Own != nil {
		q.Set("own", strconv.FormatBool(*f.Own))
	}
	return q
}

func listParam(q url.Values, name string) []string {
	var out []string
	for _, v := range q[name] {
		for s := range strings.SplitSeq(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}
