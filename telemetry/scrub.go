package telemetry

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// scrubbers find credentials in free text: log messages, error strings,
// string arguments. They run in order; the specific ones come before the
// generic key=value one so a bearer token loses its value even when it is
// not behind a secret-looking key. Each has hints, lower-case substrings
// one of which any match contains, so that text without them (nearly all
// of it) costs a few substring searches instead of a regexp run.
// Compiled once; never changed.
var scrubbers = []struct {
	hints []string
	re    *regexp.Regexp
	repl  string
	// fn, if set, replaces the matches of re itself.
	fn func(s string, re *regexp.Regexp) string
}{
	// PEM private keys and armored PGP ones (PRIVATE KEY BLOCK), also cut
	// off ones.
	{[]string{"private key-----", "private key block-----"},
		regexp.MustCompile(`-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|$)`), "[REDACTED PRIVATE KEY]", nil},
	// HTTP authorization schemes.
	// The space may come percent-encoded (Bearer%20…), in a URL or form,
	// and then the token's + / = too.
	{[]string{"bearer"}, regexp.MustCompile(`(?i)\b(bearer)(?:\s+|%20)(?:[A-Za-z0-9\-._~+/]|%[0-9A-Fa-f]{2}){8,}=*`), "$1 " + Redacted, nil},
	{[]string{"basic"}, regexp.MustCompile(`(?i)\b(basic)\s+[A-Za-z0-9+/]{12,}={0,2}`), "$1 " + Redacted, nil},
	// Digest's response, a hash of the password, the nonce and the
	// request: with the realm and nonce beside it, a password guessed
	// offline, and the request replayed while the nonce holds.
	{[]string{"digest"}, regexp.MustCompile(`(?i)(\bdigest\b[^\n]*?\bresponse\s*=\s*(?:\\*["'])?)[0-9a-f]{16,128}`), "${1}" + Redacted, nil},
	// JSON web tokens.
	{[]string{"eyj"}, regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]*`), Redacted, nil},
	// AWS access key ids.
	{[]string{"akia", "asia", "agpa", "aida", "aroa", "aipa", "anpa", "anva", "abia", "acca"},
		regexp.MustCompile(`\b(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA)[A-Z0-9]{16}\b`), Redacted, nil},
	// Provider API keys: OpenAI and Anthropic sk-…, Stripe, GitHub, Slack,
	// Google.
	{[]string{"sk-"}, regexp.MustCompile(`\bsk-[A-Za-z0-9_\-]{16,}`), Redacted, nil},
	{[]string{"k_live_", "k_test_"}, regexp.MustCompile(`\b[rsp]k_(?:live|test)_[A-Za-z0-9]{16,}`), Redacted, nil},
	{[]string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}, regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})`), Redacted, nil},
	{[]string{"xox"}, regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}`), Redacted, nil},
	{[]string{"aiza"}, regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{35}`), Redacted, nil},
	// GitLab, Hugging Face, npm, Google OAuth access tokens, SendGrid,
	// Stripe webhook secrets; Slack's webhook URLs, whose path is the key.
	{[]string{"glpat-"}, regexp.MustCompile(`\bglpat-[A-Za-z0-9_\-]{20,}`), Redacted, nil},
	{[]string{"hf_"}, regexp.MustCompile(`\bhf_[A-Za-z0-9]{30,}`), Redacted, nil},
	{[]string{"npm_"}, regexp.MustCompile(`\bnpm_[A-Za-z0-9]{30,}`), Redacted, nil},
	{[]string{"ya29."}, regexp.MustCompile(`\bya29\.[A-Za-z0-9_\-]{20,}`), Redacted, nil},
	{[]string{"sg."}, regexp.MustCompile(`\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}`), Redacted, nil},
	{[]string{"whsec_"}, regexp.MustCompile(`\bwhsec_[A-Za-z0-9]{20,}`), Redacted, nil},
	// Telegram's bot API and Discord's webhooks, whose path is the token.
	{[]string{"api.telegram.org/"}, regexp.MustCompile(`(?i)(api\.telegram\.org/(?:file/)?bot)[0-9]+:[A-Za-z0-9_\-]+`), "${1}" + Redacted, nil},
	{[]string{"/api/webhooks/"}, regexp.MustCompile(`(?i)(\bdiscord(?:app)?\.com/api/webhooks/[0-9]+/)[A-Za-z0-9_\-]+`), "${1}" + Redacted, nil},
	{[]string{"hooks.slack.com/"}, regexp.MustCompile(`(?i)(hooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9/_\-]+`), "${1}" + Redacted, nil},
	// Microsoft Teams' incoming webhooks (Office 365 connectors), whose
	// path is the key; their successors, Power Automate workflow URLs,
	// carry theirs in ?sig=, which the query scrubber below takes.
	{[]string{"webhook.office.com/"}, regexp.MustCompile(`(?i)(\.webhook\.office\.com/webhookb2/)[A-Za-z0-9@/_\-]+`), "${1}" + Redacted, nil},
	// DigitalOcean tokens and age secret keys.
	{[]string{"dop_v1_", "doo_v1_", "dor_v1_"}, regexp.MustCompile(`\bdo[por]_v1_[a-f0-9]{64}\b`), Redacted, nil},
	{[]string{"age-secret-key-"}, regexp.MustCompile(`\bAGE-SECRET-KEY-1[0-9A-Z]{20,}`), Redacted, nil},
	// Passwords on a command line behind an option that is a password
	// only for these commands: the MySQL clients' -pPASSWORD (glued to
	// it; -p alone prompts, -P is the port) and sshpass -p PASSWORD.
	{[]string{"mysql", "mariadb"}, regexp.MustCompile(`((?i:\b(?:mysql|mariadb)[a-z-]*)[^\n;|&]*?\s-p)` + cmdValue), "${1}" + Redacted, nil},
	{[]string{"sshpass"}, regexp.MustCompile(`(\bsshpass\s+-p\s*)` + cmdValue), "${1}" + Redacted, nil},
	// An Azure Storage connection string's AccountKey (the key=value
	// scrubber below knows api, access and private keys).
	{[]string{"accountkey", "account_key", "account-key", "account.key"},
		regexp.MustCompile(`(?i)(account[_\-.]?key(?:\\*["'])?\s*[:=]\s*(?:\\*["'])?)([^\s"';&,\\]+)`), "${1}" + Redacted, nil},
	// Passwords in URLs: scheme://user:password@host.
	{[]string{"://"}, regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.\-]*://[^/\s:@]*):[^@\s/]+@`), "$1:" + Redacted + "@", nil},
	// A JSON array (or a Python list) under a secret-looking key: each
	// string in it, not only the first, which the scrubbers below take.
	{secretArrayHints, secretArray, "", scrubArrays},
	// The same with a quoted value, to its closing quote: a password may
	// hold spaces or commas ("correct horse battery staple").
	{[]string{"password", "passwd", "passphrase", "secret", "token", "apikey", "api_key", "api-key", "api.key", "accesskey", "access_key",
		"access-key", "access.key", "privatekey", "private_key", "private-key", "private.key", "authorization", "cookie", "credential"},
		regexp.MustCompile(`(?i)((?:password|passwd|passphrase|secret|token|api[_\-.]?key|access[_\-.]?key|private[_\-.]?key|authorization|cookie|credential)[A-Za-z0-9_\-.]*["']?\s*` + separator + `\s*\[?\s*)(?:"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')`), "${1}\"" + Redacted + "\"", nil},
	// The same inside JSON text nested in a string, where the quotes are
	// escaped (password\":\"…\"): the value runs to its escaped closing
	// quote, spaces and punctuation included.
	{[]string{"password", "passwd", "passphrase", "secret", "token", "apikey", "api_key", "api-key", "api.key", "accesskey", "access_key",
		"access-key", "access.key", "privatekey", "private_key", "private-key", "private.key", "authorization", "cookie", "credential"},
		escapedValue, "", scrubEscaped},
	// An Authorization header written out in text, of a scheme without a
	// scrubber of its own ("token", "Token", "Bot", "SSWS", "ApiKey"…):
	// the credential follows the scheme, which the key=value scrubber
	// below takes for the whole value.
	{[]string{"authorization"},
		regexp.MustCompile(`(?i)\b((?:proxy-)?authorization(?:\\*["'])?\s*[:=]\s*(?:\\*["'])?[A-Za-z][A-Za-z0-9!#$%*+.^_|~-]*[ \t]+)((?:[^\s"'&,;}\\]|\\[^"'\\])+)`), "${1}" + Redacted, nil},
	// Credentials a command line passes as options, after a space rather
	// than = or a colon: --token VALUE, --client-secret "VALUE", and
	// curl's -u/--user USER:PASSWORD.
	{[]string{"password", "passwd", "passphrase", "secret", "token", "apikey", "api_key", "api-key", "api.key", "accesskey", "access_key",
		"access-key", "access.key", "privatekey", "private_key", "private-key", "private.key", "credential"},
		regexp.MustCompile(`(?i)((?:^|\s)--?([a-z0-9_.\-]*(?:password|passwd|passphrase|secret|token|api[_\-.]?key|access[_\-.]?key|private[_\-.]?key|credential)[a-z0-9_.\-]*)[ \t]+)("[^"\n]*"?|'[^'\n]*'?|[^\s"']+)`), "", scrubOptions},
	{[]string{"-u", "--user"}, regexp.MustCompile(`((?:^|\s)(?:-u|--user)(?:[ \t]+|=)?["']?[^\s:"'/]*:)([^\s"'@]+)`), "${1}" + Redacted, nil},
	// key=value, key: value and "key": "value" where the key looks secret.
	{[]string{"password", "passwd", "passphrase", "secret", "token", "apikey", "api_key", "api-key", "api.key", "accesskey", "access_key",
		"access-key", "access.key", "privatekey", "private_key", "private-key", "private.key", "authorization", "cookie", "credential"},
		// Quotes may come escaped, as in JSON text inside a JSON string
		// (password\":\"…\"), or percent-encoded, as in JSON in a URL's
		// query (%22password%22%3A%22…); a backslash not before a quote
		// is part of the value.
		regexp.MustCompile(`(?i)((?:password|passwd|passphrase|secret|token|api[_\-.]?key|access[_\-.]?key|private[_\-.]?key|authorization|cookie|credential)[A-Za-z0-9_\-.]*(?:\\*["']|%2[27])?\s*` + separator + `\s*(?:\[\s*\\*["']|(?:\\*["']|%2[27])?))((?:[^\s"'&,;}\\]|\\[^"'\\])+)`), "${1}" + Redacted, nil},
	// key=value, key: value and "key": "value" where the key is
	// "password" in another language (Passwort=…, mot de passe : …,
	// contraseña: "…", пароль=…, 密码：…), as JSON arguments' keys are
	// (secretWords): a quoted value to its closing quote, else to the
	// first space or punctuation.
	{foreignPasswordHints, regexp.MustCompile(`(?i)(` + foreignPasswordKey + `["']?\s*` + foreignSeparator + `\s*)(?:"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')`), "${1}\"" + Redacted + "\"", nil},
	{foreignPasswordHints, regexp.MustCompile(`(?i)(` + foreignPasswordKey + `(?:\\*["'])?\s*` + foreignSeparator + `\s*(?:\\*["'])?)((?:[^\s"'&,;}\\，。、]|\\[^"'\\])+)`), "${1}" + Redacted, nil},
	// Signatures and keys in a URL's query string (presigned and SAS
	// URLs, ?key= API keys), whose names are too short to be secret
	// words elsewhere.
	{[]string{"sig=", "signature=", "key=", "auth=", "pwd=", "pass=", "otp=", "credential="},
		regexp.MustCompile(`(?i)([?&;](?:sig|signature|key|auth|pwd|pass|otp|x-amz-signature|x-amz-credential|x-goog-signature|x-goog-credential)=)[^&#\s"']+`), "${1}" + Redacted, nil},
}

