package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/slackpoll/slackpoll/config"
	"github.com/slackpoll/slackpoll/internal/export"
	"github.com/slackpoll/slackpoll/internal/httpapi"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/status"
)

// cmdStatus is `slackpoll status [--json]`: per conversation its type, status and
// totals; coverage and worst-case staleness; the last tick and the next one. Read
// from the store, or from the daemon's API while it holds the store. Read from the
// store, the whole file is checked first: a damaged store is an error.
func cmdStatus(ctx context.Context, c *cmdCtx) error {
	cfg, err := c.loadConfig()
	if err != nil {
		return err
	}
	if cfg.MultiWorkspace() {
		return fleetStatus(c, cfg)
	}
	r, err := openReader(cfg)
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }() // read-only
	var rep status.Report
	var source string
	if r.api != nil {
		source = "the running daemon at " + r.api.base
		err = r.api.get("/v1/status", &rep)
	} else {
		source = "store " + cfg.Store.Path + " (no daemon holds it)"
		// The pages the report reads may be intact while others are not: a healthy
		// table over a damaged file would be a lie.
		if err := r.store.Check(); err != nil {
			return err
		}
		err = r.store.View(func(tx rm.Tx) error {
			rep, err = status.Build(tx, status.Input{
				Configured: cfg.Conversations, Interval: cfg.Tick.Interval.D(), Now: time.Now(), Webhooks: webhookNames(cfg),
			})
			return err
		})
		if err == nil {
			rep.Projections = offlineProjections(ctx, cfg, r.store)
		}
	}
	if err != nil {
		return err
	}
	if c.jsonOut {
		enc := json.NewEncoder(c.env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	if _, err := fmt.Fprintf(c.env.Stdout, "status of %s at %s\n\n", source, rep.GeneratedAt.Format(time.RFC3339)); err != nil {
		return err
	}
	return rep.WriteText(c.env.Stdout)
}

// cmdShow is `slackpoll show CHANNEL TS` or `show --record KEY`: one message with its
// thread, reactions and authors by name, its record key and its polling state.
func cmdShow(ctx context.Context, c *cmdCtx) error {
	cfg, err := c.loadConfig()
	if err != nil {
		return err
	}
	var ref rm.Ref
	if c.record == "" {
		if ref, err = parseMessageRef(c.args); err != nil {
			return usageErr("show: %v", err)
		}
	}
	r, err := openReader(cfg)
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }() // read-only
	var line export.MessageLine
	var labels map[string]string
	var ownUser string
	if r.api != nil {
		line, labels, ownUser, err = showFromAPI(r.api, ref, c.record)
	} else {
		line, labels, ownUser, err = showFromStore(r.store, ref, c.record)
	}
	if errors.Is(err, errNotInModel) {
		return noMessageAdvice(cfg, ref, time.Now())
	}
	if err != nil {
		return err
	}
	if c.jsonOut {
		enc := json.NewEncoder(c.env.Stdout)
		enc.SetEscapeHTML(false)
		return enc.Encode(line)
	}
	return writeShow(c.env.Stdout, &line, labels, ownUser)
}

// errNotInModel is a message the model does not hold; noMessageAdvice says why and
// what to do.
var errNotInModel = errors.New("not in the read model")

func errNoMessage(ref rm.Ref) error {
	return fmt.Errorf("message %s %s is %w", ref.Channel, ref.TS, errNotInModel)
}

// noMessageAdvice says what to do about a message the model does not hold: nothing
// for one of a polled conversation inside the bulk window, which the next head read
// stores (tracking it would only make it a watched message); add the conversation
// to the config for one not polled; track one older than the bulk window, which no
// head read reaches.
func noMessageAdvice(cfg *config.Config, ref rm.Ref, now time.Time) error {
	polled := slices.Contains(cfg.Conversations, ref.Channel) || cfg.Discover != ""
	switch {
	case !polled:
		return fmt.Errorf("message %s %s is not in the read model: %s is not polled; add it to conversations in %s (then it is read like the others)",
			ref.Channel, ref.TS, ref.Channel, cfg.File())
	case time.Unix(ref.TS.Unix(), 0).After(now.Add(-cfg.Window.Bulk.D())):
		return fmt.Errorf("message %s %s is not in the read model yet: it is inside %s's bulk window (the last %s), which the next head read of %s stores; `slackpoll status` shows when it was last read (HEAD AGE). No need to track it",
			ref.Channel, ref.TS, ref.Channel, cfg.Window.Bulk, ref.Channel)
	}
	return fmt.Errorf("message %s %s is not in the read model: it is older than the bulk window (%s), which head reads cover; track it with `slackpoll track %s %s`, it is read on the next tick",
		ref.Channel, ref.TS, cfg.Window.Bulk, ref.Channel, ref.TS)
}

