package classifier

import (
	"regexp"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// argFacts is what one walk over a call's arguments finds for the
// boundary, sensitivity and scale axes. It keeps no argument values
// beyond the few resource names in resources.
type argFacts struct {
	// Boundary: the most external zone among URL-like arguments.
	urlZone   string
	urlConf   float64
	localPath bool // an absolute local path in a path-like argument
	pathArg   bool // any path-like argument (path, file, filename, dir, destination)
	// inlineData: the call carries the data it works on (rows, a
	// component's props, a schema, a multi-line document) rather than
	// naming it; remoteRef: an argument names a resource somewhere (an
	// id, key, URL, host, table or path); content: a content argument
	// (text, body, code, markdown …). A conversion of what is given
	// computes; of what is named, changes it (inPlaceVerbs).
	inlineData, remoteRef, content bool

	// Resources named by the call (URLs, paths, tables), at most
	// maxResources, for the intent record and the catalog.
	resources []string

	// Sensitivity: the highest tier seen and why.
	tier       string
	tierConf   float64
	tierSource string
	tierReason string

	// Scale.
	wildcard     bool // "*", "%" or an empty filter
	allFlag      bool // all / recursive set
	limit        bool // an explicit bound such as limit or max_count
	idScalar     bool // a single identifier
	maxArray     int  // longest array of items
	sqlScale     string
	sqlAction    string // what a SQL statement argument does: Read, Write or Provision
	sqlSeen      bool   // a SQL argument was read (sqlAction may be "": unreadable)
	values       int
	pluralTarget bool // an array of identifiers
}

const maxResources = 4

// keyKind classifies an argument name.
type keyKind uint16

const (
	kURL keyKind = 1 << iota
	kHost
	kPath
	kContent
	kSecret
	kLimit
	kID
	kPII
	kFilter
	kSQL
	kTable
	kAll
	// kVocab: a JSON-LD or JSON Schema keyword ("@context", "$ref"),
	// content unless its URL is not a vocabulary's (vocabularyURL).
	kVocab
	// kRef: a container a service keeps resources in (a repository, a
	// project, an account): the call names something kept elsewhere.
	kRef
)

var keyWords = map[string]keyKind{
	"url": kURL | kID, "urls": kURL, "uri": kURL | kID, "uris": kURL, "href": kURL, "link": kURL,
	"links": kURL, "endpoint": kURL, "endpoints": kURL, "webhook": kURL, "callback": kURL,
	"redirect": kURL, "website": kURL, "site": kURL, "origin": kURL, "proxy": kURL, "baseurl": kURL,
	"host": kHost, "hostname": kHost, "hosts": kHost, "domain": kHost, "server": kHost, "address": kHost,
	"ip": kHost, "dsn": kHost, "connection": kHost, "remote": kHost,
	"path": kPath | kID, "paths": kPath, "file": kPath | kID, "files": kPath, "filename": kPath | kID,
	"filepath": kPath | kID, "dir": kPath, "directory": kPath, "directories": kPath, "folder": kPath,
	"cwd": kPath, "source": kPath, "destination": kPath, "src": kPath, "dst": kPath, "root": kPath,
	"location": kPath,
	"text":     kContent, "content": kContent, "contents": kContent, "body": kContent, "message": kContent,
	"comment": kContent, "description": kContent, "title": kContent, "code": kContent, "script": kContent,
	"markdown": kContent, "html": kContent, "prompt": kContent, "thought": kContent, "note": kContent,
	"notes": kContent, "summary": kContent, "caption": kContent, "subject": kContent, "input": kContent,
	"password": kSecret, "passwd": kSecret, "pwd": kSecret, "secret": kSecret, "token": kSecret,
	"apikey": kSecret, "credential": kSecret, "credentials": kSecret, "authorization": kSecret,
	"bearer": kSecret, "privatekey": kSecret, "cookie": kSecret, "passphrase": kSecret,
	"limit": kLimit, "max": kLimit, "top": kLimit, "first": kLimit, "last": kLimit, "count": kLimit,
	"perpage": kLimit, "pagesize": kLimit, "maxresults": kLimit,
	"organization": kRef, "org": kRef, "repository": kRef, "repo": kRef, "owner": kRef, "project": kRef,
	"workspace": kRef, "account": kRef, "tenant": kRef, "channel": kRef,
	"id": kID, "uuid": kID, "sha": kID, "number": kID, "key": kID, "slug": kID, "ref": kID,
	"ids": kID, "keys": kID, "names": kID, "shas": kID, "numbers": kID,
	"ssn": kPII, "dob": kPII, "birth": kPII, "passport": kPII, "diagnosis": kPII, "medical": kPII,
	"patient": kPII, "health": kPII, "taxid": kPII, "iban": kPII,
	"filter": kFilter, "where": kFilter, "selector": kFilter, "match": kFilter, "pattern": kFilter,
	"glob": kFilter,
	"sql":  kSQL, "query": kSQL | kFilter, "statement": kSQL,
	"table": kTable, "collection": kTable, "database": kTable, "bucket": kTable, "index": kTable,
	"schema": kTable,
	"all":    kAll, "recursive": kAll, "everything": kAll,
}

// secretKeyPairs are two-word names of secrets ("api_key", "access_key").
var secretFirst = wordSet("api", "access", "private", "secret", "client", "auth", "session", "signing")

func classifyKey(key string) keyKind {
	if key == "" {
		return 0
	}
	if key[0] == '@' || key[0] == '$' {
		// JSON-LD and JSON Schema keywords ("@context", "@id",
		// "$schema", "$ref"): their URLs name vocabularies and
		// documents, not where a call goes, when they are a
		// vocabulary's (vocabularyURL); any other is a document a
		// JSON-LD processor or a schema validator may fetch.
		return kContent | kVocab
	}
	// Split into lower-case words in a stack buffer: names such as
	// "connectionString" or "per_page" must not allocate.
	var buf [64]byte
	var k keyKind
	prev, cur := "", ""
	word := func(w string) {
		k |= keyWords[w]
		if (w == "key" || w == "keys" || w == "secret") && secretFirst[prev] {
			k |= kSecret
			k &^= kID
		}
		if prev == "per" && w == "page" || prev == "page" && w == "size" {
			k |= kLimit
		}
		if w == "max" || w == "limit" {
			k |= kLimit
			k &^= kID
		}
		prev = w
	}
	n, start := 0, 0
	for i := 0; i < len(key) && n < len(buf); i++ {
		c := key[i]
		lower := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		upper := c >= 'A' && c <= 'Z'
		if upper && n > start && i > 0 && !(key[i-1] >= 'A' && key[i-1] <= 'Z') {
			cur = string(buf[start:n])
			word(cur)
			start = n
		}
		switch {
		case upper:
			buf[n] = c + 'a' - 'A'
			n++
		case lower:
			buf[n] = c
			n++
		default:
			if n > start {
				word(string(buf[start:n]))
			}
			start = n
		}
	}
	if n > start {
		word(string(buf[start:n]))
	}
	if k&kContent != 0 {
		// A URL inside a message is content, not a target.
		k &^= kURL | kHost | kPath | kID
	}
	return k
}

// Value shapes of credentials and personal data. Each is guarded by a
// cheap substring test before the expression runs.
var (
	reAWSKey   = regexp.MustCompile(`\b(AKIA|ASIA)[0-9A-Z]{16}\b`)
	reGHToken  = regexp.MustCompile(`\b(gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})`)
	reSlack    = regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9-]{10,}`)
	reSKKey    = regexp.MustCompile(`\b(sk|rk)_(live|test)_[A-Za-z0-9]{16,}|\bsk-[A-Za-z0-9_-]{20,}`)
	reJWT      = regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*`)
	reGoogle   = regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}\b`)
	reSSN      = regexp.MustCompile(`\b(\d{3})-(\d{2})-(\d{4})\b`)
	reEmail    = regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`)
	reSQLTable = regexp.MustCompile(`(?i)\b(?:from|into|update|join|table)\s+["'\x60\[]?([A-Za-z_][A-Za-z0-9_.]*)`)
)

