package cli

import (
	"context"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/slackpoll/slackpoll/config"
)

// reloadable are the daemon's settings a SIGHUP changes in place: log.level and
// the configured conversations. Every other change is logged as waiting for a
// restart.
type reloadable struct {
	level         slog.LevelVar
	levelName     string // log.level as last set (the reload goroutine's own)
	conversations atomic.Pointer[[]string]
}

// configured is the conversations configured now.
func (r *reloadable) configured() []string { return *r.conversations.Load() }

// logLevel parses log.level (Validate accepted it), info when empty.
func logLevel(s string) slog.Level {
	var l slog.Level
	_ = l.UnmarshalText([]byte(strings.ToUpper(s)))
	return l
}

// watchHangup reloads the config on every SIGHUP (c.env.Hangup) until ctx ends.
func (d *daemon) watchHangup(ctx context.Context, c *cmdCtx) {
	onHangup(ctx, c, func() { d.reload(c) })
}

// onHangup calls reload on every SIGHUP (c.env.Hangup) until ctx ends.
func onHangup(ctx context.Context, c *cmdCtx, reload func()) {
	if c.env.Hangup == nil {
		return
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-c.env.Hangup:
				reload()
			}
		}
	}()
}

// reload re-reads the config file: log.level and conversations take effect (the
// conversations from the next tick), other changes are logged as needing a restart,
// and a config that no longer loads changes nothing. The daemon never stops on it.
func (d *daemon) reload(c *cmdCtx) {
	next, err := c.loadConfig()
	if err != nil {
		d.log.Error("SIGHUP: config not reloaded; the daemon goes on with the config it started with", "err", err)
		return
	}
	if len(next.Conversations) == 0 && next.Discover == "" {
		d.log.Error("SIGHUP: config not reloaded: nothing to poll (conversations is empty and discover is off)", "config", next.File())
		return
	}
	var applied []string
	if next.Log.Level != d.reloadable.levelName {
		d.reloadable.levelName = next.Log.Level
		d.reloadable.level.Set(logLevel(next.Log.Level))
		applied = append(applied, "log.level="+next.Log.Level)
	}
	if !slices.Equal(next.Conversations, d.reloadable.configured()) {
		ids := slices.Clone(next.Conversations)
		d.reloadable.conversations.Store(&ids)
		d.poller.SetConversations(ids)
		applied = append(applied, "conversations")
	}
	restart := restartOnly(d.cfg, next)
	d.log.Info("SIGHUP: config reloaded", "config", next.File(), "applied", strings.Join(applied, ", "))
	if len(restart) > 0 {
		d.log.Warn("SIGHUP: these settings changed in the file but take effect only at a restart", "settings", strings.Join(restart, ", "))
	}
}

// restartOnly names the top-level settings (log.format aside from log.level) that
// differ between the running config and next, other than those reload applies.
func restartOnly(running, next *config.Config) []string {
	var out []string
	a, b := reflect.ValueOf(*running), reflect.ValueOf(*next)
	for i := range a.NumField() {
		f := a.Type().Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "" || name == "conversations" || name == "log" {
			continue
		}
		if !reflect.DeepEqual(a.Field(i).Interface(), b.Field(i).Interface()) {
			out = append(out, name)
		}
	}
	if running.Log.Format != next.Log.Format {
		out = append(out, "log.format")
	}
	return out
}
