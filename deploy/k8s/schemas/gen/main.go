// Command gen writes the JSON schemas kubeconform checks deploy/k8s against, one
// per kind the manifests use, made by reflection over the Go types of k8s.io/api
// (the types the API server decodes into), in kubeconform's layout:
// {kind}-{group}-{version}.json, lowercased, beside this directory. CI has no
// network but the Go module proxy, so the schemas cannot be fetched when CI runs:
// they are generated here and committed, and TestSchemasAreCurrent fails when
// they differ from what this program writes.
//
// Every object is strict (additionalProperties: false), so a misspelt or
// misplaced field fails. Required fields are not known to reflection (Kubernetes
// marks them with comments), so apart from apiVersion and kind they are not
// checked: a missing field is the API server's to refuse.
//
// Run from this directory: go run . (or go generate).
package main

import (
	"fmt"
	"os"
	"path/filepath"
)

//go:generate go run .

func main() {
	if err := write(".."); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

// write writes every kind's schema into dir, replacing what is there.
func write(dir string) error {
	for _, k := range kinds {
		b, err := schemaJSON(k)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, k.fileName()), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