// cmdValue is an option's value on a command line: a word and its quoted
// parts, as the shell takes them (-p'correct horse', -p”x); a
// single-quoted part cut off runs to the line's end or a double quote. A
// double quote may end the JSON string the command line is in
// ({"cmd":"mysql -p","db":"shop"}): a double-quoted part is taken only if
// it closes before JSON's punctuation.
const cmdValue = `(?:'[^'\n"]*'?|"[^"\n,:{}\[\]]+"|[^\s"']+)+`

// separator is what the key=value scrubbers take between a secret-looking
// key and its value: = and a colon, Ruby's hash arrow (password=>"…" in
// an inspected hash), and = and a colon percent-encoded (access_token%3D…
// in a URL carried inside another's query, as an OAuth redirect_uri is).
const separator = `(?:=>|[:=]|%3[AaDd])`

// foreignPasswordKey is "password" in the languages secretWords names it
// in, and what may follow it in a key (db_passwort_2, hasłem); "senha"
// and "losenord" not after a letter (resenha is a review, closeNordic a
// region), unless they start a camelCase word (userSenha, dbLosenord), as
// an argument's key is secret (foreignBefore; TestForeignPasswordFreeTextAsKeys). The ASCII spellings of
// hasło and passord begin camelCase names (hasLoaded, passOrderId): a
// letter may not follow them (passordet aside), only what a key appends
// after a digit or separator (haslo_db, passord2), or written in lower
// case (or capitalized) a camelCase word (passordHash, hasloDb). Turkish writes ŞİFRE
// in upper case, with a dotted İ that (?i) does not fold to i. A letter
// outside ASCII may be a \u escape (jsonEscapable): Python's json.dumps
// writes {"hasło": …} as {"has\u0142o": …}, and before, such a key's
// value was kept (TestAttackScrubForeignPasswordKeyEscaped).
var foreignPasswordKey = jsonEscapable(`(?:(?:passwort|kennwort|mot[_\-. ]?de[_\-. ]?passe|contrase(?:ñ|n)a|(?:(?:^|[^\pL])s|(?-i:\p{Ll}S))enha|wachtwoord|salasana|(?:(?:^|[^\pL])l|(?-i:\p{Ll}L))(?:ö|o)senord|adgangskode|jelsz(?:ó|o)|hasł|(?:ş|s)(?:i|İ)fre|пароль|密码|密碼|パスワード|비밀번호|geheimnis)` + keyRest + `*|(?:haslo|passord(?:et)?)(?:[\pN_\-.]` + keyRest + `*)?|(?-i:[hH]aslo|[pP]assord(?:et)?)(?-i:\p{Lu})` + keyRest + `*)`)

