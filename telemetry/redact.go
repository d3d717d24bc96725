package telemetry

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Redacted replaces every value that must not be stored or logged.
const Redacted = "[REDACTED]"

// secretWords are the normalized (lower case, no separators) fragments
// that make a key secret when the key contains one.
var secretWords = []string{
	"password", "passwd", "passphrase", "secret", "token", "apikey",
	"authorization", "cookie", "privatekey", "credential", "accesskey",
	"sessionkey", "signingkey", "encryptionkey", "bearer", "jwt",
	"authkey", "sshkey", "licensekey", "basicauth", "signature", "pincode", "accountkey",
	"mnemonic", "seedphrase", "subscriptionkey", "privkey", "pgpkey", "gpgkey",
	// "password" in other languages, as keys are named in forms and
	// configs written in them (Passwort, mot_de_passe, contraseña, senha,
	// пароль, 密码 …); "secret" in German. Those that are parts of
	// ordinary names once separators are gone are foreignAfter's and
	// foreignBefore's.
	"passwort", "kennwort", "motdepasse", "contrasena", "contraseña", "wachtwoord",
	"salasana", "lösenord", "adgangskode", "jelszo", "jelszó", "hasło",
	"şifre", "пароль", "密码", "密碼", "パスワード", "비밀번호", "geheimnis",
}

// secretFragments finds secretWords in a normalized key in one pass.
var secretFragments = newFragments(secretWords)

// secretSuffixes make a key secret when it ends with one: dbPass, db_pwd,
// mfa_otp (as fragments they would catch "compass" or "footprint").
var secretSuffixes = []string{"pwd", "pass", "otp"}

// secretKeys are normalized keys that are secret only when they are the
// whole key: as fragments they would catch too much ("author", "keyword").
var secretKeys = []string{"pwd", "pass", "auth", "key", "sig", "signature", "otp", "pin", "cvv", "ssn", "xapikey", "xauthtoken",
	"parola", "clave", "heslo", "sifre", "geheim"}

// foreignAfter and foreignBefore are ASCII spellings of "password" (Norwegian
// passord, Polish hasło, Portuguese senha, Swedish lösenord) that are
// parts of ordinary names once a key's separators are gone (passOrderId,
// bypassOrder, hasLoaded, chosenHash, closeNordic). They are looked for
// in the key as written, as Scrub does (foreignPasswordKey): no letter
// may follow foreignAfter's (passord2, db_haslo, haslo_db) but one
// starting a camelCase word after one written without capitals inside
// (passordHash, hasloDb; not hasLoaded), and no letter
// may come before foreignBefore's, unless they start a camelCase word
// (user_senha, userSenha; not resenha).
var (
	foreignAfter  = []string{"passordet", "passord", "haslo"}
	foreignBefore = []string{"senha", "losenord"}
)

// foreignPassword reports whether k, a key as written, names a password
// in one of foreignAfter's or foreignBefore's words; n is k normalized.
func foreignPassword(k, n string) bool {
	if !strings.Contains(n, "passord") && !strings.Contains(n, "haslo") &&
		!strings.Contains(n, "senha") && !strings.Contains(n, "losenord") {
		return false
	}
	for i := 0; i < len(k); i++ {
		for _, w := range foreignAfter {
			if j := i + len(w); j <= len(k) && strings.EqualFold(k[i:j], w) {
				r, _ := utf8.DecodeRuneInString(k[j:])
				if j == len(k) || !unicode.IsLetter(r) || unicode.IsUpper(r) && !hasUpper(k[i+1:j]) {
					// Its end, or a camelCase word after it (passordHash,
					// hasloDb), not inside it (hasLoaded, passOrderId).
					return true
				}
			}
		}
		for _, w := range foreignBefore {
			if j := i + len(w); j <= len(k) && strings.EqualFold(k[i:j], w) {
				r, _ := utf8.DecodeLastRuneInString(k[:i])
				if i == 0 || !unicode.IsLetter(r) || (unicode.IsLower(r) && k[i] >= 'A' && k[i] <= 'Z') {
					return true
				}
			}
		}
	}
	return false
}

