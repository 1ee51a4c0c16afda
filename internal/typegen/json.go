package typegen

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A value is one decoded JSON value that remembers the order of object keys.
// Schemas are decoded into values (never into map[string]any) so that the
// declarations list properties in the order the server wrote them.
//
// Values are immutable once decoded; the generator keys maps by *value, so
// node identity is what "the same subschema" means.
type value struct {
	kind  valueKind
	b     bool     // kBool
	s     string   // kString: the text; kNumber: the JSON number literal
	arr   []*value // kArray
	keys  []string // kObject, in document order, without duplicates
	items []*value // kObject, parallel to keys
	// at indexes keys for objects with more than indexKeys members (a
	// $defs of thousands), so that get stays O(1); nil for small ones.
	at map[string]int
}

// indexKeys is the size from which an object's keys are indexed.
const indexKeys = 8

type valueKind uint8

const (
	kNull valueKind = iota
	kBool
	kNumber
	kString
	kArray
	kObject
)

// get returns the member key of an object, or nil.
func (v *value) get(key string) *value {
	if v == nil || v.kind != kObject {
		return nil
	}
	if i, ok := v.index(key); ok {
		return v.items[i]
	}
	return nil
}

// index returns the position of key among an object's keys.
func (v *value) index(key string) (int, bool) {
	if v.at != nil {
		i, ok := v.at[key]
		return i, ok
	}
	for i, k := range v.keys {
		if k == key {
			return i, true
		}
	}
	return 0, false
}

// has reports whether an object has member key.
func (v *value) has(key string) bool { return v.get(key) != nil }

// str returns the member key if it is a string.
func (v *value) str(key string) (string, bool) {
	m := v.get(key)
	if m == nil || m.kind != kString {
		return "", false
	}
	return m.s, true
}

// isTrue reports whether member key is the JSON literal true.
func (v *value) isTrue(key string) bool {
	m := v.get(key)
	return m != nil && m.kind == kBool && m.b
}

// maxJSONDepth bounds nesting while decoding. encoding/json refuses more than
// 10000 levels itself; we stop well before so that every later recursive pass
// over a value is shallow.
const maxJSONDepth = 512

var errTooDeep = errors.New("JSON nested too deeply")

// decodeSchema turns a schema as callers hand it to us into a value. Raw JSON
// (json.RawMessage or []byte) keeps its key order; any other Go value goes
// through json.Marshal first, which sorts map keys, so output is deterministic
// either way. A nil schema, JSON null and empty raw input all mean "absent"
// and return (nil, nil).
func decodeSchema(schema any) (*value, error) {
	var raw []byte
	switch s := schema.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		raw = s
	case []byte:
		raw = s
	case *value:
		return s, nil
	default:
		b, err := json.Marshal(schema)
		if err != nil {
			return nil, err
		}
		raw = b
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, err
	}
	if v.kind == kNull {
		return nil, nil
	}
	return v, nil
}

// decodeJSON decodes exactly one JSON value with the token decoder, which
// (unlike Unmarshal into a map) reports object keys in document order. A
// repeated key keeps its last value at the position of its first occurrence,
// which is what encoding/json would have kept.
func decodeJSON(raw []byte) (*value, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, depth int) (*value, error) {
	if depth > maxJSONDepth {
		return nil, errTooDeep
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case nil:
		return &value{kind: kNull}, nil
	case bool:
		return &value{kind: kBool, b: t}, nil
	case json.Number:
		return &value{kind: kNumber, s: string(t)}, nil
	case string:
		return &value{kind: kString, s: t}, nil
	case json.Delim:
		switch t {
		case '[':
			v := &value{kind: kArray}
			for dec.More() {
				e, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				v.arr = append(v.arr, e)
			}
			_, err := dec.Token() // ']'
			return v, err
		case '{':
			v := &value{kind: kObject}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				e, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				if i, ok := v.index(k); ok {
					v.items[i] = e
					continue
				}
				v.keys = append(v.keys, k)
				v.items = append(v.items, e)
				if v.at != nil {
					v.at[k] = len(v.keys) - 1
				} else if len(v.keys) > indexKeys {
					v.at = make(map[string]int, 2*len(v.keys))
					for i, k := range v.keys {
						v.at[k] = i
					}
				}
			}
			_, err := dec.Token() // '}'
			return v, err
		}
	}
	return nil, errors.New("unexpected JSON token")
}

// appendJSON writes v as compact JSON, keys in document order. It is used
// for literals in doc comments and for fingerprints, so it must be total and
// deterministic.
func appendJSON(b *strings.Builder, v *value) {
	if v == nil {
		b.WriteString("null")
		return
	}
	switch v.kind {
	case kNull:
		b.WriteString("null")
	case kBool:
		b.WriteString(strconv.FormatBool(v.b))
	case kNumber:
		b.WriteString(v.s)
	case kString:
		b.WriteString(quote(v.s))
	case kArray:
		b.WriteByte('[')
		for i, e := range v.arr {
			if i > 0 {
				b.WriteByte(',')
			}
			appendJSON(b, e)
		}
		b.WriteByte(']')
	case kObject:
		b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(quote(k))
			b.WriteByte(':')
			appendJSON(b, v.items[i])
		}
		b.WriteByte('}')
	}
}

func jsonText(v *value) string {
	var b strings.Builder
	appendJSON(&b, v)
	return b.String()
}

// quote renders s as a double-quoted string that is both valid JSON and a
// valid JavaScript/TypeScript string literal: control characters, U+2028 and
// U+2029 are escaped, invalid UTF-8 becomes U+FFFD.
func quote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f || r == 0x2028 || r == 0x2029:
			b.WriteString(`\u`)
			h := strconv.FormatInt(int64(r), 16)
			b.WriteString(strings.Repeat("0", 4-len(h)))
			b.WriteString(h)
		default:
			b.WriteRune(r) // utf8.RuneError for invalid bytes: U+FFFD
		}
	}
	b.WriteByte('"')
	return b.String()
}
