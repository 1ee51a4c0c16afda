package outer

import (
	"bytes"
	"compress/gzip"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// MaxStateBytes bounds the state one input-required result carries, before
// compression: it travels to the client and back with every retry.
const MaxStateBytes = 8 << 20

// ErrStateTooLarge is returned by Seal for a state over MaxStateBytes.
var ErrStateTooLarge = fmt.Errorf("the state is larger than %d MiB", MaxStateBytes>>20)

// errBadState is what Open says about any requestState it cannot use; the
// reasons are not told apart, as they are not to an attacker.
var errBadState = errors.New("the requestState is not one this gateway issued for this call (altered, made for other arguments, or sealed by another gateway process)")

// Sealer seals the state that input-required results carry through the
// client: compressed, encrypted and authenticated with AES-256-GCM under a
// key of its own, and bound to the tool call's name and arguments, so that
// a client can neither read it, alter it, nor replay it with another call.
// (SEP-2322: a server must protect the requestState it hands out.) The key
// lives as long as the process: a state outlives neither a restart nor a
// move to another replica.
type Sealer struct {
	aead cipher.AEAD
}

// NewSealer returns a Sealer with a fresh random key.
func NewSealer() *Sealer {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		panic("outer: no randomness for the state key: " + err.Error())
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		panic(err) // a 32-byte key always makes a cipher
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return &Sealer{aead: aead}
}

// Seal returns state sealed for the call of tool name with args (the JSON
// arguments as the client sent them).
func (s *Sealer) Seal(state []byte, name string, args json.RawMessage) (string, error) {
	if len(state) > MaxStateBytes {
		return "", ErrStateTooLarge
	}
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	w.Write(state)
	w.Close()
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	out := s.aead.Seal(nonce, nonce, z.Bytes(), binding(name, args))
	return base64.RawURLEncoding.EncodeToString(out), nil
}

// Open returns the state Seal sealed for the same call.
func (s *Sealer) Open(sealed, name string, args json.RawMessage) ([]byte, error) {
	raw, err := base64.RawURLEncoding.DecodeString(sealed)
	if err != nil || len(raw) < s.aead.NonceSize() {
		return nil, errBadState
	}
	n := s.aead.NonceSize()
	z, err := s.aead.Open(nil, raw[:n], raw[n:], binding(name, args))
	if err != nil {
		return nil, errBadState
	}
	r, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, errBadState
	}
	out, err := io.ReadAll(io.LimitReader(r, MaxStateBytes+1))
	if err != nil || len(out) > MaxStateBytes {
		return nil, errBadState
	}
	return out, nil
}

// binding is the additional data a state is bound to: the tool's name and
// its arguments, canonicalised (a client may re-encode the arguments it
// resends: key order and spacing do not count).
func binding(name string, args json.RawMessage) []byte {
	var b bytes.Buffer
	b.WriteString(name)
	b.WriteByte(0)
	b.Write(canonical(args))
	return b.Bytes()
}

// canonical re-encodes JSON with sorted keys and no spacing; numbers keep
// their text. Something that is not JSON stays as it is.
func canonical(raw json.RawMessage) []byte {
	if len(bytes.TrimSpace(raw)) == 0 {
		return []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return raw
	}
	out, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return out
}