// keyRest is a character of the rest of a key: a letter, a digit, a
// separator, or a letter's \u escape.
const keyRest = `(?:[\pL\pN_\-.]|\\+u[0-9a-fA-F]{4})`

// jsonEscapable returns re, a regular expression's source in which every
// character outside ASCII stands for itself (none in a class), with each
// such character matching its \u escapes too, in either case, behind
// one or more backslashes (JSON text in a JSON string), as JSON writers
// that escape all but ASCII spell it.
func jsonEscapable(re string) string {
	var b strings.Builder
	for _, r := range re {
		if r < utf8.RuneSelf {
			b.WriteRune(r)
			continue
		}
		var hex []string
		for f := r; ; {
			if f >= utf8.RuneSelf && f <= 0xFFFF {
				hex = append(hex, fmt.Sprintf("%04x", f))
			}
			if f = unicode.SimpleFold(f); f == r {
				break
			}
		}
		if u := unicode.ToUpper(r); u != r && u >= utf8.RuneSelf && !slices.Contains(hex, fmt.Sprintf("%04x", u)) {
			hex = append(hex, fmt.Sprintf("%04x", u))
		}
		fmt.Fprintf(&b, `(?:%c|\\+u(?:%s))`, r, strings.Join(hex, "|"))
	}
	return b.String()
}

