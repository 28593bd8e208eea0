package config

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// decode parses data and sets the fields of c named by its keys, leaving the
// others as they are. ${VAR} is expanded in scalar values after parsing, so
// it can never add keys. Unknown and duplicate keys are errors; a renamed or
// removed key of an earlier release (keyChanges) is a warning. src, if not nil,
// receives the line of every key path set and the warnings.
func decode(c *Config, file string, data []byte, lookup func(string) (string, bool), src *source) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return &Error{File: file, Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: "), Err: err}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil // empty file: all defaults
	}
	root := doc.Content[0]
	emptied := map[*yaml.Node]string{}
	expandNode(root, lookup, emptied)
	w := &walker{file: file, src: src, emptied: emptied}
	w.structure(reflect.ValueOf(c).Elem(), root, "")
	return errors.Join(w.errs...)
}

// expandNode expands ${VAR} in every scalar value under n (not in keys). A
// plain scalar that changed is re-resolved from its new text, as if written
// so, except that an empty result is the empty string (not null). Scalars that
// expanded to "" are recorded in emptied with their text as written.
func expandNode(n *yaml.Node, lookup func(string) (string, bool), emptied map[*yaml.Node]string) {
	switch n.Kind {
	case yaml.ScalarNode:
		if !strings.Contains(n.Value, "${") {
			return
		}
		v := expandVars(n.Value, lookup)
		if v == n.Value {
			return
		}
		if v == "" {
			emptied[n] = n.Value
		}
		n.Value = v
		const explicit = yaml.TaggedStyle | yaml.SingleQuotedStyle | yaml.DoubleQuotedStyle | yaml.LiteralStyle | yaml.FoldedStyle
		if n.Style&explicit == 0 {
			if v == "" {
				n.Tag, n.Style = "!!str", yaml.DoubleQuotedStyle
			} else {
				n.Tag = ""
			}
		}
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			expandNode(n.Content[i], lookup, emptied)
		}
	case yaml.SequenceNode, yaml.DocumentNode:
		for _, c := range n.Content {
			expandNode(c, lookup, emptied)
		}
	}
}

type walker struct {
	file    string
	src     *source // nil: lines and warnings are not recorded
	errs    []error
	emptied map[*yaml.Node]string // scalars that ${VAR} expansion left empty
}

func (w *walker) fail(line int, key, format string, args ...any) {
	w.errs = append(w.errs, &Error{File: w.file, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)})
}

// failNamed is fail for a message that names the key itself.
func (w *walker) failNamed(line int, key, format string, args ...any) {
	w.fail(line, key, format, args...)
	w.errs[len(w.errs)-1].(*Error).keyInMsg = true
}

func (w *walker) mark(key string, line int) {
	if w.src != nil {
		w.src.lines[key] = line
	}
}

func (w *walker) warn(line int, key, msg string) {
	if w.src != nil {
		w.src.warnings = append(w.src.warnings, Warning{File: w.file, Line: line, Key: key, Msg: msg})
	}
}

// structure sets the fields of struct v from mapping n.
func (w *walker) structure(v reflect.Value, n *yaml.Node, path string) {
	n = deref(n)
	if isNull(n) {
		return
	}
	fields := yamlFields(v.Type())
	if n.Kind != yaml.MappingNode {
		where := path
		if where == "" {
			where = "the file"
		}
		w.failNamed(n.Line, path, "%s must be a mapping with the keys %s, not %s", where, strings.Join(names(fields), ", "), describe(n))
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		name := k.Value
		key := join(path, name)
		if k.Kind != yaml.ScalarNode {
			w.fail(k.Line, path, "keys must be plain names, not %s", describe(k))
			continue
		}
		if first, dup := seen[name]; dup {
			w.failNamed(k.Line, key, "key %q appears twice (first on line %d)", key, first)
			continue
		}
		seen[name] = k.Line
		f, ok := findField(fields, name)
		if !ok {
			if w.changedKey(v, n, fields, k, val, path) {
				continue
			}
			under := "known top-level keys"
			if path != "" {
				under = "known keys under " + path
			}
			w.failNamed(k.Line, key, "unknown key %q (%s: %s)", key, under, strings.Join(names(fields), ", "))
			continue
		}
		w.mark(key, k.Line)
		w.value(v.Field(f.index), val, key)
	}
}

// changedKey handles key k (value val) of mapping n at path, unknown to struct v,
// when it is a renamed or removed key of an earlier release: a renamed key sets its
// new field (unless n sets the new key too: an error), a removed one is ignored;
// either way with a warning. It reports whether k was such a key.
func (w *walker) changedKey(v reflect.Value, n *yaml.Node, fields []field, k, val *yaml.Node, path string) bool {
	key := join(path, k.Value)
	kc, ok := lookupKeyChange(key)
	if !ok {
		return false
	}
	if kc.to == "" {
		w.warn(k.Line, key, kc.message(""))
		return true
	}
	f, ok := findField(fields, kc.newName())
	if !ok {
		return false // a table entry naming no field: TestKeyChangesNameRealKeys catches it
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == kc.newName() {
			w.failNamed(k.Line, key, "%s", kc.conflict(key, k.Line))
			return true
		}
	}
	newKey := join(path, kc.newName())
	w.warn(k.Line, key, kc.message(newKey))
	w.mark(newKey, k.Line)
	w.value(v.Field(f.index), val, key)
	return true
}

