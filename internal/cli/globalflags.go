package cli

import (
	"fmt"
	"strings"
)

// helpError is a usage error that ends with a pointer to the usage (of the command,
// or of slackpoll when cmd is ""), instead of the whole usage text after the error.
type helpError struct {
	err error
	cmd string
}

func (e *helpError) Error() string { return e.err.Error() }
func (e *helpError) Unwrap() error { return e.err }

func (e *helpError) hint() string {
	if e.cmd == "" {
		return `Run "slackpoll --help" for the commands.`
	}
	return fmt.Sprintf(`Run "slackpoll %s --help" for its usage.`, e.cmd)
}

// globalFlags consumes the flags before the command: --help, --version and --config
// (which then is the default of the command's own --config). done is true when a flag
// answered the whole command line (--help, --version).
func globalFlags(args []string, c *cmdCtx) (rest []string, done bool, err error) {
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		arg := args[0]
		args = args[1:]
		name, value, hasValue := strings.Cut(arg, "=")
		switch name {
		case "-h", "--help":
			fmt.Fprint(c.env.Stdout, usage)
			return nil, true, nil
		case "--version", "-v":
			return nil, true, printVersion(c.env.Stdout)
		case "--config", "-c":
			if !hasValue {
				if len(args) == 0 {
					return nil, false, &helpError{usageErr("%s needs a file name", name), ""}
				}
				value, args = args[0], args[1:]
			}
			c.configPath = value
		case "--":
			return args, false, nil
		default:
			return nil, false, &helpError{usageErr("unknown flag %s before the command (only --config, --version and --help go there)", arg), ""}
		}
	}
	if len(args) > 0 && args[0] == "help" {
		fmt.Fprint(c.env.Stdout, usage)
		return nil, true, nil
	}
	return args, false, nil
}
