package cli

import (
	"context"
	"errors"
)

func cmdDemo(ctx context.Context, c *cmdCtx) error { return errors.New("demo: not implemented yet") }