// sensitivePathParts are pieces of paths that hold credentials.
var sensitivePathParts = [...]string{"/.ssh/", "id_rsa", "id_ed25519", "id_ecdsa", ".aws/credentials",
	".kube/config", "/etc/shadow", ".git-credentials", ".netrc", ".npmrc", ".pypirc", ".docker/config.json",
	"credentials.json", ".pem", ".p12", ".pfx", ".key", "/.env", ".env.", "secrets.", "/secrets/", "mcp.json",
	".gnupg/", "keychain", "vault"}

// vocabularyHosts publish the vocabularies and schemas JSON-LD contexts
// and JSON Schema documents name, or are reserved for examples (RFC
// 2606): a URL of theirs names a vocabulary, and a processor fetching it
// (most JSON-LD document loaders fetch a remote @context; a validator a
// remote $ref) sends nothing of the call's anywhere that matters.
var vocabularyHosts = [...]string{"schema.org", "json-schema.org", "w3.org", "w3id.org", "purl.org", "json-ld.org",
	"schemastore.org", "xmlns.com", "ogp.me", "example.com", "example.org", "example.net"}

// vocabularyURL reports whether s, the value of a JSON-LD or JSON Schema
// keyword, is no URL or one of a vocabulary host (vocabularyHosts) or a
// subdomain of one; not one of a host the agent may have chosen
// ("@context": "https://attacker.example/?d=…").
func vocabularyURL(s string) bool {
	i := strings.Index(s, "://")
	if i < 0 {
		return true
	}
	host := s[i+3:]
	if j := strings.IndexAny(host, "/?#\\"); j >= 0 {
		host = host[:j]
	}
	if strings.ContainsAny(host, "@[") {
		return false // userinfo, whose host a reader may take for another
	}
	if j := strings.IndexByte(host, ':'); j >= 0 {
		host = host[:j]
	}
	for _, v := range vocabularyHosts {
		if strings.EqualFold(host, v) || len(host) > len(v) && host[len(host)-len(v)-1] == '.' && strings.EqualFold(host[len(host)-len(v):], v) {
			return true
		}
	}
	return false
}