// foreignSeparator is separator and the full-width colon and equals sign
// Chinese and Japanese text writes (密码：…).
const foreignSeparator = `(?:=>|[:=：＝]|%3[AaDd])`

// foreignPasswordHints are the scrubbers' hints for foreignPasswordKey.
var foreignPasswordHints = []string{`\u`, "passwort", "kennwort", "passe", "contrase", "senha", "wachtwoord", "salasana", "senord",
	"adgangskode", "passord", "jelsz", "hasł", "haslo", "şifre", "sifre", "пароль", "密码", "密碼", "パスワード", "비밀번호", "geheimnis"}

// escapedValue finds a secret-looking key in JSON text nested in a string,
// where its quotes are escaped (password\":\"…): group 1 is the run of
// backslashes before the value's opening quote.
var escapedValue = regexp.MustCompile(`(?i)(?:password|passwd|passphrase|secret|token|api[_\-.]?key|access[_\-.]?key|private[_\-.]?key|authorization|cookie|credential)[A-Za-z0-9_\-.]*\\+["']\s*[:=]\s*(\\+)["']`)

// secretArray finds a secret-looking key and the opening bracket of its
// array: group 1 is the run of backslashes before the key's closing
// quote, how deep the JSON is escaped ("tokens":[…] none,
// \"tokens\":[…] one).
var secretArray = regexp.MustCompile(`(?i)(?:password|passwd|passphrase|secret|token|api[_\-.]?key|access[_\-.]?key|private[_\-.]?key|authorization|cookie|credential)[A-Za-z0-9_\-.]*(?:(\\*)["'])?\s*` + separator + `\s*\[`)

