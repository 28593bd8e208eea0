package httpapi

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"

	"go.yaml.in/yaml/v3"
)

// openapiYAML is the OpenAPI 3.1 document of this API, its one source;
// docs/openapi.yaml is a copy that TestDocsOpenAPIIsTheServedDocument keeps equal,
// and TestOpenAPI checks every route and answer against it.
//
//go:embed openapi.yaml
var openapiYAML []byte

// OpenAPIYAML returns the OpenAPI document as written (YAML).
func OpenAPIYAML() []byte { return append([]byte(nil), openapiYAML...) }

// openapiJSON is the document as JSON, served at GET /v1/openapi.json. Made once:
// the file is embedded, so a failure is a build's bug, which every test meets.
var openapiJSON = mustJSON(openapiYAML)

func mustJSON(doc []byte) []byte {
	var v any
	if err := yaml.Unmarshal(doc, &v); err != nil {
		panic(fmt.Sprintf("httpapi: openapi.yaml: %v", err))
	}
	b, err := json.Marshal(v)
	if err != nil {
		// e.g. a map key yaml reads as a number: quote it ("200").
		panic(fmt.Sprintf("httpapi: openapi.yaml as JSON: %v", err))
	}
	return b
}

// openapi answers GET /v1/openapi.json with the document.
func openapi(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openapiJSON) // the client went away; nothing left to tell it
}
