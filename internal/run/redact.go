package run

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/codemode-mcp/codemode/internal/config"
)

// Redacted replaces a configured secret wherever it would reach the model.
const Redacted = "[REDACTED]"

// redactor removes the configured secrets (config.Server.Secrets) from
// text. Credentials stay server-side: an upstream that echoes its token in
// an error, a stderr tail quoting an API key, a tool like server-everything's
// get-env that returns its environment, none of them reach the model as
// they are. It is a last line of defence, not a guarantee: a script can
// still transform a secret (split it, base64 it) before returning it.
type redactor struct {
	r *strings.Replacer // nil when there is nothing to redact
	// forms are the texts r replaces (each secret as it is and as it
	// appears inside a JSON string), for a quick "does any occur" test.
	forms []string
}

func newRedactor(servers []config.Server) redactor {
	seen := map[string]bool{}
	var secrets []string
	for _, s := range servers {
		for _, v := range s.Secrets {
			// Also the forms the value takes inside a JSON string: Go's
			// (which escapes <, >, &, U+2028 and U+2029) and JavaScript's
			// JSON.stringify (which does not), as logs and results are
			// serialised in the sandbox.
			b, _ := json.Marshal(v)
			for _, form := range []string{v, string(b[1 : len(b)-1]), jsQuoted(v)} {
				if form != "" && !seen[form] {
					seen[form] = true
					secrets = append(secrets, form)
				}
			}
		}
	}
	if len(secrets) == 0 {
		return redactor{}
	}
	// Longest first, so that a secret containing another is replaced whole.
	sort.Slice(secrets, func(i, j int) bool { return len(secrets[i]) > len(secrets[j]) })
	var pairs []string
	for _, s := range secrets {
		pairs = append(pairs, s, Redacted)
	}
	return redactor{strings.NewReplacer(pairs...), secrets}
}

// jsQuoted is s as JSON.stringify writes it inside a string's quotes:
// only the quote, the backslash and control characters are escaped.
func jsQuoted(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	return b.String()
}

func (d redactor) String(s string) string {
	if d.r == nil {
		return s
	}
	return d.r.Replace(s)
}

// occursIn reports whether any secret (in either form) occurs in b.
func (d redactor) occursIn(b []byte) bool {
	for _, f := range d.forms {
		if bytes.Contains(b, []byte(f)) {
			return true
		}
	}
	return false
}

// response redacts every string of a response in place.
func (d redactor) response(resp *Response) {
	if d.r == nil {
		return
	}
	for i := range resp.Logs {
		resp.Logs[i].Message = d.String(resp.Logs[i].Message)
	}
	resp.Result = d.json(resp.Result)
	for i := range resp.Diagnostics {
		x := &resp.Diagnostics[i]
		x.Message, x.Hint, x.Path = d.String(x.Message), d.String(x.Hint), d.String(x.Path)
	}
	for i := range resp.ToolTrace {
		resp.ToolTrace[i].Error = d.String(resp.ToolTrace[i].Error)
	}
}

// json redacts a JSON value structurally, so that the result is still valid
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
// string keeps its escapes
// even where they put a secret's characters side by side in the text
// ("\u123456789012" holds "\u1234" then "56789012"). raw that is not valid
// JSON (never the case for a run's result) comes back as a JSON string of
// its redacted text, so that the response stays encodable.
func (d redactor) json(raw json.RawMessage) json.RawMessage {
	if d.r == nil || !d.occursIn(raw) {
		return raw
	}
	out, err := d.redactJSON(raw)
	if err != nil {
		return encodeString(nil, d.String(string(raw)))
	}
	return out
}

// frame is an open object or array while redactJSON walks its tokens.
type frame struct {
	object  bool
	wantKey bool            // objects: the next string is a key
	keys    map[string]bool // objects: the keys written so far
}

func (d redactor) redactJSON(raw []byte) ([]byte, error) {
	if !json.Valid(raw) {
		return nil, errors.New("invalid JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	out := make([]byte, 0, len(raw)+len(Redacted))
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
			k := d.String(s)
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
			if r := d.String(t); r != t {
				out = encodeString(out, r)
			} else {
				out = append(out, lit...)
			}
		case json.Number:
			if d.occursIn(lit) {
				out = encodeString(out, Redacted)
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
// json.Marshal (a result is not HTML).
func encodeString(dst []byte, s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	return append(dst, bytes.TrimSuffix(b.Bytes(), []byte("\n"))...)
}

// Redact removes configured secrets from text that leaves the gateway by
// another path than a run's response (status listings, say).
func (r *Runner) Redact(s string) string { return r.redact.String(s) }