// scrubArrays replaces each string in the arrays re (secretArray) finds
// with Redacted, to the array's closing bracket and in arrays and objects
// nested in it; an object's keys are kept. A string is delimited by
// quotes escaped as deep as the key's. An array in JSON escaped inside a
// string ends at a line's end if not before (escaped JSON has none in
// it); one not escaped runs across lines to its closing bracket, as
// indented JSON puts one element a line.
func scrubArrays(s string, re *regexp.Regexp) string {
	out, _, _ := scanArrays(s, re)
	return out
}

// secretArrayHints are secretArray's scrubber's hints.
var secretArrayHints = []string{"password", "passwd", "passphrase", "secret", "token", "apikey", "api_key", "api-key", "api.key", "accesskey", "access_key",
	"access-key", "access.key", "privatekey", "private_key", "private-key", "private.key", "authorization", "cookie", "credential"}

// scanArrays is scrubArrays, and says how many bytes it stepped over in
// all (each at most once, arrays nested in one scanned with it) and how
// many brackets deep in an unescaped array the last one found is at the
// end of s (0: closed).
func scanArrays(s string, re *regexp.Regexp) (out string, stepped, open int) {
	ms := re.FindAllStringSubmatchIndex(s, -1)
	if ms == nil {
		return s, 0, 0
	}
	var b strings.Builder
	last, scanned := 0, 0
	for _, m := range ms {
		if m[0] < scanned {
			continue // inside an array already scrubbed: each text once
		}
		n := 0 // backslashes before each quote
		if m[2] >= 0 {
			n = m[3] - m[2]
		}
		depth := 1
		i := m[1]
		for i < len(s) && depth > 0 && (n == 0 || s[i] != '\n') {
			k := 0
			for i+k < len(s) && s[i+k] == '\\' {
				k++
			}
			if k == n && i+k < len(s) && (s[i+k] == '"' || s[i+k] == '\'') {
				start := i + k + 1
				end := quotedEnd(s, start, n, s[i+k])
				if end > start && !isKey(s, end+n+1) {
					b.WriteString(s[last:start])
					b.WriteString(Redacted)
					last = end
				}
				if end == len(s) || s[end] == '\n' {
					i = end
					break // not closed: scrubbed to its end
				}
				i = end + n + 1
				continue
			}
			if k > 0 {
				i += k
				continue
			}
			switch s[i] {
			case '[', '{':
				depth++
			case ']', '}':
				depth--
			}
			i++
		}
		stepped += i - m[1]
		scanned = i
		open = 0
		if n == 0 && depth > 0 && i >= len(s) {
			open = depth
		}
	}
	b.WriteString(s[last:])
	return b.String(), stepped, open
}

