package release

import (
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"debug/macho"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

var flagBuild = flag.Bool("release.build", false, "cross-compile every release target (minutes on a 2-core machine; .ci/run passes it)")

// goreleaser is the part of .goreleaser.yaml these checks read.
type goreleaser struct {
	Version int `yaml:"version"`
	Builds  []struct {
		ID      string   `yaml:"id"`
		Main    string   `yaml:"main"`
		Binary  string   `yaml:"binary"`
		Env     []string `yaml:"env"`
		Flags   []string `yaml:"flags"`
		Ldflags []string `yaml:"ldflags"`
		Goos    []string `yaml:"goos"`
		Goarch  []string `yaml:"goarch"`
	} `yaml:"builds"`
	Archives []struct {
		Files []string `yaml:"files"`
	} `yaml:"archives"`
	Checksum struct {
		NameTemplate string `yaml:"name_template"`
		Algorithm    string `yaml:"algorithm"`
	} `yaml:"checksum"`
	Dockers []struct {
		Dockerfile string   `yaml:"dockerfile"`
		Platforms  []string `yaml:"platforms"`
	} `yaml:"dockers_v2"`
}

const root = "../.."

func readConfig(t *testing.T) goreleaser {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var g goreleaser
	if err := yaml.Unmarshal(b, &g); err != nil {
		t.Fatalf(".goreleaser.yaml: %v", err)
	}
	return g
}

// .goreleaser.yaml is valid for GoReleaser v2.15.1: it matches the JSON schema that
// version prints (`goreleaser jsonschema > internal/release/testdata/goreleaser-v2.15.1.schema.json`),
// which knows every key and type, so a misspelt or misplaced key fails here as
// `goreleaser check` would fail it, without installing GoReleaser.
func TestReleaseConfigMatchesGoReleasersSchema(t *testing.T) {
	f, err := os.Open("testdata/goreleaser-v2.15.1.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("goreleaser.json", doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("goreleaser.json")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg any
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	// The schema's JSON types: YAML's ints as JSON numbers.
	j, _ := json.Marshal(cfg)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(inst); err != nil {
		t.Errorf(".goreleaser.yaml does not match GoReleaser v2.15.1's schema: %v", err)
	}
}

// The release builds what the README promises: static binaries (no cgo) of
// cmd/slackpoll for linux and darwin on amd64 and arm64, sha256 checksums, and the
// image of a Dockerfile in deploy/docker for linux/amd64 and linux/arm64; every file
// the archives name exists.
func TestReleaseConfig(t *testing.T) {
	g := readConfig(t)
	if g.Version != 2 || len(g.Builds) != 1 {
		t.Fatalf("version %d with %d builds, want GoReleaser's v2 schema and one build", g.Version, len(g.Builds))
	}
	b := g.Builds[0]
	if b.Main != "./cmd/slackpoll" || b.Binary != "slackpoll" || !slices.Contains(b.Env, "CGO_ENABLED=0") {
		t.Errorf("build %+v: want ./cmd/slackpoll as slackpoll with CGO_ENABLED=0", b)
	}
	for _, want := range [][2][]string{{b.Goos, {"darwin", "linux"}}, {b.Goarch, {"amd64", "arm64"}}} {
		got := slices.Sorted(slices.Values(want[0]))
		if !slices.Equal(got, want[1]) {
			t.Errorf("targets %v, want %v", got, want[1])
		}
	}
	if g.Checksum.NameTemplate == "" || g.Checksum.Algorithm != "sha256" {
		t.Errorf("checksum %+v, want a sha256 checksums file", g.Checksum)
	}
	if len(g.Dockers) != 1 || !strings.HasPrefix(g.Dockers[0].Dockerfile, "deploy/docker/") ||
		!slices.Equal(g.Dockers[0].Platforms, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("dockers_v2 %+v, want one image from deploy/docker for linux/amd64 and linux/arm64", g.Dockers)
	} else if _, err := os.Stat(filepath.Join(root, g.Dockers[0].Dockerfile)); err != nil {
		t.Error(err)
	}
	for _, a := range g.Archives {
		for _, f := range a.Files {
			if m, _ := filepath.Glob(filepath.Join(root, f)); len(m) == 0 {
				t.Errorf("archive file %s matches nothing", f)
			}
		}
	}
}

// Every target of the release builds with the release's own flags, as a static
// binary of the right format and architecture, with cgo off and paths trimmed.
func TestReleaseTargetsBuild(t *testing.T) {
	if !*flagBuild {
		t.Skip("pass -release.build to cross-compile the release targets (CI does)")
	}
	g := readConfig(t)
	b := g.Builds[0]
	dir := t.TempDir()
	for _, goos := range b.Goos {
		for _, goarch := range b.Goarch {
			out := filepath.Join(dir, goos+"_"+goarch, b.Binary)
			args := append([]string{"build", "-o", out}, b.Flags...)
			args = append(args, "-ldflags="+strings.Join(b.Ldflags, " "), b.Main)
			cmd := exec.Command("go", args...)
			cmd.Dir = root
			cmd.Env = append(append(os.Environ(), b.Env...), "GOOS="+goos, "GOARCH="+goarch)
			if msg, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s/%s: go %s: %v\n%s", goos, goarch, strings.Join(args, " "), err, msg)
			}
			checkBinary(t, out, goos, goarch)
		}
	}
}

func checkBinary(t *testing.T, path, goos, goarch string) {
	t.Helper()
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" || settings["GOOS"] != goos || settings["GOARCH"] != goarch {
		t.Errorf("%s/%s: build settings %v, want CGO_ENABLED=0, -trimpath, %s/%s", goos, goarch, settings, goos, goarch)
	}
	// Go finds the repository by a .git directory: a git worktree's .git is a file,
	// and its builds carry no VCS stamp.
	if fi, err := os.Stat(filepath.Join(root, ".git")); err == nil && fi.IsDir() && settings["vcs.revision"] == "" {
		t.Errorf("%s/%s: no vcs.revision: `slackpoll version` of a release would not say what it is", goos, goarch)
	}
	switch goos {
	case "linux":
		f, err := elf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = f.Close() }()
		libs, _ := f.ImportedLibraries()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("linux/%s: dynamically linked (an ELF interpreter)", goarch)
			}
		}
		want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[goarch]
		if len(libs) > 0 || f.Machine != want {
			t.Errorf("linux/%s: machine %v, libraries %v; want %v and none", goarch, f.Machine, libs, want)
		}
	case "darwin":
		f, err := macho.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = f.Close() }()
		// Go reaches the macOS kernel through libSystem (the only supported way), even
		// without cgo, and the system's resolver and certificate verification through
		// libresolv and the Security framework once net/http is linked in. Those ship
		// with every macOS; anything outside /usr/lib and /System/Library would not.
		libs, _ := f.ImportedLibraries()
		want := map[string]macho.Cpu{"amd64": macho.CpuAmd64, "arm64": macho.CpuArm64}[goarch]
		system := slices.ContainsFunc(libs, func(l string) bool { return strings.Contains(l, "libSystem") })
		for _, l := range libs {
			if !strings.HasPrefix(l, "/usr/lib/") && !strings.HasPrefix(l, "/System/Library/") {
				system = false
			}
		}
		if f.Cpu != want || !system {
			t.Errorf("darwin/%s: cpu %v, libraries %v; want %v, libSystem and nothing outside the system's own", goarch, f.Cpu, libs, want)
		}
	}
}