// argWrapper reports whether an argument holds a call's parameters, as
// OpenAPI wrappers nest them ({"request": {...}}), or its options: not
// data it is given to work on.
func argWrapper(k string) bool {
	for _, w := range [...]string{"request", "params", "parameters", "options", "opts", "arguments", "args", "input",
		"body", "payload", "config", "settings"} {
		if strings.EqualFold(k, w) {
			return true
		}
	}
	return false
}

// inJSONPatch reports whether a value is inside a JSON Patch (RFC 6902):
// an array named patch or patches.
func inJSONPatch(stack []walkFrame) bool {
	for _, fr := range stack {
		if fr.array && (strings.EqualFold(fr.key, "patch") || strings.EqualFold(fr.key, "patches")) {
			return true
		}
	}
	return false
}

// scanArgs walks the call's arguments once and fills f.
func (c *compiled) scanArgs(params jsontext.Value, f *argFacts) {
	walkJSON(params, false, func(w *jsonWalker, ev walkEvent) {
		f.values++
		kk := classifyKey(ev.key)
		if kk&(kID|kURL|kHost|kTable|kPath|kRef) != 0 {
			f.remoteRef = true
		}
		switch ev.kind {
		case '"':
			if kk&kContent != 0 {
				f.content = true
			}
			if !f.inlineData && len(w.stack) == 1 && kk&(kSQL|kFilter|kContent) == 0 && strings.Count(ev.str, "\n") >= 2 {
				// A document given to work on (a diagram's source,
				// a config file), not a message to send.
				f.inlineData = true
			}
			if kk&kPath != 0 && inJSONPatch(w.stack) {
				// A JSON Patch operation's "path" is a
				// JSON Pointer into a document, not a file.
				kk &^= kPath
			}
			c.scanString(f, kk, ev.str)
		case '0':
			if kk&kLimit != 0 && ev.num > 0 {
				f.limit = true
			} else if kk&kID != 0 {
				f.idScalar = true
			}
		case 't':
			if kk&kAll != 0 {
				f.allFlag = true
			}
		case '[':
			if kk&(kContent|kSQL) == 0 && ev.n > f.maxArray {
				f.maxArray = ev.n
			}
			if kk&kID != 0 && ev.n > 1 {
				f.pluralTarget = true
			}
		case '{':
			if kk&kFilter != 0 && ev.n == 0 {
				f.wildcard = true
			}
			if len(w.stack) >= 1 && ev.n >= 2 && classifyKey(w.stack[0].key)&(kFilter|kSQL) == 0 &&
				!(len(w.stack) == 1 && argWrapper(w.stack[0].key)) {
				// A record or a structure, not a filter on what to
				// look up.
				f.inlineData = true
			}
		}
	})
}