// maxOpenArray bounds the depth SecretArrayDepth reports: text nested
// deeper is taken as that deep, still in the array.
const maxOpenArray = 64

// SecretArrayDepth returns how many brackets deep in a secret key's JSON
// array (as Scrub finds one) line ends, given open, how deep it starts
// (SecretArrayDepth of the line before; 0 for the first). ScrubLine
// scrubs a line with it.
func SecretArrayDepth(line string, open int) int {
	if open == 0 {
		if strings.IndexByte(line, '[') < 0 {
			return 0
		}
		lower := strings.ToLower(line)
		if !slices.ContainsFunc(secretArrayHints, func(h string) bool { return strings.Contains(lower, h) }) {
			return 0
		}
	}
	p := openArray(open)
	_, _, d := scanArrays(p+line, secretArray)
	return min(d, maxOpenArray)
}

// ScrubLine is Scrub of line, one line of text that comes a line at a
// time (a stdio server's stderr), which starts open brackets deep in a
// secret key's JSON array (SecretArrayDepth of the line before): Scrub
// scrubs the strings of such an array across lines, as indented JSON
// writes it an element a line, and so does ScrubLine the lines after the
// key's, which Scrub of each line alone kept
// (TestAttackStderrSecretArrayAcrossLines).
func ScrubLine(line string, open int) string {
	if open > 0 {
		p := openArray(open)
		out, _, _ := scanArrays(p+line, secretArray)
		line = out[len(p):]
	}
	return Scrub(line)
}

// openArray is text that opens a secret key's array open brackets deep,
// for secretArray to find, or "" for none.
func openArray(open int) string {
	if open <= 0 {
		return ""
	}
	return `"token":` + strings.Repeat("[", min(open, maxOpenArray))
}

// quotedEnd returns where the string from start, opened by quote behind n
// backslashes, ends: where the same quote behind n backslashes starts
// (with none, a quote behind an even run); len(s) or a line's end if it
// is not closed.
func quotedEnd(s string, start, n int, quote byte) int {
	for i := start; i < len(s) && s[i] != '\n'; {
		k := 0
		for i+k < len(s) && s[i+k] == '\\' {
			k++
		}
		if i+k < len(s) && s[i+k] == quote && (k == n || n == 0 && k%2 == 0) {
			return i + k - n
		}
		i += k + 1
	}
	return len(s)
}

// isKey reports whether a colon follows s[i:] past spaces: the string
// before i is an object's key.
func isKey(s string, i int) bool {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i < len(s) && s[i] == ':'
}

