package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// kind is one resource kind the manifests use.
type kind struct {
	group, version, name string
	typ                  reflect.Type
}

// kinds are the kinds of deploy/k8s; a manifest of another kind fails kubeconform
// (no schema), so adding one means adding it here.
var kinds = []kind{
	{"apps", "v1", "StatefulSet", reflect.TypeFor[appsv1.StatefulSet]()},
	{"batch", "v1", "CronJob", reflect.TypeFor[batchv1.CronJob]()},
	{"", "v1", "ConfigMap", reflect.TypeFor[corev1.ConfigMap]()},
	{"", "v1", "PersistentVolumeClaim", reflect.TypeFor[corev1.PersistentVolumeClaim]()},
	{"", "v1", "Secret", reflect.TypeFor[corev1.Secret]()},
	{"", "v1", "Service", reflect.TypeFor[corev1.Service]()},
}

func (k kind) apiVersion() string {
	if k.group == "" {
		return k.version
	}
	return k.group + "/" + k.version
}

// fileName is kubeconform's {{.ResourceKind}}{{.KindSuffix}}.json.
func (k kind) fileName() string {
	s := strings.ToLower(k.name)
	if k.group != "" {
		s += "-" + k.group
	}
	return s + "-" + k.version + ".json"
}

// schema is a JSON schema node. Maps marshal with sorted keys, so the output is
// stable.
type schema = map[string]any

// Types whose JSON is not their Go shape (they have their own MarshalJSON).
var special = map[reflect.Type]schema{
	quantityType: {"oneOf": []any{
		schema{"type": "string", "pattern": `^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(([KMGTPE]i)|[numkMGTPE]|[eE][+-]?[0-9]+)?$`},
		schema{"type": "number"},
	}},
	reflect.TypeFor[intstr.IntOrString]():   {"oneOf": []any{schema{"type": "string"}, schema{"type": "integer"}}},
	reflect.TypeFor[metav1.Time]():          {"type": []any{"string", "null"}, "format": "date-time"},
	reflect.TypeFor[metav1.MicroTime]():     {"type": []any{"string", "null"}, "format": "date-time"},
	reflect.TypeFor[metav1.Duration]():      {"type": "string"},
	reflect.TypeFor[metav1.FieldsV1]():      {"type": "object"},
	reflect.TypeFor[runtime.RawExtension](): {"type": "object"},
}

// gen builds schemas, with each named struct once under definitions.
type gen struct {
	defs map[string]schema
}

// defName names a struct type's definition: its package's last two path elements
// and its name, e.g. core.v1.PodSpec.
func defName(t reflect.Type) string {
	p := strings.Split(t.PkgPath(), "/")
	if len(p) > 2 {
		p = p[len(p)-2:]
	}
	return strings.Join(p, ".") + "." + t.Name()
}

func (g *gen) of(t reflect.Type) schema {
	if s, ok := special[t]; ok {
		return s
	}
	switch t.Kind() {
	case reflect.Pointer:
		s := g.of(t.Elem())
		return schema{"oneOf": []any{s, schema{"type": "null"}}}
	case reflect.Bool:
		return schema{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return schema{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return schema{"type": "number"}
	case reflect.String:
		return schema{"type": "string"}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return schema{"type": []any{"string", "null"}, "contentEncoding": "base64"} // []byte
		}
		return schema{"type": []any{"array", "null"}, "items": g.of(t.Elem())}
	case reflect.Map:
		return schema{"type": []any{"object", "null"}, "additionalProperties": g.of(t.Elem())}
	case reflect.Struct:
		name := defName(t)
		if _, ok := g.defs[name]; !ok {
			g.defs[name] = nil // being built: a recursive type refers to itself
			props := schema{}
			g.fields(t, props)
			g.defs[name] = schema{"type": "object", "properties": props, "additionalProperties": false}
		}
		return schema{"$ref": "#/definitions/" + name}
	}
	panic(fmt.Sprintf("gen: no schema for %s (%s)", t, t.Kind())) // a new Go kind in k8s.io/api: a programming error of this generator
}

// fields adds t's JSON fields to props; inline (embedded) structs add theirs.
func (g *gen) fields(t reflect.Type, props schema) {
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" && (f.Anonymous || strings.Contains(opts, "inline")) {
			g.fields(f.Type, props)
			continue
		}
		if name == "" {
			name = f.Name
		}
		props[name] = g.of(f.Type)
	}
}

// schemaJSON is k's schema document: the kind's struct, with apiVersion and kind
// fixed to k's and required.
func schemaJSON(k kind) ([]byte, error) {
	g := &gen{defs: map[string]schema{}}
	g.of(k.typ)
	top := g.defs[defName(k.typ)]
	props := schema{}
	for n, p := range top["properties"].(schema) {
		props[n] = p
	}
	props["apiVersion"] = schema{"type": "string", "enum": []any{k.apiVersion()}}
	props["kind"] = schema{"type": "string", "enum": []any{k.name}}
	delete(g.defs, defName(k.typ))
	doc := schema{
		"$schema":              "http://json-schema.org/draft-07/schema#",
		"description":          fmt.Sprintf("%s %s, generated from the Go types of k8s.io/api by deploy/k8s/schemas/gen: do not edit", k.apiVersion(), k.name),
		"type":                 "object",
		"properties":           props,
		"required":             []any{"apiVersion", "kind"},
		"additionalProperties": false,
		"definitions":          g.defs,
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", " ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

var quantityType = reflect.TypeFor[resource.Quantity]()