func (c *compiled) scanString(f *argFacts, kk keyKind, s string) {
	if s == "" {
		return
	}
	trimmed := strings.TrimSpace(s)
	noSpace := !strings.ContainsAny(trimmed, " \t\n")
	if kk&kPath != 0 && kk&kContent == 0 {
		f.pathArg = true
	}

	// Boundary: URL-like arguments, and any value that is a whole URL
	// unless it is content.
	if (kk&kContent == 0 || kk&kVocab != 0 && !vocabularyURL(trimmed)) && noSpace && len(trimmed) < 4096 {
		zone, conf := "", 0.0
		switch {
		case strings.Contains(trimmed, "://"):
			zone, conf = c.urlZone(trimmed)
		case kk&(kHost|kURL) != 0 && looksLikeHost(trimmed):
			zone, conf = c.hostZone(hostOnly(trimmed))
		case kk&kPath != 0 && isAbsPath(trimmed) && !apiPath(trimmed):
			f.localPath = true
		}
		if zone != "" {
			if zone == Local && strings.HasPrefix(strings.ToLower(trimmed), "file:") {
				f.localPath = true
			} else if rank(AxisBoundary, zone) > rank(AxisBoundary, f.urlZone) || (zone == f.urlZone && conf > f.urlConf) {
				f.urlZone, f.urlConf = zone, conf
			}
		}
		if zone != "" || kk&(kPath|kTable|kURL) != 0 {
			c.resource(f, trimmed)
		}
	}
	if kk&kSQL != 0 {
		f.sql(c, s)
	}
	if kk&kFilter != 0 && (trimmed == "*" || trimmed == "%" || trimmed == "**" || trimmed == ".*" || trimmed == "**/*") {
		f.wildcard = true
	}
	if kk&kID != 0 && kk&kFilter == 0 {
		if strings.ContainsAny(trimmed, "*%") && noSpace {
			f.wildcard = true
		} else {
			f.idScalar = true
		}
	}

	// Sensitivity: secrets by name, then shapes of secrets and personal
	// data in the value.
	switch {
	case kk&kSecret != 0:
		f.raise(Restricted, 0.9, SourceParameters, "credential argument")
	case kk&kPII != 0:
		f.raise(Regulated, 0.85, SourceParameters, "personal data argument")
	}
	if len(s) >= 8 {
		scanSecrets(f, s)
	}
	if kk&(kPath|kURL|kTable) != 0 || (noSpace && (strings.HasPrefix(trimmed, "/") || strings.HasPrefix(trimmed, "~"))) {
		lower := strings.ToLower(trimmed)
		for _, p := range sensitivePathParts {
			if strings.Contains(lower, p) {
				f.raise(Restricted, 0.85, SourcePathInference, "credential path")
				break
			}
		}
	}
}

// resource remembers a named resource and checks it against the catalog.
func (c *compiled) resource(f *argFacts, s string) {
	if len(f.resources) < maxResources {
		f.resources = append(f.resources, s)
	}
	c.catalog(f, s)
}

func (c *compiled) catalog(f *argFacts, s string) {
	for _, r := range c.rules {
		if r.re.MatchString(s) {
			f.raise(r.tier, 0.95, SourceCatalog, "catalog: "+r.re.String())
		}
	}
}

// raise records tier if it is more sensitive than what was seen, or as
// sensitive but surer.
func (f *argFacts) raise(tier string, conf float64, source, reason string) {
	r, cur := rank(AxisSensitivity, tier), rank(AxisSensitivity, f.tier)
	if r > cur || (r == cur && conf > f.tierConf) {
		f.tier, f.tierConf, f.tierSource, f.tierReason = tier, conf, source, reason
	}
}

