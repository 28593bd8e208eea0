package deploy_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// machinePath matches an absolute path of one machine's home or work tree, which
// means nothing on a reader's machine.
var machinePath = regexp.MustCompile("(^|[\\s(\"'`])/(work|home|Users)/[A-Za-z]")

// No source, doc or deploy file of the repository names an absolute path of one
// machine (a test comment in internal/slackapi named the real-data fixture by its
// absolute path on the machine it was written on).
func TestNoFileNamesAnAbsolutePathOfOneMachine(t *testing.T) {
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == ".git" || name == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".md", ".yml", ".yaml", ".service", ".json":
		default:
			if !strings.HasSuffix(path, "Dockerfile") {
				return nil
			}
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if machinePath.MatchString(line) {
				t.Errorf("%s:%d names a path of one machine: %s", path, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
