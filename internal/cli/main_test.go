package cli

import (
	"os"
	"testing"

	"github.com/slackpoll/slackpoll/internal/testsupport/testbin"
)

func TestMain(m *testing.M) { os.Exit(testbin.Run(m)) }