func errNoRecord(key string) error {
	return fmt.Errorf("no message is tracked as record %q: attach one with `slackpoll track --record %s CHANNEL TS`", key, key)
}

// showFromStore reads the message line, the labels of every user it names and the
// bot user ID auth.test last gave ("" before the first tick).
func showFromStore(s rm.Store, ref rm.Ref, record string) (line export.MessageLine, labels map[string]string, ownUser string, err error) {
	err = s.View(func(tx rm.Tx) error {
		id, _, err := tx.Identity()
		if err != nil {
			return err
		}
		ownUser = id.UserID
		if record != "" {
			var ok bool
			if ref, ok, err = tx.Record(record); err != nil {
				return err
			} else if !ok {
				return errNoRecord(record)
			}
		}
		m, ok, err := tx.Message(ref.Channel, ref.TS)
		if err != nil {
			return err
		}
		if !ok {
			return errNoMessage(ref)
		}
		if line, err = export.MessageLineOf(tx, &m); err != nil {
			return err
		}
		label := rm.TxLabeler(tx)
		labels = map[string]string{}
		for _, id := range usersOf(&line) {
			labels[id] = label(id)
		}
		return nil
	})
	return line, labels, ownUser, err
}

// showFromAPI asks the daemon for the message line, then for each user it names
// (GET /v1/users/{id}; a user never looked up keeps its ID), and, when the message has
// reactions or edits to mark as own, for the bot user ID (GET /v1/status).
func showFromAPI(api *apiClient, ref rm.Ref, record string) (export.MessageLine, map[string]string, string, error) {
	var line export.MessageLine
	path := "/v1/conversations/" + url.PathEscape(ref.Channel) + "/messages/" + url.PathEscape(string(ref.TS))
	if record != "" {
		path = "/v1/records/" + url.PathEscape(record)
	}
	if err := api.get(path, &line); err != nil {
		switch {
		case errors.Is(err, errAPINotFound) && record != "":
			return line, nil, "", errNoRecord(record)
		case errors.Is(err, errAPINotFound):
			return line, nil, "", errNoMessage(ref)
		}
		return line, nil, "", err
	}
	labels := map[string]string{}
	ids := usersOf(&line)
	for _, id := range ids {
		var u export.UserLine
		err := api.get("/v1/users/"+url.PathEscape(id), &u)
		switch {
		case err == nil:
			labels[id] = u.Label
		case !errors.Is(err, errAPINotFound):
			return line, nil, "", err
		}
	}
	if len(ids) == 0 {
		return line, labels, "", nil
	}
	var rep status.Report
	if err := api.get("/v1/status", &rep); err != nil {
		return line, nil, "", err
	}
	ownUser := ""
	if rep.Identity != nil {
		ownUser = rep.Identity.UserID
	}
	return line, labels, ownUser, nil
}

// fleetStatus is `slackpoll status` for many workspaces (store.dir) without
// --workspace: the running daemon's list of workspaces, their states and last
// ticks; --workspace TEAM_ID shows one workspace's whole report.
func fleetStatus(c *cmdCtx, cfg *config.Config) error {
	if cfg.HTTP.Listen == "" {
		return usageErr("status: %s polls many workspaces (store.dir) and has no http.listen: name one with --workspace TEAM_ID", orDefaults(cfg.File()))
	}
	var list httpapi.WorkspaceList
	if err := newAPIClient(cfg).get("/v1/workspaces", &list); err != nil {
		return err
	}
	if err := printWorkspaces(c, list.Workspaces); err != nil {
		return err
	}
	if !c.jsonOut {
		fmt.Fprintln(c.env.Stdout, "\none workspace's whole report: slackpoll status --workspace TEAM_ID")
	}
	return nil
}
