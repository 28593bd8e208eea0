// Command slackpoll keeps a local read model of Slack conversations by polling
// conversations.history and conversations.replies into bbolt. See README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/slackpoll/slackpoll/internal/cli"
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sigs
		cancel() // first signal: finish gracefully, write nothing partial
		<-sigs
		fmt.Fprintln(os.Stderr, "slackpoll: second signal, exiting at once")
		os.Exit(1)
	}()
	// SIGHUP's default is to exit at once, silently: `run` reloads its config instead.
	hups := make(chan os.Signal, 1)
	hangup := make(chan struct{}, 1)
	signal.Notify(hups, syscall.SIGHUP)
	go func() {
		for range hups {
			select {
			case hangup <- struct{}{}:
			default: // a reload is pending already
			}
		}
	}()
	os.Exit(cli.Main(ctx, os.Args[1:], cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Hangup: hangup}))
}
