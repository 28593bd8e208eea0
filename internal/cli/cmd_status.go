package cli

import (
	"context"
	"errors"
)

// cmdStatus and cmdShow are written under issue 4.
func cmdStatus(ctx context.Context, c *cmdCtx) error { return errors.New("status: not implemented yet") }
func cmdShow(ctx context.Context, c *cmdCtx) error   { return errors.New("show: not implemented yet") }
func cmdDemo(ctx context.Context, c *cmdCtx) error   { return errors.New("demo: not implemented yet") }
