package cli

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

// buildInfo is what the binary knows about its own build: module version, VCS
// revision and time, and the Go version, all from runtime/debug.ReadBuildInfo (the Go
// toolchain stamps them: `go build` in a git checkout sets vcs.*; `go install
// module@version` sets the module version).
type buildInfo struct {
	Version   string // module version, e.g. "v1.2.0", "v0.0.0-20261201…-abcdef+dirty", or "(devel)"
	Revision  string // vcs.revision, "" when not built from a checkout
	Time      string // vcs.time, RFC 3339
	Modified  bool   // vcs.modified: uncommitted changes were built
	GoVersion string // e.g. "go1.26.8"
}

// readBuildInfo reads the build info; read is runtime/debug.ReadBuildInfo (tests pass
// their own).
func readBuildInfo(read func() (*debug.BuildInfo, bool)) buildInfo {
	bi, ok := read()
	if !ok {
		return buildInfo{Version: "unknown (built without module support)"}
	}
	b := buildInfo{Version: bi.Main.Version, GoVersion: bi.GoVersion}
	if b.Version == "" {
		b.Version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// String is the one line `slackpoll version` prints:
// "slackpoll v1.2.0 (revision 0123abcd…, 2026-12-01T18:00:00Z) go1.26.8".
func (b buildInfo) String() string {
	var s strings.Builder
	fmt.Fprintf(&s, "slackpoll %s", b.Version)
	if b.Revision != "" {
		fmt.Fprintf(&s, " (revision %s", b.Revision)
		if b.Modified {
			s.WriteString(" with uncommitted changes")
		}
		if b.Time != "" {
			fmt.Fprintf(&s, ", %s", b.Time)
		}
		s.WriteString(")")
	}
	if b.GoVersion != "" {
		fmt.Fprintf(&s, " %s", b.GoVersion)
	}
	return s.String()
}

// cmdVersion is `slackpoll version` (and `slackpoll --version`).
func cmdVersion(ctx context.Context, c *cmdCtx) error { return printVersion(c.env.Stdout) }

func printVersion(w io.Writer) error {
	_, err := fmt.Fprintln(w, readBuildInfo(debug.ReadBuildInfo))
	return err
}
