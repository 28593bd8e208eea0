package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSchemasAreCurrent fails when a committed schema differs from what the
// generator writes (k8s.io/api was upgraded, or the generator changed) or a kind's
// schema is missing: run `go generate` here and commit.
func TestSchemasAreCurrent(t *testing.T) {
	want := map[string]bool{}
	for _, k := range kinds {
		want[k.fileName()] = true
		b, err := schemaJSON(k)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join("..", k.fileName()))
		if err != nil {
			t.Errorf("%s: %v: run `go generate` in deploy/k8s/schemas/gen and commit", k.fileName(), err)
			continue
		}
		if !bytes.Equal(got, b) {
			t.Errorf("%s is stale: run `go generate` in deploy/k8s/schemas/gen and commit", k.fileName())
		}
	}
	files, _ := filepath.Glob(filepath.Join("..", "*.json"))
	for _, f := range files {
		if !want[filepath.Base(f)] {
			t.Errorf("%s is not a kind the generator writes: remove it", f)
		}
	}
}

// TestSchemasAreStrictAndShaped checks what kubeconform relies on: every object
// refuses unknown fields, the file name is kubeconform's, and the special types
// have their JSON shape (a quantity is "128Mi" or a number, a port name or number).
func TestSchemasAreStrictAndShaped(t *testing.T) {
	for _, k := range kinds {
		b, err := schemaJSON(k)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		if doc["additionalProperties"] != false {
			t.Errorf("%s: the top level allows unknown fields", k.name)
		}
		for name, d := range doc["definitions"].(map[string]any) {
			if d.(map[string]any)["additionalProperties"] != false {
				t.Errorf("%s: definition %s allows unknown fields", k.name, name)
			}
		}
	}
	if got := (kind{"apps", "v1", "StatefulSet", nil}).fileName(); got != "statefulset-apps-v1.json" {
		t.Errorf("file name %q, want kubeconform's statefulset-apps-v1.json", got)
	}
	if got := (kind{"", "v1", "ConfigMap", nil}).fileName(); got != "configmap-v1.json" {
		t.Errorf("file name %q, want kubeconform's configmap-v1.json", got)
	}
	q := regexp.MustCompile(special[quantityType]["oneOf"].([]any)[0].(schema)["pattern"].(string))
	for _, s := range []string{"128Mi", "1Gi", "100m", "0.5", "2", "1e3", ".5", "500k"} {
		if !q.MatchString(s) {
			t.Errorf("quantity %q refused", s)
		}
	}
	for _, s := range []string{"128MB", "1 Gi", "", "Mi", "1.2.3"} {
		if q.MatchString(s) {
			t.Errorf("quantity %q accepted", s)
		}
	}
	b, _ := schemaJSON(kinds[0])
	if !strings.Contains(string(b), `"core.v1.PodSpec"`) {
		t.Error("the StatefulSet schema has no PodSpec definition")
	}
}