// value sets fv from n; null keeps the current (default) value.
func (w *walker) value(fv reflect.Value, n *yaml.Node, key string) {
	n = deref(n)
	if isNull(n) {
		return
	}
	switch {
	case fv.Kind() == reflect.Struct:
		w.structure(fv, n, key)
	case fv.Kind() == reflect.Map:
		if n.Kind != yaml.MappingNode {
			w.fail(n.Line, key, "want %s, not %s", expect(fv.Type(), key), describe(n))
			return
		}
		m := fv
		if m.IsNil() {
			m = reflect.MakeMap(fv.Type())
		}
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := deref(n.Content[i]), n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				w.fail(k.Line, key, "keys must be plain names, not %s", describe(k))
				continue
			}
			if first, dup := seen[k.Value]; dup {
				w.failNamed(k.Line, key, "%q appears twice in %s (first on line %d)", k.Value, key, first)
				continue
			}
			seen[k.Value] = k.Line
			sub := key + "." + k.Value
			e := reflect.New(fv.Type().Elem())
			if w.leaf(e, val, sub) {
				w.mark(sub, k.Line)
				m.SetMapIndex(reflect.ValueOf(k.Value), e.Elem())
			}
		}
		fv.Set(m)
	case fv.Type() == secretsType && n.Kind == yaml.ScalarNode:
		// One secret written alone (secret: X) is a list of one.
		e := reflect.New(secretType)
		if w.leaf(e, n, key) {
			fv.Set(reflect.ValueOf(Secrets{e.Elem().Interface().(Secret)}))
		}
	case fv.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			w.fail(n.Line, key, "want %s, not %s", expect(fv.Type(), key), describe(n))
			return
		}
		s := reflect.MakeSlice(fv.Type(), 0, len(n.Content))
		for i, item := range n.Content {
			sub := key + "[" + strconv.Itoa(i) + "]"
			e := reflect.New(fv.Type().Elem())
			if fv.Type().Elem().Kind() == reflect.Struct {
				w.mark(sub, item.Line)
				w.structure(e.Elem(), item, sub)
				s = reflect.Append(s, e.Elem())
				continue
			}
			if w.leaf(e, item, sub) {
				w.mark(sub, item.Line)
				s = reflect.Append(s, e.Elem())
			}
		}
		fv.Set(s)
	default:
		w.leaf(fv.Addr(), n, key)
	}
}

// leaf decodes scalar n into *ptr and reports whether it succeeded.
func (w *walker) leaf(ptr reflect.Value, n *yaml.Node, key string) bool {
	n = deref(n)
	t := ptr.Type().Elem()
	if n.Kind != yaml.ScalarNode {
		w.fail(n.Line, key, "want %s, not %s", expect(t, key), describe(n))
		return false
	}
	if t == secretType || t == secretURLType {
		return w.secret(ptr, n, key)
	}
	if k := t.Kind(); k >= reflect.Int && k <= reflect.Int64 && t != durationType && n.ShortTag() != "!!int" {
		// yaml.v3 would truncate 1.5 to 1.
		w.fail(n.Line, key, "%q is not %s", n.Value, expect(t, key))
		return false
	}
	if err := n.Decode(ptr.Interface()); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			w.fail(n.Line, key, "%q is not %s", n.Value, expect(t, key))
		} else {
			w.fail(n.Line, key, "%v", err)
		}
		return false
	}
	return true
}

var (
	durationType = reflect.TypeFor[Duration]()
	secretType   = reflect.TypeFor[Secret]()
	secretsType  = reflect.TypeFor[Secrets]()
	// A webhook URL may carry credentials: decoded like a token, never echoed.
	secretURLType = reflect.TypeFor[SecretURL]()
)

// secret decodes a token key. Its errors never show the value: yaml's own
// messages quote it ("cannot decode !!str `xoxb-…` as a !!int"). http.token
// written as ${VAR} that expanded to "" is an error, not "no authentication":
// an unset variable must not open the read API.
func (w *walker) secret(ptr reflect.Value, n *yaml.Node, key string) bool {
	// A plain 12345 is a token too; only an explicit tag other than !!str is refused.
	if tag := n.ShortTag(); n.Style&yaml.TaggedStyle != 0 && tag != "!!str" {
		w.fail(n.Line, key, "want a string, not a value tagged %s (quote the token, or remove the tag)", tag)
		return false
	}
	if written, ok := w.emptied[n]; ok && key == "http.token" {
		w.fail(n.Line, key, "%s expanded to an empty value: set the variable, or remove http.token to serve the read API without authentication", written)
		return false
	}
	ptr.Elem().SetString(n.Value)
	return true
}

// expect describes what a value of type t at key must look like.
func expect(t reflect.Type, key string) string {
	switch {
	case key == "slack.rates":
		return "a mapping of method to requests per minute, e.g. {conversations.history: 20}"
	case key == "conversations":
		return "a list of conversation IDs, e.g. [C0123456789, G0123456789]"
	case t == durationType:
		return "a duration such as 30s, 1m or 72h"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64:
		return "a whole number"
	case reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	}
	return "a " + t.String()
}

type field struct {
	name  string
	index int
}

// yamlFields lists the YAML keys of struct type t in declaration order.
func yamlFields(t reflect.Type) []field {
	var fs []field
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fs = append(fs, field{name, i})
	}
	return fs
}

func findField(fs []field, name string) (field, bool) {
	for _, f := range fs {
		if f.name == name {
			return f, true
		}
	}
	return field{}, false
}

func names(fs []field) []string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = f.name
	}
	return s
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// describe names what n is, for "not …" in messages; a scalar is shown
// quoted. Secret fields are strings, which every scalar decodes into, so a
// secret value never reaches an error message.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		return strconv.Quote(n.Value)
	case yaml.MappingNode, yaml.SequenceNode:
		return "a " + kindName(n)
	}
	return kindName(n)
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "scalar"
	case yaml.AliasNode:
		return "alias"
	}
	return "document"
}
