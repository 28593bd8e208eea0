package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"runtime/debug"
	"sync"
	"time"

	"github.com/slackpoll/slackpoll/internal/httpapi"
	"github.com/slackpoll/slackpoll/internal/mcp"
)

// httpShutdownTimeout bounds the graceful shutdown of the read API, well inside the
// 5 s a SIGTERM gives the daemon to exit.
const httpShutdownTimeout = 2 * time.Second

// serveHTTP starts the read API on http.listen, if set, and returns the function that
// shuts it down (waiting up to httpShutdownTimeout for requests in flight, then
// cutting them); calling it again waits for the first call. The address is bound
// before it returns, so a taken port fails the start. A listen address that is not
// loopback is served with a warning: the API shows message texts.
func (d *daemon) serveHTTP() (stop func(), err error) {
	listen := d.cfg.HTTP.Listen
	if listen == "" {
		return func() {}, nil
	}
	h := httpapi.New(httpapi.Options{
		Store: d.model, Projections: d.proj, Configured: d.cfg.Conversations, Interval: d.cfg.Tick.Interval.D(),
		Token: d.cfg.HTTP.Token.Reveal(), Ready: d.metrics.Ready, Metrics: d.metrics, Logger: d.log, Listen: listen,
		Notifier: d.notifier, OnRequeue: d.wakeDeliverer, Webhooks: webhookNames(d.cfg), Running: d.poller.Running,
		CurrentConfigured: d.reloadable.configured, AllowedHosts: d.cfg.HTTP.AllowedHosts,
		SpoolDir: filepath.Dir(d.cfg.Store.Path),
		MCP:      d.mcpServer().Handler(),
	})
	return serveAPI(d.log, listen, d.cfg.HTTP.Token.IsSet(), h, d.notifier.Close)
}

// serveAPI serves h on listen (bound before it returns, so a taken port fails the
// start) and returns the function that shuts it down (waiting up to
// httpShutdownTimeout for requests in flight, then cutting them; calling it again
// waits for the first call). onShutdown, if set, runs as the shutdown starts (long
// polls answer now, not when cut). A listen address that is not loopback is served
// with a warning: the API shows message texts.
func serveAPI(log *slog.Logger, listen string, tokenSet bool, h http.Handler, onShutdown func()) (stop func(), err error) {
	warnIfExposed(log, listen, tokenSet)
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("http.listen %s: %w (is another slackpoll or program using the port?)", listen, err)
	}
	srv := httpapi.NewServer(listen, h)
	if onShutdown != nil {
		srv.RegisterOnShutdown(onShutdown)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http api stopped", "err", err)
		}
	}()
	log.Info("http api listening", "addr", ln.Addr().String())
	var once sync.Once
	return func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), httpShutdownTimeout)
			defer cancel()
			if err := srv.Shutdown(ctx); err != nil {
				_ = srv.Close() // requests still running after the timeout are cut
			}
			<-done
		})
	}, nil
}

// mcpServer is the MCP server of /mcp: it reads the daemon's own store.
func (d *daemon) mcpServer() *mcp.Server {
	reader := &mcp.StoreReader{Store: d.store, CurrentConfigured: d.reloadable.configured, Interval: d.cfg.Tick.Interval.D(), DaemonRunning: true,
		Searcher: d.proj.Search}
	return mcp.New(mcp.Options{
		Open:    func(context.Context) (mcp.Reader, func(), error) { return reader, func() {}, nil },
		Policy:  mcp.Policy{Conversations: d.cfg.MCP.Conversations},
		Version: readBuildInfo(debug.ReadBuildInfo).Version,
		Logger:  d.log,
	})
}

// warnIfExposed logs a warning when listen accepts connections from other hosts:
// the read API shows message texts.
func warnIfExposed(log *slog.Logger, listen string, tokenSet bool) {
	if !isLoopback(listen) {
		log.Warn("http.listen is not a loopback address: the read API, which shows message texts, is reachable from other hosts",
			"listen", listen, "token_required", tokenSet)
	}
}

// isLoopback reports whether a host:port only accepts local connections: localhost or
// a loopback IP. An empty host, or an unspecified IP, listens on every interface.
func isLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil || host == "" {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
