package config

import (
	"net/url"
	"sort"
	"strings"
	"unicode"
)

// This file decides which configured values are secrets (Server.Secrets):
// values the gateway must never show the model. It errs on the side of
// redacting: a value wrongly taken for a secret is replaced by [REDACTED] in
// what the model sees, which costs little; a credential missed is a leak.
//
//   - Every header value (and the credential after "Bearer "), every value
//     that came from a ${VAR}.
//   - Env values whose name says they hold a credential (secretName):
//     *TOKEN*, *KEY*, *SECRET*, *PASSWORD*, *AUTH*, *CREDENTIAL*, *_PAT,
//     *_SK, *_DSN, *_PWD, *CONNECTION_STRING*, the cloud providers' key
//     names (AWS_SECRET_ACCESS_KEY, AZURE_CLIENT_SECRET, ...).
//   - In any URL written in the config (a remote server's url, an env
//     value, an argument: DATABASE_URL=postgres://user:pass@host/db), the
//     credentials: the password of user:password@ (or the user, when it is
//     a token alone; then the whole URL as well), query values named like
//     secrets or signatures (?api_key=, ?sig=, X-Amz-Signature=) or that
//     look like tokens, and path segments or host labels that look like
//     tokens (https://hooks.example/T0/B0/Xy12..., https://mcp.example/<token>/mcp).
//   - Env values and arguments that look like tokens (looksLikeToken): a
//     known prefix (ghp_, github_pat_, sk-, xoxb-, AKIA, AIza, eyJ...), a
//     UUID, or a run of 16+ letters and digits mixed; an argument after a
//     flag named like a secret (--api-key VALUE, --token=VALUE).

// secretWords are the words that make a name secret wherever they occur.
var secretWords = []string{"TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "PASS", "AUTH", "CREDENTIAL",
	"COOKIE", "SESSION", "PRIVATE", "SIGNATURE", "CONNECTIONSTRING", "CONNSTR", "WEBHOOK", "BEARER", "JWT"}

// secretParts are the words that make a name secret when they are a whole
// part of it (GITHUB_PAT, STRIPE_SK, SENTRY_DSN, MYSQL_PWD; not "PATH",
// "TASK" or "SKIP").
var secretParts = map[string]bool{"PAT": true, "SK": true, "DSN": true, "PWD": true, "PW": true, "SAS": true,
	"SIG": true, "HMAC": true, "SALT": true, "OTP": true, "PK": true, "APIKEY": true}

// SecretName reports whether the name of an environment variable, a query
// parameter or a command-line flag says it holds a credential.
func SecretName(name string) bool { return secretName(name) }

// MinSecretBytes is the shortest value taken for a secret: a shorter one
// ("1", "true", "dev") would redact ordinary text and protects nothing.
const MinSecretBytes = 8

func secretName(name string) bool {
	parts := nameParts(name)
	joined := strings.Join(parts, "")
	for _, w := range secretWords {
		if strings.Contains(joined, w) {
			return true
		}
	}
	for _, p := range parts {
		if secretParts[p] {
			return true
		}
	}
	return false
}

// nameParts splits a name at anything not a letter or digit and at
// camelCase boundaries, upper-cased: "X-Amz-Signature" → X AMZ SIGNATURE,
// "githubPat" → GITHUB PAT.
func nameParts(name string) []string {
	var parts []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			parts = append(parts, strings.ToUpper(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(name)
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush()
			continue
		}
		if i > 0 && unicode.IsLower(rs[i-1]) && unicode.IsUpper(r) {
			flush()
		}
		cur = append(cur, r)
	}
	flush()
	return parts
}

// tokenPrefixes start credentials of well-known services.
var tokenPrefixes = []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "gldt-", "sk-", "sk_live_", "sk_test_",
	"rk_live_", "rk_test_", "whsec_", "xoxb-", "xoxp-", "xoxa-", "xoxs-", "xoxe-", "xapp-", "AKIA", "ASIA", "AIza", "ya29.",
	"eyJ", "npm_", "pypi-", "hf_", "SG.", "shpat_", "shpss_", "dop_v1_", "glc_", "lin_api_", "ntn_", "secret_", "pat-"}