func scanSecrets(f *argFacts, s string) {
	if len(s) > 64<<10 {
		s = s[:64<<10]
	}
	if strings.Contains(s, "PRIVATE KEY-----") {
		f.raise(Restricted, 0.95, SourceParameters, "private key")
	}
	if tokenLike(s) && credentialShape(s) {
		f.raise(Restricted, 0.9, SourceParameters, "credential value")
	}
	if strings.IndexByte(s, '-') >= 0 {
		for _, m := range reSSN.FindAllStringSubmatch(s, 4) {
			if m[1] != "000" && m[1] != "666" && m[1][0] != '9' && m[2] != "00" && m[3] != "0000" {
				f.raise(Regulated, 0.85, SourceParameters, "social security number")
				break
			}
		}
	}
	if hasCardNumber(s) {
		f.raise(Regulated, 0.9, SourceParameters, "payment card number")
	}
	if strings.IndexByte(s, '@') >= 0 && reEmail.MatchString(s) {
		f.raise(Confidential, 0.7, SourceParameters, "email address")
	}
}

// tokenLike reports whether s has a run of at least 20 token characters
// ([A-Za-z0-9_-]) with a digit in it: every credential shape below does,
// ordinary words and paths rarely.
func tokenLike(s string) bool {
	run, digit := 0, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			run++
			digit = true
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '-':
			run++
		default:
			run, digit = 0, false
			continue
		}
		if run >= 20 && digit {
			return true
		}
	}
	return false
}

// credentialShape reports whether s holds a well-known token format.
func credentialShape(s string) bool {
	switch {
	case (strings.Contains(s, "AKIA") || strings.Contains(s, "ASIA")) && reAWSKey.MatchString(s),
		strings.Contains(s, "xox") && reSlack.MatchString(s),
		(strings.Contains(s, "_live_") || strings.Contains(s, "_test_") || strings.Contains(s, "sk-")) && reSKKey.MatchString(s),
		strings.Contains(s, "eyJ") && reJWT.MatchString(s),
		strings.Contains(s, "AIza") && reGoogle.MatchString(s),
		strings.Contains(s, "github_pat_") && reGHToken.MatchString(s):
		return true
	}
	for rest := s; ; {
		i := strings.Index(rest, "gh")
		if i < 0 || i+4 > len(rest) {
			return false
		}
		if strings.IndexByte("pousr", rest[i+2]) >= 0 && rest[i+3] == '_' && reGHToken.MatchString(rest[i:]) {
			return true
		}
		rest = rest[i+2:]
	}
}

// hasCardNumber finds 13 to 19 digits, optionally grouped by spaces or
// dashes, that pass the Luhn check.
func hasCardNumber(s string) bool {
	var digits [19]byte
	n := 0
	flush := func() bool {
		ok := n >= 13 && luhn(digits[:n])
		n = 0
		return ok
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch >= '0' && ch <= '9':
			if n == len(digits) {
				// Too long to be a card: skip the rest of the run.
				for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == ' ' || s[i] == '-') {
					i++
				}
				n = 0
				continue
			}
			digits[n] = ch - '0'
			n++
		case (ch == ' ' || ch == '-') && n > 0 && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
		default:
			if flush() {
				return true
			}
		}
	}
	return flush()
}

func luhn(d []byte) bool {
	sum := 0
	for i := len(d) - 1; i >= 0; i-- {
		x := int(d[i])
		if (len(d)-1-i)%2 == 1 {
			x *= 2
			if x > 9 {
				x -= 9
			}
		}
		sum += x
	}
	return sum%10 == 0 && !allSame(d)
}

func allSame(d []byte) bool {
	for _, x := range d[1:] {
		if x != d[0] {
			return false
		}
	}
	return true
}

