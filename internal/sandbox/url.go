package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	whatwg "github.com/nlnwa/whatwg-url/url"
)

// urlParser is the WHATWG URL parser behind the sandbox's URL class. The
// parser holds no per-call state, so one serves every VM.
var urlParser = whatwg.NewParser()

// urlComponents is what the JavaScript URL class keeps: the parsed parts, as
// the WHATWG URL standard's getters return them.
type urlComponents struct {
	Href     string `json:"href"`
	Origin   string `json:"origin"`
	Protocol string `json:"protocol"`
	Username string `json:"username"`
	Password string `json:"password"`
	Host     string `json:"host"`
	Hostname string `json:"hostname"`
	Port     string `json:"port"`
	Pathname string `json:"pathname"`
	Search   string `json:"search"`
	Hash     string `json:"hash"`
}

// maxURLInput bounds what URL and URLSearchParams hand to the parser. The
// parsing runs in Go, outside the VM's memory limit and beyond the reach of
// its interrupt, and costs a multiple of its input: without a bound one
// call could take seconds and a gigabyte. Browsers refuse URLs past about
// 2 MB too.
const maxURLInput = 2 << 20

// urlOp serves the bootstrap's H.url(op, a, b, c). Only strings cross.
func urlOp(op, a, b, c string) (string, error) {
	if n := len(a) + len(b) + len(c); n > maxURLInput {
		return "", fmt.Errorf("URL input too long: %d bytes (URL and URLSearchParams accept at most %d)", n, maxURLInput)
	}
	switch op {
	case "parse":
		u, err := urlParser.Parse(a)
		if err != nil {
			return "", invalidURL(a)
		}
		return components(u), nil
	case "parseBase":
		u, err := urlParser.ParseRef(b, a)
		if err != nil {
			return "", invalidURL(a)
		}
		return components(u), nil
	case "set":
		u, err := urlParser.Parse(a)
		if err != nil {
			return "", invalidURL(a)
		}
		switch b {
		case "protocol":
			u.SetProtocol(c)
		case "username":
			u.SetUsername(c)
		case "password":
			u.SetPassword(c)
		case "host":
			u.SetHost(c)
		case "hostname":
			u.SetHostname(c)
		case "port":
			u.SetPort(c)
		case "pathname":
			u.SetPathname(c)
		case "search":
			u.SetSearch(c)
		case "hash":
			u.SetHash(c)
		}
		return components(u), nil
	case "formParse":
		out, _ := json.Marshal(formParse(a))
		return string(out), nil
	case "formSerialize":
		var pairs [][2]string
		if err := json.Unmarshal([]byte(a), &pairs); err != nil {
			return "", err
		}
		return formSerialize(pairs), nil
	}
	return "", errors.New("unknown URL operation " + op)
}

func invalidURL(s string) error {
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return errors.New("Invalid URL: " + s)
}

func components(u *whatwg.Url) string {
	c := urlComponents{
		Href:     u.Href(false),
		Protocol: u.Protocol(),
		Username: u.Username(),
		Password: u.Password(),
		Host:     u.Host(),
		Hostname: u.Hostname(),
		Port:     u.Port(),
		Pathname: u.Pathname(),
		Search:   u.Search(),
		Hash:     u.Hash(),
	}
	c.Origin = origin(u)
	out, _ := json.Marshal(c)
	return string(out)
}

// origin follows the URL standard: scheme://host[:port] for the special
// schemes that have one, "null" otherwise (including file:).
func origin(u *whatwg.Url) string {
	switch u.Scheme() {
	case "http", "https", "ws", "wss", "ftp":
		return u.Protocol() + "//" + u.Host()
	case "blob":
		if inner, err := urlParser.Parse(u.Pathname()); err == nil && (inner.Scheme() == "http" || inner.Scheme() == "https") {
			return origin(inner)
		}
	}
	return "null"
}

// formParse is the application/x-www-form-urlencoded parser of the URL
// standard: '&'-separated, first '=' splits, '+' is a space, percent
// sequences are bytes, invalid sequences stay as they are, and the bytes are
// decoded as UTF-8 with replacement.
func formParse(s string) [][2]string {
	out := [][2]string{}
	for _, seq := range strings.Split(s, "&") {
		if seq == "" {
			continue
		}
		name, value, _ := strings.Cut(seq, "=")
		out = append(out, [2]string{percentDecode(name), percentDecode(value)})
	}
	return out
}

func percentDecode(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '+':
			b = append(b, ' ')
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
		default:
			b = append(b, c)
		}
	}
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

// formSerialize is the standard's urlencoded serializer: alphanumerics and
// *-._ stay, space becomes '+', every other byte is %XX (upper case).
func formSerialize(pairs [][2]string) string {
	var b strings.Builder
	for i, p := range pairs {
		if i > 0 {
			b.WriteByte('&')
		}
		formEncode(&b, p[0])
		b.WriteByte('=')
		formEncode(&b, p[1])
	}
	return b.String()
}

func formEncode(b *strings.Builder, s string) {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '*' || c == '-' || c == '.' || c == '_':
			b.WriteByte(c)
		case c == ' ':
			b.WriteByte('+')
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
}
