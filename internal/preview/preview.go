// Package preview cuts a JSON value to a size and keeps it JSON: the
// preview of a result too large for a response (the whole of it is kept
// elsewhere, and the note says where).
//
// Start with [JSON]. The preview keeps the value's shape from the top: an
// array keeps its first items and ends with a marker string saying how
// many items were cut; an object keeps its first keys and gets a marker
// key, [MarkerKey]; a string keeps its head and ends with a marker; a cut
// happens at the deepest level that does not fit, so that a single large
// item is itself previewed rather than dropped. Every marker carries the
// note (e.g. where the whole value can be read). The input is read item by
// item, never decoded whole, so previewing a large value costs about the
// size of its largest item.
package preview

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MarkerKey is the key added to an object whose remaining keys were cut.
const MarkerKey = "…(truncated)"

// minPartial is the least room worth previewing an item in rather than
// cutting before it.
const minPartial = 48

// JSON returns data (a JSON value) if it fits in max bytes, else a preview
// of it of at most max bytes that is valid JSON, and whether it cut
// anything. note is added to every marker. max below the size of a bare
// marker yields a marker string clipped to max (or "null" if even that
// does not fit). Invalid JSON yields a marker string.
func JSON(data []byte, limit int, note string) (json.RawMessage, bool) {
	data = bytes.TrimSpace(data)
	if len(data) <= limit {
		return data, false
	}
	out, err := cut(data, limit, note)
	if err != nil || len(out) > limit {
		return fallback(len(data), limit, note), true
	}
	return out, true
}

// fallback is a marker string alone.
func fallback(total, limit int, note string) json.RawMessage {
	s := fmt.Sprintf("… %d bytes of JSON not shown%s", total, withNote(note))
	for len(s) > 0 {
		b, _ := json.Marshal(s)
		if len(b) <= limit {
			return b
		}
		s = s[:len(s)-1]
		for len(s) > 0 && !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	if limit >= 4 {
		return json.RawMessage("null")
	}
	return json.RawMessage{}
}

func withNote(note string) string {
	if note == "" {
		return ""
	}
	return "; " + note
}

// cut previews data in at most limit bytes.
func cut(data []byte, limit int, note string) ([]byte, error) {
	if len(data) <= limit {
		return data, nil
	}
	switch data[0] {
	case '[':
		return cutArray(data, limit, note)
	case '{':
		return cutObject(data, limit, note)
	case '"':
		return cutString(data, limit, note)
	}
	return fallback(len(data), limit, note), nil
}

// countWidth is room kept for the digits of a count of what was cut
// from data: there are fewer items than bytes.
func countWidth(data []byte) int { return len(strconv.Itoa(len(data))) }

func itemsMarker(n int, note string) string {
	return fmt.Sprintf("… %d more item(s) not shown%s", n, withNote(note))
}

func cutArray(data []byte, limit int, note string) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	reserve := func() int { // a separator, the marker and the closing bracket
		b, _ := json.Marshal(itemsMarker(0, note))
		return 1 + len(b) + countWidth(data) + 1
	}()
	out := []byte{'['}
	n := 0
	for dec.More() {
		var item json.RawMessage
		if err := dec.Decode(&item); err != nil {
			return nil, err
		}
		sep := 0
		if n > 0 {
			sep = 1
		}
		room := limit - len(out) - sep - reserve
		if !dec.More() {
			room = limit - len(out) - sep - 1 // the last item needs no marker after it
		}
		if len(item) <= room {
			if sep > 0 {
				out = append(out, ',')
			}
			out = append(out, item...)
			n++
			continue
		}
		// This item does not fit: preview it if there is room, then
		// count the rest.
		rest := 1
		if room >= minPartial && (item[0] == '[' || item[0] == '{' || item[0] == '"') {
			if p, err := cut(item, room, note); err == nil && len(p) <= room {
				if sep > 0 {
					out = append(out, ',')
				}
				out = append(out, p...)
				n++
				rest = 0
			}
		}
		for dec.More() {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, err
			}
			rest++
		}
		if rest > 0 {
			m, _ := json.Marshal(itemsMarker(rest, note))
			if n > 0 {
				out = append(out, ',')
			}
			out = append(out, m...)
		}
		break
	}
	return append(out, ']'), nil
}

func keysMarker(n int, note string) string {
	return fmt.Sprintf("%d more key(s) not shown%s", n, withNote(note))
}

func cutObject(data []byte, limit int, note string) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	markerKey, _ := json.Marshal(MarkerKey)
	reserve := func() int { // a separator, the marker pair and the closing brace
		b, _ := json.Marshal(keysMarker(0, note))
		return 1 + len(markerKey) + 1 + len(b) + countWidth(data) + 1
	}()
	out := []byte{'{'}
	n := 0
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := json.Marshal(tok.(string))
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, err
		}
		sep := 0
		if n > 0 {
			sep = 1
		}
		room := limit - len(out) - sep - len(key) - 1 - reserve
		if !dec.More() {
			room = limit - len(out) - sep - len(key) - 1 - 1 // the last key needs no marker after it
		}
		if len(val) <= room {
			if sep > 0 {
				out = append(out, ',')
			}
			out = append(append(append(out, key...), ':'), val...)
			n++
			continue
		}
		rest := 1
		if room >= minPartial && (val[0] == '[' || val[0] == '{' || val[0] == '"') {
			if p, err := cut(val, room, note); err == nil && len(p) <= room {
				if sep > 0 {
					out = append(out, ',')
				}
				out = append(append(append(out, key...), ':'), p...)
				n++
				rest = 0
			}
		}
		for dec.More() {
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, err
			}
			rest++
		}
		if rest > 0 {
			m, _ := json.Marshal(keysMarker(rest, note))
			if n > 0 {
				out = append(out, ',')
			}
			out = append(append(append(out, markerKey...), ':'), m...)
		}
		break
	}
	return append(out, '}'), nil
}

func cutString(data []byte, limit int, note string) ([]byte, error) {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, err
	}
	marker := func(n int) string { return fmt.Sprintf("… [%d more bytes not shown%s]", n, withNote(note)) }
	// The largest head whose encoding (escapes make it longer) fits,
	// by bisection.
	encode := func(head int) []byte {
		for head > 0 && head < len(s) && !utf8.RuneStart(s[head]) {
			head--
		}
		b, _ := marshalNoEscape(s[:head] + marker(len(s)-head))
		return b
	}
	lo, hi := 0, min(len(s), limit)
	if b := encode(0); len(b) > limit {
		return fallback(len(data), limit, note), nil
	}
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if len(encode(mid)) <= limit {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return encode(lo), nil
}

// marshalNoEscape encodes a string without HTML escapes, as the serving
// layer writes its answers.
func marshalNoEscape(s string) ([]byte, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return []byte(strings.TrimSuffix(b.String(), "\n")), nil
}