// sql reads the scale of a SQL statement and names its tables.
func (f *argFacts) sql(c *compiled, s string) {
	if len(s) > 16<<10 {
		s = s[:16<<10]
	}
	u := strings.ToUpper(strings.TrimSpace(s))
	has := func(kw string) bool { return strings.Contains(u, kw) }
	// With several SQL arguments the most consequential speaks for the
	// call: a decoy SELECT beside a DROP TABLE must not make it a read.
	// One that cannot be read ("") counts as more than a Read.
	if a := sqlStatementAction(u); !f.sqlSeen || sqlWeight(a) > sqlWeight(f.sqlAction) {
		f.sqlAction = a
	}
	f.sqlSeen = true
	switch {
	case strings.HasPrefix(u, "SELECT"), strings.HasPrefix(u, "WITH"):
		switch {
		case has(" LIMIT ") || has(" FETCH FIRST ") || has(" TOP "):
			f.sqlScale = Bounded
		case has(" WHERE "):
			f.sqlScale = Bounded
		default:
			f.sqlScale = Unbounded
		}
	case strings.HasPrefix(u, "UPDATE"), strings.HasPrefix(u, "DELETE"):
		if has(" WHERE ") {
			f.sqlScale = Bounded
		} else {
			f.sqlScale = Unbounded
		}
	case strings.HasPrefix(u, "DROP"), strings.HasPrefix(u, "TRUNCATE"):
		f.sqlScale = Unbounded
	case strings.HasPrefix(u, "INSERT"), strings.HasPrefix(u, "CREATE"), strings.HasPrefix(u, "ALTER"):
		f.sqlScale = Bounded
	}
	for _, m := range reSQLTable.FindAllStringSubmatch(s, 4) {
		c.resource(f, m[1])
	}
}

// sqlStatementAction is what an upper-cased SQL statement does (§5.2,
// judged by the statement, not the tool that runs it): a query reads;
// changing rows or tables inside the data writes; making databases,
// schemas, roles or grants provisions. "" when it is none of these or more
// than one statement.
func sqlStatementAction(u string) string {
	if i := strings.IndexByte(strings.TrimRight(u, "; \t\n"), ';'); i >= 0 {
		return "" // several statements: no one verb speaks for them
	}
	u = strings.Join(strings.Fields(u), " ")
	first, rest, _ := strings.Cut(u, " ")
	second, _, _ := strings.Cut(rest, " ")
	has := func(kw string) bool { return strings.Contains(u, kw) }
	// Each form must look like SQL, not a sentence in a "query" argument
	// ("update me on the news" is a search).
	switch {
	case first == "SELECT" && (has(" FROM ") || !strings.ContainsAny(rest, " ")),
		first == "WITH" && has(" AS (") && has("SELECT "):
		switch {
		case first == "WITH" && sqlModifies.MatchString(u), has(" INTO "):
			return Write // a data-modifying CTE, SELECT … INTO a new table
		case sqlSideEffects.MatchString(u):
			// A query calling a function that acts (ends sessions, moves
			// sequences, reads or writes server files, reaches other
			// servers) is not a read: the tool's own name decides.
			return ""
		}
		return Read
	case first == "EXPLAIN" && (has("SELECT ") || has(" FROM ")),
		first == "SHOW" && sqlShowable[second]:
		return Read
	case first == "INSERT" && second == "INTO", first == "UPDATE" && has(" SET "), first == "DELETE" && second == "FROM",
		first == "MERGE" && second == "INTO", first == "TRUNCATE" && (second == "TABLE" || !strings.ContainsAny(rest, " ")):
		return Write
	case (first == "GRANT" || first == "REVOKE") && has(" ON ") && (has(" TO ") || has(" FROM ")):
		return Provision
	case first == "CREATE" || first == "ALTER" || first == "DROP":
		obj := second
		if obj == "OR" || obj == "IF" || obj == "UNIQUE" || obj == "TEMP" || obj == "TEMPORARY" || obj == "MATERIALIZED" {
			for _, w := range strings.Fields(rest)[1:] {
				if sqlObjects[w] {
					obj = w
					break
				}
			}
		}
		switch {
		case obj == "DATABASE" || obj == "SCHEMA" || obj == "ROLE" || obj == "USER" || obj == "EXTENSION" || obj == "SERVER":
			return Provision
		case sqlObjects[obj]:
			return Write
		}
	}
	return ""
}

