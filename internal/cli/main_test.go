package cli

import (
	"os"
	"testing"

	"github.com/slackpoll/slackpoll/internal/testbin"
)

func TestMain(m *testing.M) { os.Exit(testbin.Run(m)) }