// scrubEscaped replaces the value after each match of re (escapedValue)
// with Redacted. The value runs to the quote that closes it at its own
// level of escaping: one behind exactly as many backslashes as the
// opening quote's. A quote inside the value is escaped once more (three
// backslashes where the delimiters have one), so it does not end it.
// scrubOptions redacts the value after each command-line option re finds
// whose name (its second group) names a credential (credentialOption):
// --max-tokens 100 and --token-limit 8000 name counts (notSecret), as the
// keys max_tokens and token_limit do, and --secret-id where one is, and
// keep their values. A quoted value (its third group) is redacted to its
// closing quote, the quotes kept: a passphrase of several words kept all
// but its first (TestAttackCommandLineQuotedCredential).
func scrubOptions(s string, re *regexp.Regexp) string {
	ms := re.FindAllStringSubmatchIndex(s, -1)
	var b strings.Builder
	last := 0
	for _, m := range ms {
		if !credentialOption(s[m[4]:m[5]], nil) {
			continue
		}
		if b.Len() == 0 {
			b.Grow(len(s))
		}
		b.WriteString(s[last:m[6]])
		v := s[m[6]:m[7]]
		if q := v[0]; q == '"' || q == '\'' {
			b.WriteByte(q)
			b.WriteString(Redacted)
			if len(v) > 1 && v[len(v)-1] == q {
				b.WriteByte(q)
			}
		} else {
			b.WriteString(Redacted)
		}
		last = m[7]
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

func scrubEscaped(s string, re *regexp.Regexp) string {
	ms := re.FindAllStringSubmatchIndex(s, -1)
	if ms == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range ms {
		if m[0] < last {
			continue // inside a value already replaced
		}
		n := m[3] - m[2] // backslashes before the opening quote
		start := m[1]
		end := start
		for end < len(s) && s[end] != '\n' {
			if s[end] != '\\' {
				end++
				continue
			}
			k := 0
			for end+k < len(s) && s[end+k] == '\\' {
				k++
			}
			if k == n && end+k < len(s) && (s[end+k] == '"' || s[end+k] == '\'') {
				break
			}
			end += k
		}
		if end == start {
			continue
		}
		b.WriteString(s[last:start])
		b.WriteString(Redacted)
		last = end
	}
	b.WriteString(s[last:])
	return b.String()
}

// Scrub returns s with anything that looks like a credential replaced:
// bearer and basic authorization values, JWTs, AWS access key ids, PEM
// private key blocks, sk-… and other provider API keys, passwords in
// URLs, and the values of secret-looking key=value pairs. It is meant for
// text that is about to be logged or recorded; it errs on the side of
// replacing too much.
func Scrub(s string) string {
	if len(s) < 8 { // shorter than any credential these patterns find
		return s
	}
	if !scrubHints.mayHold(s) {
		return s // no scrubber's hint: what the loop below would find
	}
	lower := strings.ToLower(s)
	for _, sc := range scrubbers {
		for _, h := range sc.hints {
			if strings.Contains(lower, h) {
				if sc.fn != nil {
					s = sc.fn(s, sc.re)
				} else {
					s = sc.re.ReplaceAllString(s, sc.repl)
				}
				lower = strings.ToLower(s)
				break
			}
		}
	}
	return s
}

// ScrubHandler wraps a slog.Handler so nothing credential-like reaches a
// log line: messages and string values are passed through [Scrub], and the
// values of attributes whose keys look secret ([IsSecretKey]) become
// [Redacted], in groups too. Errors and Stringers are logged as their
// scrubbed text. Each string is bounded first, as by [BoundHandler].
func ScrubHandler(h slog.Handler) slog.Handler { return scrubHandler{h, true} }

// BoundHandler wraps a slog.Handler so that no string of a log line
// (message, values, errors and Stringers, in groups too) is longer than
// [MaxRecordedText]: a longer one is logged as by [Bound]. A denied call
// is logged with its tool name and agent, which the agent chooses and may
// make as long as a request body: 4 MiB written to the log per call.
func BoundHandler(h slog.Handler) slog.Handler { return scrubHandler{h, false} }

// scrubHandler bounds every string, and scrubs it too if scrub is set.
type scrubHandler struct {
	h     slog.Handler
	scrub bool
}

var _ slog.Handler = scrubHandler{}

func (s scrubHandler) Enabled(ctx context.Context, l slog.Level) bool { return s.h.Enabled(ctx, l) }

func (s scrubHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, s.text(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(s.attr(a))
		return true
	})
	return s.h.Handle(ctx, out)
}

func (s scrubHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = s.attr(a)
	}
	return scrubHandler{s.h.WithAttrs(clean), s.scrub}
}

func (s scrubHandler) WithGroup(name string) slog.Handler {
	return scrubHandler{s.h.WithGroup(name), s.scrub}
}

// text is what a log line shows of t: bounded, then scrubbed if asked.
func (s scrubHandler) text(t string) string {
	t = Bound(t, MaxRecordedText)
	if s.scrub {
		t = Scrub(t)
	}
	return t
}

func (s scrubHandler) attr(a slog.Attr) slog.Attr {
	if s.scrub && IsSecretKey(a.Key) {
		return slog.String(a.Key, Redacted)
	}
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, s.text(v.String()))
	case slog.KindGroup:
		group := v.Group()
		clean := make([]slog.Attr, len(group))
		for i, g := range group {
			clean[i] = s.attr(g)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(clean...)}
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, s.text(x.Error()))
		case interface{ String() string }:
			return slog.String(a.Key, s.text(x.String()))
		case []byte:
			return slog.String(a.Key, s.text(string(x)))
		case map[string]any, []any:
			if s.scrub {
				return slog.Any(a.Key, Redactor{}.Redact(x))
			}
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// ScrubWriter returns a writer that scrubs each Write before passing it to
// w, for the standard log package and other line-at-a-time writers. A
// credential split across two Writes is not caught.
func ScrubWriter(w io.Writer) io.Writer { return scrubWriter{w} }

