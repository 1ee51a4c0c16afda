package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
)

// JSON redacts a JSON value structurally, so that the result is still valid
// JSON (a plain text replacement over the raw bytes is not: a secret made of
// digits turns `{"n":123}` into `{"n":[REDACTED]}`).
//
//   - A string value has its secrets replaced, as text.
//   - An object key too. Redaction can make two keys of one object equal
//     ("<secret1>_id" and "<secret2>_id", or a redacted key next to a
//     literal "[REDACTED]" one): a key equal to one already written in the
//     same object gets the first free suffix "#2", "#3", …, so that the
//     output keeps every member and no parser silently drops a duplicate.
//   - A number whose literal contains a secret becomes the string
//     "[REDACTED]": there is no number to put in its place.
//   - Everything else (other tokens, whitespace, separators, key order) is
//     copied byte for byte from raw.
//
// raw comes back as it is (not a copy) when there are no secrets or none
// occurs in its text; otherwise it is walked with a json.Decoder. It is the
// values that are redacted: a secret spread over several tokens (one
// containing `","`) is not found, nor is one written only with \u escapes
// (JSON.stringify writes none for printable characters), and an untouched
// string keeps its escapes even where they put a secret's characters side
// by side in the text ("\u123456789012" holds "\u1234" then "56789012").
// raw that is not valid JSON comes back as a JSON string of its redacted
// text, so that it stays encodable.
func (r *Redactor) JSON(raw json.RawMessage) json.RawMessage {
	if r == nil || !r.occursIn(raw) {
		return raw
	}
	out, err := r.redactJSON(raw)
	if err != nil {
		return encodeString(nil, r.String(string(raw)))
	}
	return out
}

// Value returns v with its secrets redacted, through its JSON encoding: v
// itself when no secret occurs in that encoding, otherwise a new value
// decoded from the redacted JSON (the zero value if that fails, or if v does
// not encode at all: nothing unredacted is ever returned).
func Value[T any](r *Redactor, v T) T {
	if r == nil {
		return v
	}
	b, err := json.Marshal(v)
	var zero T
	if err != nil {
		return zero
	}
	if !r.occursIn(b) {
		return v
	}
	var out T
	if err := json.Unmarshal(r.JSON(b), &out); err != nil {
		return zero
	}
	return out
}

// frame is an open object or array while redactJSON walks its tokens.
type frame struct {
	object  bool
	wantKey bool            // objects: the next string is a key
	keys    map[string]bool // objects: the keys written so far
}

func (r *Redactor) redactJSON(raw []byte) ([]byte, error) {
	if !json.Valid(raw) {
		return nil, errors.New("invalid JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	out := make([]byte, 0, len(raw)+len(Marker))
	var stack []*frame
	prev := 0 // end of the previous token in raw
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		end := int(dec.InputOffset())
		// Token consumes the whitespace, ',' and ':' before a token; copy
		// them as they are.
		start := prev
		for start < end && strings.IndexByte(" \t\r\n,:", raw[start]) >= 0 {
			start++
		}
		out = append(out, raw[prev:start]...)
		lit := raw[start:end]
		prev = end

		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if s, ok := tok.(string); ok && top != nil && top.object && top.wantKey {
			top.wantKey = false
			k := r.String(s)
			if top.keys[k] {
				for n := 2; ; n++ {
					if c := k + "#" + strconv.Itoa(n); !top.keys[c] {
						k = c
						break
					}
				}
			}
			top.keys[k] = true
			if k == s {
				out = append(out, lit...)
			} else {
				out = encodeString(out, k)
			}
			continue
		}
		if top != nil && top.object {
			top.wantKey = true // after this value, a key or '}'
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, &frame{object: true, wantKey: true, keys: map[string]bool{}})
			case '[':
				stack = append(stack, &frame{})
			default:
				stack = stack[:len(stack)-1]
			}
			out = append(out, lit...)
		case string:
			if s := r.String(t); s != t {
				out = encodeString(out, s)
			} else {
				out = append(out, lit...)
			}
		case json.Number:
			if r.occursIn(lit) {
				out = encodeString(out, Marker)
			} else {
				out = append(out, lit...)
			}
		default: // true, false, null
			out = append(out, lit...)
		}
	}
	return append(out, raw[prev:]...), nil
}

// encodeString appends s as a JSON string, without the HTML escaping of
// json.Marshal (what is redacted is not HTML).
func encodeString(dst []byte, s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	return append(dst, bytes.TrimSuffix(b.Bytes(), []byte("\n"))...)
}