// hasUpper reports whether s has an upper-case letter.
func hasUpper(s string) bool { return strings.IndexFunc(s, unicode.IsUpper) >= 0 }

// notSecret are normalized keys that contain a secret word but name counts
// or limits, not credentials.
var notSecret = []string{"maxtokens", "maxoutputtokens", "maxcompletiontokens", "tokencount", "tokens", "inputtokens", "outputtokens", "totaltokens", "tokenlimit"}

// tokenCount reports whether n, a normalized key, names a count of
// tokens or a tokenizer, with no other secret word in it: max_new_tokens,
// --max-num-batched-tokens, min_tokens, --tokenizer, tokenization. Their
// values are limits and names an audit record is read for
// (TestTokenCountsAndTokenizersKept).
func tokenCount(n string) bool {
	var rest string
	switch {
	case len(n) >= len("maxtokens") && strings.HasSuffix(n, "tokens") &&
		(strings.HasPrefix(n, "max") || strings.HasPrefix(n, "min") || strings.HasPrefix(n, "num")):
		rest = n[3 : len(n)-len("tokens")]
	case strings.HasPrefix(n, "tokeniz"):
		rest = n[len("tokeniz"):]
	default:
		return false
	}
	if secretFragments.in(rest) {
		return false
	}
	for _, w := range secretSuffixes {
		if strings.HasSuffix(n, w) {
			return false
		}
	}
	return true
}