// looksLikeToken reports whether a value (or a part of a URL) has the shape
// of a credential: a known prefix, a UUID, or a run of at least 16 letters
// and digits, mixed (the "words" of base64 and hex tokens; "my-service-2024"
// is no token, its runs are short).
func looksLikeToken(s string) bool {
	if len(s) < 16 || strings.ContainsAny(s, " \t\r\n/\\") {
		return false
	}
	for _, p := range tokenPrefixes {
		if strings.HasPrefix(s, p) && len(s) >= len(p)+8 {
			return true
		}
	}
	if isUUID(s) {
		return true
	}
	for _, run := range strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune("-_.~:@", r) }) {
		if len(run) < 16 {
			continue
		}
		letters, digits, other := 0, 0, 0
		for _, c := range run {
			switch {
			case c >= '0' && c <= '9':
				digits++
			case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
				letters++
			case c == '+' || c == '=' || c == '%':
			default:
				other++
			}
		}
		if other == 0 && letters > 0 && digits > 0 {
			return true
		}
	}
	return false
}

func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// signatureParams name the query parameters of signed URLs (Azure SAS,
// S3 and GCS presigned URLs, CloudFront) that carry the credential even
// when their names say nothing of it.
var signatureParams = map[string]bool{"sig": true, "signature": true, "x-amz-signature": true, "x-amz-credential": true,
	"x-amz-security-token": true, "x-goog-signature": true, "x-goog-credential": true}

// urlSecrets returns the credentials written into a URL (raw, parsed as
// u), each as written and decoded (error texts may quote either): the
// password of user:password@ (or the user, when it is a token alone), and
// then the whole URL too; query values named like secrets or signatures, or
// shaped like tokens (?api_key=..., ?sig=...; not ?version=2025-06-18);
// path segments and host labels shaped like tokens.
func urlSecrets(raw string, u *url.URL) []string {
	var out []string
	both := func(raw string, unescape func(string) (string, error)) {
		out = append(out, raw)
		if v, err := unescape(raw); err == nil {
			out = append(out, v)
		}
	}
	if u.User != nil {
		// As written: u.User re-encodes what it decoded, differently.
		info := u.User.String()
		if _, rest, ok := strings.Cut(raw, "://"); ok {
			if end := strings.IndexAny(rest, "/?#"); end >= 0 {
				rest = rest[:end]
			}
			if at := strings.LastIndex(rest, "@"); at >= 0 {
				info = rest[:at]
			}
		}
		user, pass, hasPass := strings.Cut(info, ":")
		if hasPass {
			both(pass, url.PathUnescape)
		} else {
			both(user, url.PathUnescape)
		}
		out = append(out, raw)
	}
	for _, label := range strings.Split(u.Hostname(), ".") {
		if looksLikeToken(label) {
			out = append(out, label)
		}
	}
	for _, seg := range strings.Split(u.EscapedPath(), "/") {
		if v, err := url.PathUnescape(seg); err == nil && looksLikeToken(v) || looksLikeToken(seg) {
			both(seg, url.PathUnescape)
		}
	}
	for _, kv := range strings.Split(u.RawQuery, "&") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		name, err := url.QueryUnescape(k)
		if err != nil {
			name = k
		}
		dv, err := url.QueryUnescape(v)
		if err != nil {
			dv = v
		}
		if secretName(name) || signatureParams[strings.ToLower(name)] || looksLikeToken(dv) {
			both(v, url.QueryUnescape)
		}
	}
	return out
}

// valueSecrets returns what a value written in the config (an env value or
// an argument) holds that is secret by its shape: the credentials of a URL
// in it, or the value itself when it looks like a token.
func valueSecrets(v string) []string {
	var out []string
	if looksLikeToken(v) {
		out = append(out, v)
	}
	// A URL, whole or after a flag's "=" (--db=postgres://u:p@h/db).
	s := v
	if i := strings.Index(s, "://"); i > 0 {
		start := strings.LastIndexAny(s[:i], "= \t'\"") + 1
		s = s[start:]
		if u, err := url.Parse(s); err == nil && u.Host != "" {
			out = append(out, urlSecrets(s, u)...)
		}
	}
	return out
}

// argSecrets returns the secrets of a stdio server's arguments: the value
// of a flag named like a secret (--api-key VALUE, --token=VALUE) and what
// valueSecrets finds in each.
func argSecrets(args []string) []string {
	var out []string
	for i, a := range args {
		out = append(out, valueSecrets(a)...)
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !secretName(name) {
			continue
		}
		switch {
		case hasVal:
			out = append(out, val)
		case i+1 < len(args) && !strings.HasPrefix(args[i+1], "-"):
			out = append(out, args[i+1])
		}
	}
	return out
}

// secrets keeps the values long enough to be worth redacting
// (MinSecretBytes), sorted and without duplicates.
func secrets(vals []string) []string {
	var out []string
	for _, v := range vals {
		if len(strings.TrimSpace(v)) >= MinSecretBytes {
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return dedupe(out)
}
