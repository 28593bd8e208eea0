package installs

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// KeyEnv is the environment variable LoadKey reads first.
const KeyEnv = "SLACKPOLL_INSTALL_KEY"

// KeySize is the key length: AES-256.
const KeySize = 32

// ErrNoKey is LoadKey's answer when neither KeyEnv nor a key file is set: tokens given
// at run time cannot be kept, so runtime registration is refused.
var ErrNoKey = errors.New("runtime registration needs a key: set " + KeyEnv +
	" to 32 random bytes in base64 (openssl rand -base64 32) or workspaces.key_file")

// Key seals installation records with AES-256-GCM. Its bytes never leave it: it
// prints as "installs.Key(redacted)" in every format.
type Key struct {
	aead cipher.AEAD
}

// NewKey builds a Key from 32 raw bytes.
func NewKey(raw []byte) (*Key, error) {
	if len(raw) != KeySize {
		return nil, fmt.Errorf("install key: %d bytes, want %d", len(raw), KeySize)
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, fmt.Errorf("install key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("install key: %w", err)
	}
	return &Key{aead: aead}, nil
}

// Format prints the Key as "installs.Key(redacted)" whatever the verb.
func (k Key) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, "installs.Key(redacted)") }

// LoadKey returns the key from the environment variable KeyEnv (read through getenv;
// base64, standard or URL alphabet, padded or not, 32 bytes decoded) or else from file
// (the same base64 text, or exactly 32 raw bytes). A key file readable or writable by
// group or others is refused ("chmod 600 <file>"). Neither set → ErrNoKey. Errors never
// contain key material.
func LoadKey(getenv func(string) string, file string) (*Key, error) {
	if getenv != nil {
		if v := strings.TrimSpace(getenv(KeyEnv)); v != "" {
			raw, err := decodeKey(v)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", KeyEnv, err)
			}
			return NewKey(raw)
		}
	}
	if file == "" {
		return nil, ErrNoKey
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("install key file: %w", err)
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("install key file: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("install key file %s has mode %v: it must be readable by its owner only: chmod 600 %s", file, st.Mode().Perm(), file)
	}
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return nil, fmt.Errorf("install key file %s: %w", file, err)
	}
	if len(b) == KeySize {
		return NewKey(b)
	}
	raw, err := decodeKey(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("install key file %s: %w", file, err)
	}
	return NewKey(raw)
}

// decodeKey decodes base64 in any of its four spellings into exactly KeySize bytes.
func decodeKey(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if raw, err := enc.DecodeString(s); err == nil {
			if len(raw) != KeySize {
				return nil, fmt.Errorf("the key decodes to %d bytes, want %d (openssl rand -base64 32)", len(raw), KeySize)
			}
			return raw, nil
		}
	}
	return nil, errors.New("the key is not base64 (openssl rand -base64 32)")
}

// errOpen is the cause of a record that does not open: wrong key, a damaged byte, or
// a record moved under another team.
var errOpen = errors.New("cannot open the sealed record (wrong key, damaged, or moved from another team)")

// seal encrypts plain with a fresh random nonce; teamID is the additional data, so the
// result opens only under the same team. The output is nonce || ciphertext+tag.
func (k *Key) seal(teamID string, plain []byte) []byte {
	nonce := make([]byte, k.aead.NonceSize(), k.aead.NonceSize()+len(plain)+k.aead.Overhead())
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails (Go ≥ 1.24)
	return k.aead.Seal(nonce, nonce, plain, []byte(teamID))
}

// open reverses seal for teamID; any mismatch is errOpen.
func (k *Key) open(teamID string, sealed []byte) ([]byte, error) {
	n := k.aead.NonceSize()
	if len(sealed) < n+k.aead.Overhead() {
		return nil, errOpen
	}
	plain, err := k.aead.Open(nil, sealed[:n], sealed[n:], []byte(teamID))
	if err != nil {
		return nil, errOpen
	}
	return plain, nil
}