// normalizeKey lowers k (ПАРОЛЬ and ŞİFRE too) and drops the separators people put between the
// words of a key, so API-Key, api_key, apiKey and x.api.key compare equal.
func normalizeKey(k string) string {
	clean := true
	for i := 0; i < len(k); i++ {
		if c := k[i]; c == '_' || c == '-' || c == '.' || c == ' ' || (c >= 'A' && c <= 'Z') || c >= utf8.RuneSelf {
			clean = false
			break
		}
	}
	if clean {
		return k // the common case: no copy
	}
	var b strings.Builder
	b.Grow(len(k))
	for _, r := range k {
		switch {
		case r == '_' || r == '-' || r == '.' || r == ' ':
		case r >= 'A' && r <= 'Z':
			b.WriteRune(r + ('a' - 'A'))
		default:
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// IsSecretKey reports whether a value stored under key k looks like a
// credential: k contains password, token, secret, api key, authorization,
// cookie, private key, credential and the like, in any case and with any
// separators.
func IsSecretKey(k string) bool { return isSecret(k, normalizeKey(k), nil) }

// isSecret is IsSecretKey with the operator's words, extra; n is k
// normalized.
func isSecret(k, n string, extra []string) bool {
	if slices.Contains(notSecret, n) {
		return false
	}
	if tokenCount(n) {
		// Only the operator's own words make it secret.
		for _, w := range extra {
			if strings.Contains(n, w) {
				return true
			}
		}
		return false
	}
	if slices.Contains(secretKeys, n) {
		return true
	}
	if (secretFragments.in(n) || foreignPassword(k, n)) && !locator(n) {
		return true
	}
	for _, w := range secretSuffixes {
		if strings.HasSuffix(n, w) {
			return true
		}
	}
	for _, w := range extra {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// A name/value pair is an object naming a credential in one member and
// holding it in another: {"name": "Authorization", "value": "…"}, as
// HTTP tools take headers, Kubernetes environment variables and
// CloudFormation a stack's parameters (ParameterKey, ParameterValue).
// pairName are the normalized names of the naming member, pairValue's
// those of the member redacted.
func pairName(n string) bool {
	switch n {
	case "name", "key", "header", "headername", "field", "variable", "var", "env", "param", "parameter", "parameterkey", "parametername":
		return true
	}
	return false
}

func pairValue(n string) bool {
	return n == "value" || n == "values" || n == "val" || n == "content" || n == "parametervalue"
}

// secretName reports whether s, a string naming something, names a
// credential as a key would: a name ("API Key", "Client Secret" too), not
// prose (more than three words).
func secretName(s string, extra []string) bool {
	s = strings.TrimSpace(s)
	return len(strings.Fields(s)) <= 3 && isSecret(s, normalizeKey(s), extra)
}

// secretOption reports whether s, an element of an array, is a
// command-line option whose value, the next element, is a credential:
// one naming a secret (--password, --client-secret, --token). An option
// given with its value (--password=…) is one string, which Scrub reads.
func secretOption(s string, extra []string) bool {
	if len(s) < 2 || s[0] != '-' || strings.ContainsAny(s, "= ") {
		return false
	}
	return credentialOption(s, extra)
}

// credentialOption reports whether opt, a command-line option (with its
// dashes), names a credential as a key would, and not where or which one
// it is: the values of --secret-id, --password-file, --token-env and
// --secret-name (an identifier, a path, a variable's name) are what an
// audit record is read for, and --password-stdin takes none.
func credentialOption(opt string, extra []string) bool {
	k := strings.TrimLeft(opt, "-")
	n := normalizeKey(k)
	if n == "" || !isSecret(k, n, extra) {
		return false
	}
	for _, w := range locatorSuffixes {
		if strings.HasSuffix(n, w) && n != w {
			return false
		}
	}
	return true
}

// locatorSuffixes end the normalized names of options that locate a
// credential rather than hold it (credentialOption).
var locatorSuffixes = []string{"file", "path", "stdin", "id", "name", "arn", "dir", "env", "url", "ref"}

// keyLocatorSuffixes are those of keys (locator): not an id (an AWS
// access key id is kept secret) nor a URL (one may carry the token).
var keyLocatorSuffixes = []string{"file", "path", "name", "arn", "dir", "env"}

// locator reports whether n, a normalized key, names or locates a
// credential rather than holds it, as credentialOption's options do:
// secretName, ssh_key_path, password_file. Its value (a name, a path) is
// what an audit record is read for, and what an approver must see to
// know which secret a held call reads, changes or deletes.
func locator(n string) bool {
	for _, w := range keyLocatorSuffixes {
		if strings.HasSuffix(n, w) && n != w {
			return true
		}
	}
	return false
}

// userOption reports whether s, an element of an array, is curl's -u or
// --user, whose value, the next element, may be USER:PASSWORD
// (userValue).
func userOption(s string) bool { return s == "-u" || s == "--user" }

// userValue is v, the value of a userOption, with the password of a
// USER:PASSWORD redacted, as Scrub does in a command line. Other values
// are kept: -u is also git push's upstream, python's unbuffered output
// and sort's unique, --user ps's account.
func userValue(v any) any {
	s, ok := v.(string)
	if !ok {
		return v
	}
	user, pass, found := strings.Cut(s, ":")
	if !found || pass == "" || strings.ContainsAny(user, "/\\\"' ") || strings.HasPrefix(pass, "//") {
		return v
	}
	return user + ":" + Redacted
}

// isPair reports whether obj may be a name/value pair: it has a value
// member (pairValue).
func isPair(obj map[string]any) bool {
	for k := range obj {
		if pairValue(normalizeKey(k)) {
			return true
		}
	}
	return false
}

// secretPair reports whether obj is a name/value pair whose name is a
// secret-looking key.
func secretPair(obj map[string]any, extra []string) bool {
	if !isPair(obj) {
		return false
	}
	for k, x := range obj {
		if s, ok := x.(string); ok && pairName(normalizeKey(k)) && secretName(s, extra) {
			return true
		}
	}
	return false
}

// Redactor decides what of a call's arguments an event keeps. The zero
// value keeps only a hash. A Redactor is read-only and safe for concurrent
// use.
type Redactor struct {
	// KeepArguments keeps the arguments themselves, for replay, with the
	// values of secret-looking keys replaced by [Redacted] and credentials
	// inside strings scrubbed. False keeps only their SHA-256.
	KeepArguments bool `yaml:"keep_arguments" json:"keep_arguments,omitempty"`
	// SecretKeys are more key fragments whose values are secret, matched
	// like the built-in ones (case and separators ignored).
	SecretKeys []string `yaml:"secret_keys" json:"secret_keys,omitempty"`
}

// Arguments is what an event keeps of a call's arguments.
type Arguments struct {
	// SHA256 is the hex SHA-256 of the redacted arguments in canonical
	// JSON (RFC 8785). Hashing after redaction means a stored hash cannot
	// be used to confirm a guessed secret. For arguments that are not
	// valid JSON it is the hash of the raw bytes.
	SHA256 string `json:"arguments_sha256,omitempty"`
	// Value is the redacted arguments, only with KeepArguments, and only
	// if they nest at most MaxKeptDepth levels.
	Value any `json:"arguments,omitempty"`
}

// MaxKeptDepth is how deep kept arguments may nest. An event holds them
// two levels down (its object, its attrs), an A2A message's other
// members further down (extra.params), and an event nested deeper than
// its readers decode (encoding/json stops at 10000 levels) could not be
// read back: arguments nested deeper are kept as their hash only. No
// tool's arguments need a thousand levels.
const MaxKeptDepth = 1000

// Arguments redacts and hashes raw, the JSON params.arguments of a
// tools/call. Empty raw gives the zero Arguments.
func (r Redactor) Arguments(raw []byte) Arguments {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return Arguments{}
	}
	keep := r.KeepArguments && (len(raw) <= 2*MaxKeptDepth || Nesting(raw) <= MaxKeptDepth)
	if !keep {
		if sum, ok := hashArguments(raw, r.extraKeys()); ok {
			return Arguments{SHA256: sum}
		}
	}
	// Numbers stay json.Number so kept arguments replay exactly (ids
	// beyond 2^53 included); the hash still uses their canonical form.
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		sum := sha256.Sum256(raw)
		return Arguments{SHA256: hex.EncodeToString(sum[:])}
	}
	red := r.Redact(v)
	canon, err := CanonicalJSON(red)
	if err != nil { // only non-finite numbers, which JSON cannot hold
		sum := sha256.Sum256(raw)
		return Arguments{SHA256: hex.EncodeToString(sum[:])}
	}
	sum := sha256.Sum256(canon)
	a := Arguments{SHA256: hex.EncodeToString(sum[:])}
	if keep {
		a.Value = red
	}
	return a
}

// Redact returns a copy of v, a value as decoded by encoding/json, with
// the values of secret-looking keys replaced by [Redacted] at any depth
// and credentials inside the remaining strings scrubbed. v is not changed.
func (r Redactor) Redact(v any) any {
	return redact(v, r.extraKeys())
}

// extraKeys are r.SecretKeys normalized.
func (r Redactor) extraKeys() []string {
	var extra []string
	if len(r.SecretKeys) > 0 {
		extra = make([]string, len(r.SecretKeys))
		for i, k := range r.SecretKeys {
			extra[i] = normalizeKey(k)
		}
	}
	return extra
}

func redact(v any, extra []string) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		pair := isPair(v)
		for k, x := range v {
			if name, ok := x.(string); ok && pair && normalizeKey(k) == "key" {
				// A name/value pair's name ({"key": "LD_PRELOAD",
				// "value": …}): which variable it sets, not a
				// credential; its value is redacted below if the name
				// is a credential's.
				out[k] = Scrub(name)
			} else if isSecret(k, normalizeKey(k), extra) {
				out[k] = Redacted
			} else {
				out[k] = redact(x, extra)
			}
		}
		if secretPair(v, extra) {
			for k := range v {
				if pairValue(normalizeKey(k)) {
					out[k] = Redacted
				}
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = redact(x, extra)
		}
		for i := range len(v) - 1 {
			// A program's arguments: an option naming a credential, and
			// its value in the next element.
			s, ok := v[i].(string)
			switch {
			case ok && secretOption(s, extra):
				out[i+1] = Redacted
			case ok && userOption(s):
				out[i+1] = userValue(out[i+1])
			}
		}
		if len(v) == 2 {
			// A [name, value] pair naming a credential (headers as
			// tuples).
			if s, ok := v[0].(string); ok && secretName(s, extra) {
				out[1] = Redacted
			}
		}
		return out
	case string:
		return Scrub(v)
	}
	return v
}

// CanonicalJSON encodes v, a value as decoded by encoding/json (maps,
// slices, strings, float64 or json.Number, bools, nil), in RFC 8785
// canonical form: object keys sorted by UTF-16 code units, numbers in
// their shortest ECMAScript form, no insignificant whitespace.
func CanonicalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := canon(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func canon(b *bytes.Buffer, v any) error {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case string:
		canonString(b, v)
	case float64:
		return canonNumber(b, v)
	case json.Number:
		f, err := v.Float64()
		if err != nil {
			return fmt.Errorf("canonical JSON: number %q: %w", v, err)
		}
		return canonNumber(b, f)
	case int:
		b.WriteString(strconv.Itoa(v))
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case []any:
		b.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := canon(b, x); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, compareUTF16)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			canonString(b, k)
			b.WriteByte(':')
			if err := canon(b, v[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		// Structs and other typed values: through encoding/json, then
		// canonicalized.
		raw, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("canonical JSON: %w", err)
		}
		var g any
		if err := json.Unmarshal(raw, &g); err != nil {
			return fmt.Errorf("canonical JSON: %w", err)
		}
		return canon(b, g)
	}
	return nil
}

// canonNumber writes f as ECMAScript's Number.prototype.toString does,
// which is what RFC 8785 requires.
func canonNumber(b *bytes.Buffer, f float64) error {
	out, err := appendCanonNumber(b.AvailableBuffer(), f)
	if err != nil {
		return err
	}
	b.Write(out)
	return nil
}

func appendCanonNumber(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("canonical JSON: %v is not a JSON number", f)
	}
	if f == 0 {
		return append(b, '0'), nil // also for -0
	}
	abs := math.Abs(f)
	if abs >= 1e21 || abs < 1e-6 {
		s := strconv.FormatFloat(f, 'e', -1, 64)
		// Go writes e-07 and e+21; ECMAScript writes e-7 and e+21.
		mant, exp, _ := strings.Cut(s, "e")
		sign := exp[0]
		exp = strings.TrimLeft(exp[1:], "0")
		b = append(b, mant...)
		b = append(b, 'e', sign)
		return append(b, exp...), nil
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64), nil
}

func canonString(b *bytes.Buffer, s string) {
	b.Write(appendCanonString(b.AvailableBuffer(), s))
}

func appendCanonString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"':
				b = append(b, '\\', '"')
			case c == '\\':
				b = append(b, '\\', '\\')
			case c == '\b':
				b = append(b, '\\', 'b')
			case c == '\f':
				b = append(b, '\\', 'f')
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, "\ufffd"...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// compareUTF16 orders strings by their UTF-16 code units, as RFC 8785
// sorts object keys. That is byte order except where a character above
// U+FFFF (a surrogate pair, D800–DBFF first) meets one in E000–FFFF.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			ua, ub := firstUnit(ra), firstUnit(rb)
			if ua != ub {
				return int(ua) - int(ub)
			}
			return int(ra) - int(rb) // same high surrogate: low ones follow code point order
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

func firstUnit(r rune) rune {
	if r < 0x10000 {
		return r
	}
	r1, _ := utf16.EncodeRune(r)
	return r1
}