// sqlSideEffects are functions a SELECT can call that act.
var sqlSideEffects = regexp.MustCompile(`\b(PG_TERMINATE_BACKEND|PG_CANCEL_BACKEND|PG_RELOAD_CONF|PG_ROTATE_LOGFILE|SETVAL|NEXTVAL|LO_IMPORT|LO_EXPORT|PG_READ_FILE|PG_READ_BINARY_FILE|PG_LS_DIR|DBLINK\w*|PG_SLEEP|SET_CONFIG|PG_ADVISORY_\w*LOCK\w*|SYS_EXEC|XP_CMDSHELL|LOAD_FILE)\s*\(|\bINTO\s+(OUTFILE|DUMPFILE)\b`)

// sqlObjects are what CREATE, ALTER and DROP make, change or remove.
var sqlObjects = map[string]bool{"TABLE": true, "INDEX": true, "VIEW": true, "DATABASE": true, "SCHEMA": true,
	"ROLE": true, "USER": true, "EXTENSION": true, "SERVER": true, "FUNCTION": true, "PROCEDURE": true,
	"TRIGGER": true, "SEQUENCE": true, "TYPE": true, "POLICY": true, "COLUMN": true}

// sqlShowable follow SHOW in MySQL and PostgreSQL statements.
var sqlShowable = map[string]bool{"TABLES": true, "DATABASES": true, "COLUMNS": true, "INDEX": true, "INDEXES": true,
	"CREATE": true, "GRANTS": true, "STATUS": true, "VARIABLES": true, "PROCESSLIST": true, "SCHEMAS": true, "ALL": true}

// looksLikeHost reports whether s could be a host name or address, maybe
// with a port: no spaces, and a dot, a colon or "localhost".
func looksLikeHost(s string) bool {
	if s == "" || len(s) > 253+6 {
		return false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '.' || ch == '-' || ch == ':' || ch == '[' || ch == ']' || ch == '_') {
			return false
		}
	}
	if i := strings.LastIndexByte(s, ':'); i >= 0 && strings.Count(s, ":") == 1 && !allDigits(s[i+1:]) {
		// "sc-domain:example.com", "repo:owner/name": a prefix, not a
		// host and port.
		return false
	}
	return strings.ContainsAny(s, ".:") || strings.EqualFold(s, "localhost")
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// hostOnly strips a port from host:port ([v6]:port, v4:port, name:port).
func hostOnly(s string) string {
	if strings.HasPrefix(s, "[") {
		if i := strings.IndexByte(s, ']'); i > 0 {
			return s[1:i]
		}
	}
	if strings.Count(s, ":") == 1 {
		return s[:strings.IndexByte(s, ':')]
	}
	return s
}

// apiPath reports whether an absolute path is an HTTP API's rather than a
// file's: it has a query ("/orders?status=eq.paid") or its first segment
// is an API prefix ("/rest/api/3/issue", "/v1/customers", "/graphql").
func apiPath(s string) bool {
	if !strings.HasPrefix(s, "/") {
		return false
	}
	if strings.ContainsRune(s, '?') {
		return true
	}
	seg := s[1:]
	if i := strings.IndexByte(seg, '/'); i >= 0 {
		seg = seg[:i]
	}
	switch strings.ToLower(seg) {
	case "api", "apis", "rest", "graphql", "rpc", "odata":
		return true
	}
	if len(seg) >= 2 && (seg[0] == 'v' || seg[0] == 'V') {
		for i := 1; i < len(seg); i++ {
			if seg[i] < '0' || seg[i] > '9' {
				return false
			}
		}
		return true
	}
	return false
}

func isAbsPath(s string) bool {
	return strings.HasPrefix(s, "/") || strings.HasPrefix(s, "~/") || s == "~" ||
		len(s) >= 3 && s[1] == ':' && (s[2] == '\\' || s[2] == '/') && (s[0]|0x20 >= 'a' && s[0]|0x20 <= 'z')
}

// sqlWeight orders what SQL arguments say, for the most consequential
// to speak for the call: a read, then one that cannot be read (the tool's
// name decides), then a write, then provisioning.
func sqlWeight(action string) int {
	switch action {
	case Read:
		return 0
	case "":
		return 1
	case Provision:
		return 3
	}
	return 2
}

// sqlModifies finds a data-modifying statement inside a query (a WITH's
// CTE), wherever it stands: "(DELETE FROM" as much as " DELETE ".
var sqlModifies = regexp.MustCompile(`\b(INSERT|UPDATE|DELETE|MERGE)\b`)
