package installs

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func newTestKey(t *testing.T) (*Key, []byte) {
	t.Helper()
	raw := make([]byte, KeySize)
	_, _ = rand.Read(raw)
	k, err := NewKey(raw)
	if err != nil {
		t.Fatal(err)
	}
	return k, raw
}

func TestSealOpen(t *testing.T) {
	k, _ := newTestKey(t)
	plain := []byte(`{"bot_token":"xoxb-1"}`)
	s1, s2 := k.seal("T1", plain), k.seal("T1", plain)
	if bytes.Equal(s1, s2) {
		t.Error("two seals of the same record are equal: the nonce is not fresh")
	}
	if bytes.Contains(s1, []byte("xoxb")) {
		t.Error("the sealed record shows the plain text")
	}
	got, err := k.open("T1", s1)
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("open = %q, %v; want the plain text", got, err)
	}
	other, _ := newTestKey(t)
	if _, err := other.open("T1", s1); !errors.Is(err, errOpen) {
		t.Errorf("wrong key: %v, want errOpen", err)
	}
	if _, err := k.open("T2", s1); !errors.Is(err, errOpen) {
		t.Errorf("record moved to another team: %v, want errOpen", err)
	}
	for i := range s1 {
		bad := bytes.Clone(s1)
		bad[i] ^= 0x01
		if _, err := k.open("T1", bad); !errors.Is(err, errOpen) {
			t.Fatalf("byte %d flipped: %v, want errOpen", i, err)
		}
	}
	if _, err := k.open("T1", s1[:5]); !errors.Is(err, errOpen) {
		t.Errorf("truncated: %v, want errOpen", err)
	}
}

func TestKeyNeverPrints(t *testing.T) {
	k, raw := newTestKey(t)
	for _, f := range []string{"%v", "%+v", "%#v", "%s", "%x", "%d"} {
		for _, v := range []any{k, *k} {
			out := fmt.Sprintf(f, v)
			if out != "installs.Key(redacted)" || strings.Contains(out, fmt.Sprintf("%x", raw[:4])) {
				t.Errorf("Sprintf(%q, key) = %q", f, out)
			}
		}
	}
}

func TestLoadKey(t *testing.T) {
	_, raw := newTestKey(t)
	env := func(v string) func(string) string {
		return func(name string) string {
			if name == KeyEnv {
				return v
			}
			return ""
		}
	}
	for name, v := range map[string]string{
		"std": base64.StdEncoding.EncodeToString(raw), "url": base64.URLEncoding.EncodeToString(raw),
		"raw std": base64.RawStdEncoding.EncodeToString(raw), "newline": base64.StdEncoding.EncodeToString(raw) + "\n",
	} {
		if _, err := LoadKey(env(v), ""); err != nil {
			t.Errorf("env %s: %v", name, err)
		}
	}
	if _, err := LoadKey(env(base64.StdEncoding.EncodeToString(raw[:16])), ""); err == nil || !strings.Contains(err.Error(), "16 bytes") {
		t.Errorf("a 16-byte key: %v, want an error naming the length", err)
	}
	if _, err := LoadKey(env("not base64!"), ""); err == nil || strings.Contains(err.Error(), "not base64!") {
		t.Errorf("garbage key: %v, want an error that does not echo the value", err)
	}

	_, err := LoadKey(env(""), "")
	if !errors.Is(err, ErrNoKey) {
		t.Fatalf("no key: %v, want ErrNoKey", err)
	}
	for _, want := range []string{KeyEnv, "openssl rand -base64 32", "key_file"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("ErrNoKey %q does not say %q", err, want)
		}
	}

	dir := t.TempDir()
	b64 := filepath.Join(dir, "b64.key")
	if err := os.WriteFile(b64, []byte(base64.StdEncoding.EncodeToString(raw)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rawFile := filepath.Join(dir, "raw.key")
	if err := os.WriteFile(rawFile, raw, 0o400); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{b64, rawFile} {
		if _, err := LoadKey(os.Getenv, f); err != nil && os.Getenv(KeyEnv) == "" {
			t.Errorf("key file %s: %v", f, err)
		}
		if _, err := LoadKey(nil, f); err != nil {
			t.Errorf("key file %s: %v", f, err)
		}
	}
	// The key file sealed a record the env key opens: both spellings are one key.
	k1, _ := LoadKey(nil, rawFile)
	k2, _ := LoadKey(env(base64.URLEncoding.EncodeToString(raw)), "")
	if _, err := k2.open("T1", k1.seal("T1", []byte("x"))); err != nil {
		t.Errorf("the file's key and the env's key differ: %v", err)
	}
	for _, mode := range []os.FileMode{0o640, 0o604, 0o660} {
		if err := os.Chmod(b64, mode); err != nil {
			t.Fatal(err)
		}
		_, err := LoadKey(nil, b64)
		if err == nil || !strings.Contains(err.Error(), "chmod 600 "+b64) {
			t.Errorf("key file mode %v: %v, want an error saying chmod 600 %s", mode, err, b64)
		}
	}
	if _, err := LoadKey(nil, filepath.Join(dir, "missing")); err == nil || errors.Is(err, ErrNoKey) {
		t.Errorf("missing key file: %v, want an error about the file", err)
	}
}