type scrubWriter struct{ w io.Writer }

func (s scrubWriter) Write(p []byte) (int, error) {
	clean := Scrub(string(p))
	if _, err := io.WriteString(s.w, clean); err != nil {
		return 0, err
	}
	return len(p), nil
}

// isSecretHeader reports whether an HTTP header's value must never
// appear in logs or events.
func isSecretHeader(name string) bool {
	switch strings.ToLower(name) {
	case "authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key", "x-auth-token":
		return true
	}
	return IsSecretKey(name)
}

// RedactHeaders returns a copy of h, HTTP headers as a map of name to
// values, with the values of credential headers replaced by [Redacted].
func RedactHeaders(h map[string][]string) map[string][]string {
	out := make(map[string][]string, len(h))
	for k, vs := range h {
		if isSecretHeader(k) {
			out[k] = []string{Redacted}
			continue
		}
		clean := make([]string, len(vs))
		for i, v := range vs {
			clean[i] = Scrub(v)
		}
		out[k] = clean
	}
	return out
}

// scrubHints finds, in one pass, whether text holds any scrubber's hint:
// nearly all text holds none and is returned as it is, where searching
// for each hint in turn (some forty) and lowering the text first cost
// most of what scrubbing an argument or a log line did.
var scrubHints = newFragments(func() (hs []string) {
	for _, sc := range scrubbers {
		hs = append(hs, sc.hints...)
	}
	return hs
}())

// fragments finds which of a set of lower-case ASCII strings, at least
// two bytes each, text contains, in one pass over it: they are held by
// their first two bytes.
type fragments struct {
	// pairs is, for the first two bytes of a fragment, 1 + the index in
	// byPair of those starting with them; 0 for none.
	pairs  [1 << 16]uint8
	byPair [][]string
}

func newFragments(words []string) *fragments {
	x := &fragments{}
	for _, w := range words {
		k := uint16(w[0])<<8 | uint16(w[1])
		if x.pairs[k] == 0 {
			x.byPair = append(x.byPair, nil)
			x.pairs[k] = uint8(len(x.byPair))
		}
		if i := x.pairs[k] - 1; !slices.Contains(x.byPair[i], w) {
			x.byPair[i] = append(x.byPair[i], w)
		}
	}
	return x
}

// asciiLower maps each byte to its lower case: ASCII letters only.
var asciiLower = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
		if 'A' <= i && i <= 'Z' {
			t[i] += 'a' - 'A'
		}
	}
	return t
}()

// mayHold reports whether strings.ToLower(s) may contain a fragment:
// true if it does, or if s is not all ASCII (lowering other text can
// make ASCII letters: U+212A KELVIN SIGN lowers to "k"), which the
// caller then searches as before.
func (x *fragments) mayHold(s string) bool { return x.find(s, true) }

// in reports whether s, which has no upper-case ASCII letters, contains
// a fragment: strings.Contains for each, in one pass.
func (x *fragments) in(s string) bool { return x.find(s, false) }

func (x *fragments) find(s string, stopNonASCII bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf && stopNonASCII {
			return true
		}
		if i+1 == len(s) {
			break
		}
		k := uint16(asciiLower[c])<<8 | uint16(asciiLower[s[i+1]])
		if j := x.pairs[k]; j != 0 {
			for _, w := range x.byPair[j-1] {
				if hasLowerPrefix(s[i:], w) {
					return true
				}
			}
		}
	}
	return false
}

// hasLowerPrefix reports whether s, lowered as ASCII, starts with w.
func hasLowerPrefix(s, w string) bool {
	if len(s) < len(w) {
		return false
	}
	for i := 0; i < len(w); i++ {
		if asciiLower[s[i]] != w[i] {
			return false
		}
	}
	return true
}
