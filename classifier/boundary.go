package classifier

import (
	"net/netip"
	"strings"
)

// target is the upstream endpoint of a call.
type target struct {
	// local: the upstream runs on this host (stdio, a unix socket or a
	// loopback URL), so where its tools reach is a question about the tool.
	local   bool
	command string // stdio command line
	zone    string // for a remote endpoint
	conf    float64
	parsed  bool
	// For a local upstream, what its command line says of where its
	// tools reach: commandZone and serverZone of command, worked out
	// once per tool version (toolFacts) rather than at every call.
	cmdZone, idZone string
	cmdConf, idConf float64
}

// parseTarget reads a descriptor's TargetEndpoint: "stdio:cmd args", a
// URL, or a unix socket ("unix:/run/x.sock", "http+unix://…").
func (c *compiled) parseTarget(s string) target {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return target{}
	case strings.HasPrefix(s, "stdio:"):
		return c.localTarget(s[len("stdio:"):])
	case strings.HasPrefix(s, "unix:"), strings.HasPrefix(s, "http+unix:"), strings.HasPrefix(s, "https+unix:"):
		return c.localTarget("")
	}
	_, host, ok := splitURL(s)
	if !ok || host == "" {
		return target{}
	}
	zone, conf := c.hostZone(host)
	if zone == Local {
		return c.localTarget("")
	}
	return target{zone: zone, conf: conf, parsed: true}
}

// localTarget is the target of an upstream on this host run by command
// ("" for none).
func (c *compiled) localTarget(command string) target {
	t := target{local: true, command: command, parsed: true}
	t.cmdZone, t.cmdConf = c.commandZone(command)
	t.idZone, t.idConf = c.serverZone(command)
	return t
}

// hostZone places a host name or address in a trust zone, with how sure
// that placement is: configured names and ranges are certain, loopback is
// Local, private ranges and special-use names cannot be reached from the
// internet so they are Intra-org (less surely: nobody configured them),
// and the rest is External.
func (c *compiled) hostZone(host string) (string, float64) {
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "" {
		return "", 0
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		ip = ip.Unmap()
		for _, p := range c.cidrs {
			if p.Contains(ip) {
				return IntraOrg, 1
			}
		}
	} else {
		for _, d := range c.domains {
			if host == d || strings.HasSuffix(host, "."+d) {
				return IntraOrg, 1
			}
		}
	}
	return hostZoneStatic(host)
}

var specialUseSuffixes = [...]string{".internal", ".local", ".lan", ".home.arpa", ".corp", ".intranet", ".private", ".localdomain"}

func hostZoneStatic(host string) (string, float64) {
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if ip, err := netip.ParseAddr(host); err == nil {
		ip = ip.Unmap()
		switch {
		case ip.IsLoopback(), ip.IsUnspecified():
			return Local, 1
		case ip.IsPrivate(), ip.IsLinkLocalUnicast(), cgnat.Contains(ip):
			return IntraOrg, 0.75
		}
		return External, 0.95
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return Local, 1
	}
	for _, s := range specialUseSuffixes {
		if strings.HasSuffix(host, s) {
			return IntraOrg, 0.75
		}
	}
	if !strings.Contains(host, ".") {
		// A single label resolves only through local search domains.
		return IntraOrg, 0.7
	}
	return External, 0.95
}

var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// browserWords mark browser automation: its pages come from the open web.
var browserWords = wordSet("puppeteer", "playwright", "chrome", "chromium", "browser", "selenium",
	"webdriver", "devtools", "firefox", "browserbase", "stagehand")

// webWords in a description mean the tool reaches the internet.
var webWords = wordSet("internet", "website", "websites", "webpage", "webpages", "online", "web")

// boundary combines the upstream's zone with the call's URL-like arguments:
// the more external of the two wins (§5.2, "crosses the organisation's
// trust boundary").
func (c *compiled) boundary(k *call, t target) AxisVerdict {
	if k.tc.Boundary != "" {
		return AxisVerdict{Classified: k.tc.Boundary, Confidence: 1, Source: SourceConfig}
	}
	base := c.upstreamBoundary(k, t)
	if z := k.args.urlZone; z != "" && rank(AxisBoundary, z) >= rank(AxisBoundary, base.Classified) {
		if z != base.Classified || k.args.urlConf > base.Confidence {
			return AxisVerdict{Classified: z, Confidence: min(k.args.urlConf, 0.85), Source: SourceParameters}
		}
	}
	return base
}

func (c *compiled) upstreamBoundary(k *call, t target) AxisVerdict {
	if z, ok := c.zones[k.d.Upstream]; ok {
		if k.args.urlZone == "" && (k.selfLocal || reasoningTool(k.name) || anyIn(k.name, localConfigWords) ||
			anyIn(k.desc, localConfigWords) || anyIn(k.name, docWords)) {
			// The operator's zone is a floor for every call, but
			// this tool looks like it stays on the host (the
			// server's own state, a scratchpad, a local kubeconfig,
			// the documentation it ships or searches): the zone
			// holds, as a floor, but on the dev split such a tool
			// was in it for none of five calls: 0.7, not 0.85.
			return AxisVerdict{Classified: z, Confidence: 0.7, Source: SourceConfig}
		}
		if k.args.urlZone == "" && (mayStayOnHost(k) || k.descLocal) {
			// The zone is where the upstream's service lives; a tool
			// that may answer on this host (a computation over its
			// arguments, guidance it ships, the client's own
			// connections or contexts) or that says nothing of what
			// it does is in it less surely.
			return AxisVerdict{Classified: z, Confidence: 0.85, Source: SourceConfig}
		}
		return AxisVerdict{Classified: z, Confidence: 1, Source: SourceConfig}
	}
	if !t.parsed {
		return AxisVerdict{Classified: External, Confidence: 0.3, Source: SourceNone}
	}
	if !t.local {
		return AxisVerdict{Classified: t.zone, Confidence: t.conf, Source: SourceEndpoint}
	}
	// A local server: where do its tools reach?
	if t.cmdZone != "" {
		return AxisVerdict{Classified: t.cmdZone, Confidence: t.cmdConf, Source: SourceEndpointInference}
	}
	if k.args.urlZone == "" && k.selfLocal {
		// A tool about the server itself (its cache, health, tools,
		// log level, the session's active selection) stays on this
		// host, whichever service the server fronts.
		return AxisVerdict{Classified: Local, Confidence: 0.7, Source: SourceToolName}
	}
	if k.args.urlZone == "" && reasoningTool(k.name) {
		// A thinking scratchpad or a calculator computes over its
		// arguments, whichever service its server fronts.
		return AxisVerdict{Classified: Local, Confidence: 0.7, Source: SourceToolName}
	}
	if k.args.urlZone == "" && k.browserMgmt {
		// Browser management (tabs, window size, closing a page,
		// emulation) changes the local browser, not a site.
		return AxisVerdict{Classified: Local, Confidence: 0.7, Source: SourceToolName}
	}
	// A client of a named service calls that service, whatever its
	// annotations say and whichever local file it uploads.
	idZone, idConf := t.idZone, t.idConf
	if idZone == External {
		if idConf >= 0.9 && mayStayOnHost(k) {
			// A service's server may answer this one from what it
			// ships (best practices, schemas, instructions), work it
			// out from the arguments (convert, validate, format) or
			// read the client's own state, and where nothing says
			// what the tool does nothing says where: the service is
			// a guess here, not a certainty.
			idConf = 0.85
		}
		if idConf >= 0.9 && k.descLocal {
			// The tool's own words place its data on this host ("from
			// the local cache"): the server and the tool disagree.
			// External stays, the conservative side, below the high
			// band.
			idConf = 0.75
		}
		if idConf >= 0.9 && k.reads && !k.args.remoteRef {
			// A read that names nothing the service keeps (no id,
			// URL, host, table, path or container among its
			// arguments) is placed by the server's name alone, not
			// by anything of the call: a list of presets, the
			// client's settings, guidance, a computation over what
			// it is given. On the dev split such reads by servers
			// naming no known service stayed on this host for 39
			// calls in 174 (13 servers in 31): where a service is
			// named it is likely the target, not certain.
			idConf = 0.85
		}
		return AxisVerdict{Classified: External, Confidence: idConf, Source: SourceEndpointInference}
	}
	// Otherwise a URL the call names is where it goes (a browser opening
	// a loopback page stays Local).
	if k.args.urlZone != "" {
		// A URL among the arguments need not be where the call goes (a
		// link in a message, a remote being added): below the high band.
		return AxisVerdict{Classified: k.args.urlZone, Confidence: min(k.args.urlConf, 0.85), Source: SourceParameters}
	}
	if k.args.localPath && !moves(k.name) && idZone != Local {
		// A path on this host that the call does not carry elsewhere
		// ("upload_file", "download_audio" take data across), on a
		// server that names no local capability: a weak sign, as a
		// client of an API unnamed here takes files to send it too
		// ("parse this PDF", "update the image from this file"). On
		// the dev split, with the knowledge base strict, it was where
		// such a call went for 20 calls in 35.
		return AxisVerdict{Classified: Local, Confidence: 0.65, Source: SourceParameters}
	}
	if idZone == Local && (k.descRemote || k.namesHost) {
		// A local tool's server whose tool names the web, a service
		// or a public host ("search the internet", "Google docs", "a
		// shareable excalidraw.com link", "the cloud provider").
		return AxisVerdict{Classified: External, Confidence: 0.7, Source: SourceToolDescription}
	}
	if idZone == Local {
		// Its words and openWorldHint do not move a local tool: on the
		// dev split they were wrong five times in six.
		return AxisVerdict{Classified: Local, Confidence: idConf, Source: SourceEndpointInference}
	}
	if idZone == IntraOrg {
		return AxisVerdict{Classified: IntraOrg, Confidence: idConf, Source: SourceEndpointInference}
	}
	// openWorldHint: false is no evidence of Local: on the corpus's dev
	// split, 161 tools saying it reach a remote service and 95 stay on the
	// host (SaaS wrappers copy the annotation from examples).
	if k.hints.openWorld == isTrue {
		return AxisVerdict{Classified: External, Confidence: 0.85, Source: SourceAnnotations}
	}
	for i, w := range k.cmd {
		if externalServices[w] && !(i+1 < len(k.cmd) && (k.cmd[i+1] == "com" || k.cmd[i+1] == "org")) {
			// Not "github.com/owner/module": where the server's code
			// is hosted is not where its tools go.
			return AxisVerdict{Classified: External, Confidence: 0.8, Source: SourceEndpointInference}
		}
		if localStoreEngines[w] {
			// An embedded database named on the command line
			// ("--dsn sqlite:///./app.db"): its file is on this host.
			return AxisVerdict{Classified: Local, Confidence: 0.8, Source: SourceEndpointInference}
		}
		if browserWords[w] {
			// A browser with no URL in the call: its pages may be the
			// open web or a local app; nothing here says which.
			return AxisVerdict{Classified: External, Confidence: 0.55, Source: SourceEndpointInference}
		}
	}
	if k.descExternal {
		return AxisVerdict{Classified: External, Confidence: 0.75, Source: SourceToolDescription}
	}
	if k.descLocal {
		return AxisVerdict{Classified: Local, Confidence: 0.7, Source: SourceToolDescription}
	}
	if t.command == "" {
		// A loopback URL or a Unix socket, no command to go by.
		return AxisVerdict{Classified: Local, Confidence: 0.8, Source: SourceEndpointInference}
	}
	// A server that names neither a service nor a local capability: most
	// published servers front a remote API. What the operator gives it
	// says how surely (UpstreamConfig.EnvNames, a credential flag on the
	// command line). On the corpus's dev split, calls of such servers
	// given an API's credential went to a service for 483 calls in 489
	// (20 servers, each right on 0.945 of its calls on average: below
	// the high band, whose paths are right on 0.97 and more); of those
	// known to be given nothing, for 60 calls in 104 (11 servers, 0.44):
	// no sign they stay here either (6 of the 11 mostly did), so
	// External stays, as the conservative default below the floor, not
	// as a finding.
	switch c.serverCredential(k.d.Upstream, t.command) {
	case envCredential:
		return AxisVerdict{Classified: External, Confidence: 0.85, Source: SourceEndpointInference}
	case envNone:
		return AxisVerdict{Classified: External, Confidence: 0.55, Source: SourceEndpointInference}
	}
	return AxisVerdict{Classified: External, Confidence: 0.65, Source: SourceEndpointInference}
}

// serverZone is serverZone of the command's identity, cached per command
// line.
func (c *compiled) serverZone(cmd string) (string, float64) {
	if v, ok := c.idZones.Load(cmd); ok {
		z := v.(idZone)
		return z.zone, z.conf
	}
	z, conf := serverZone(serverIdentity(cmd))
	if z == "" && commandService(cmd) != "" {
		// A service's host among the server's arguments: the store,
		// site or tenant it serves.
		z, conf = External, 0.9
	}
	c.idZones.Store(cmd, idZone{z, conf})
	return z, conf
}

type idZone struct {
	zone string
	conf float64
}

// commandZone finds URLs on a command line ("… postgresql://db.corp/x")
// and returns the most external zone among their hosts.
func (c *compiled) commandZone(cmd string) (string, float64) {
	zone, conf := "", 0.0
	for rest := cmd; ; {
		i := strings.Index(rest, "://")
		if i < 0 {
			break
		}
		start := i
		for start > 0 && isSchemeByte(rest[start-1]) {
			start--
		}
		end := i + 3
		for end < len(rest) && rest[end] != ' ' && rest[end] != '"' && rest[end] != '\'' {
			end++
		}
		if z, cf := c.urlZone(rest[start:end]); z != "" && rank(AxisBoundary, z) >= rank(AxisBoundary, zone) {
			zone, conf = z, 0.9*cf
		}
		rest = rest[end:]
	}
	return zone, conf
}

func isSchemeByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '+' || b == '-' || b == '.'
}

// urlZone places an absolute URL; "" if s is not one with a host.
func (c *compiled) urlZone(s string) (string, float64) {
	scheme, host, ok := splitURL(s)
	if !ok {
		return "", 0
	}
	switch strings.ToLower(scheme) {
	case "file", "data", "unix":
		return Local, 0.9
	}
	if host == "" {
		return "", 0
	}
	if !strings.Contains(host, ".") && !strings.Contains(host, ":") && !strings.EqualFold(host, "localhost") &&
		!networkScheme(scheme) {
		// "res://scenes/main.tscn", "app://settings": an
		// application's own scheme names a resource, not a host on
		// the local network.
		return "", 0
	}
	return c.hostZone(host)
}

// networkScheme reports whether URLs of scheme name a host on a network:
// the web's, databases', queues', file transfer's and object stores' (a
// bucket's name, "s3://bucket/key", is a single label and the internet's).
// Other schemes' single-label "hosts" are an application's resource names.
func networkScheme(scheme string) bool {
	switch strings.ToLower(scheme) {
	case "s3", "s3a", "s3n", "gs", "gcs", "az", "abfs", "abfss", "wasb", "wasbs", "adl", "oss", "cos", "r2", "b2",
		"swift", "hdfs", "webhdfs", "webdav", "webdavs", "dav", "davs", "ipfs", "ipns", "irc", "ircs", "xmpp",
		"sip", "sips", "rtsp", "rtmp", "rtmps", "gopher", "ssh2", "scp":
		return true
	case "http", "https", "ws", "wss", "ftp", "ftps", "sftp", "ssh", "git", "svn", "rsync", "smb", "nfs",
		"postgres", "postgresql", "mysql", "mariadb", "sqlserver", "mssql", "jdbc", "mongodb", "mongodb+srv",
		"redis", "rediss", "memcached", "amqp", "amqps", "mqtt", "mqtts", "kafka", "nats", "ldap", "ldaps",
		"smtp", "smtps", "imap", "imaps", "pop3", "tcp", "udp", "grpc", "grpcs", "telnet", "vnc", "rdp",
		"clickhouse", "neo4j", "bolt", "cassandra", "couchbase", "etcd", "consul", "docker", "oci":
		return true
	}
	return false
}

// splitURL returns the scheme and host of scheme://[user@]host[:port]/…,
// without the allocations of url.Parse.
func splitURL(s string) (scheme, host string, ok bool) {
	i := strings.Index(s, "://")
	if i <= 0 {
		if strings.HasPrefix(s, "data:") || strings.HasPrefix(s, "file:") {
			return s[:4], "", true
		}
		return "", "", false
	}
	scheme = s[:i]
	for j := 0; j < len(scheme); j++ {
		if !isSchemeByte(scheme[j]) {
			return "", "", false
		}
	}
	rest := s[i+3:]
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		rest = rest[:j]
	}
	if j := strings.LastIndexByte(rest, '@'); j >= 0 {
		rest = rest[j+1:]
	}
	if strings.HasPrefix(rest, "[") {
		if j := strings.IndexByte(rest, ']'); j > 0 {
			return scheme, rest[1:j], true
		}
		return "", "", false
	}
	if j := strings.IndexByte(rest, ','); j >= 0 {
		// mongodb://h1,h2/…: the first host stands for the set.
		rest = rest[:j]
	}
	if j := strings.LastIndexByte(rest, ':'); j >= 0 {
		rest = rest[:j]
	}
	return scheme, rest, true
}

// clientStateWords name what a client keeps on this host about the
// services it reaches: its contexts, connections and profiles.
var clientStateWords = wordSet("context", "contexts", "connection", "connections", "profile", "profiles")

// mayStayOnHost reports whether a tool may be answered on this host
// whatever service its server fronts: it computes over its arguments,
// ships guidance, reads the client's own state, manages the browser, or
// nothing says what it does.
func mayStayOnHost(k *call) bool {
	return computes(k.lex.nameVerb) || guidanceTool(k.desc) || anyIn(k.name, clientStateWords) ||
		k.browserMgmt || k.lex.action == ""
}

// localConfigWords name a client's configuration files on this host.
var localConfigWords = wordSet("kubeconfig", "dotenv")

// reasoningWords name tools that compute over their arguments alone.
var reasoningWords = wordSet("think", "thinking", "sequentialthinking", "thought", "thoughts", "reasoning",
	"scratchpad", "calculator", "arithmetic")

func reasoningTool(name []string) bool { return anyIn(name, reasoningWords) }

// localStoreEngines are embedded databases: a file on this host.
var localStoreEngines = wordSet("sqlite", "sqlite3", "duckdb", "leveldb", "lmdb")

// computeVerbs work a result out of their arguments; a server may do it
// without calling anything.
var computeVerbs = wordSet("convert", "validate", "format", "parse", "calculate", "compute", "lint", "diff",
	"transform", "estimate")

func computes(nameVerb string) bool {
	_, base := verbOf(nameVerb)
	return computeVerbs[base]
}

// guidanceWords describe what a server can answer from what it ships.
var guidanceWords = wordSet("practices", "guidance", "instructions", "schema", "schemas", "tutorial", "tutorials",
	"guide", "guides", "documentation", "docs", "examples", "template", "templates", "boilerplate", "recommendations")

func guidanceTool(ws []string) bool {
	for _, w := range ws {
		if guidanceWords[w] {
			return true
		}
	}
	return false
}

// localStores follow "local" in a description that places the data on
// this host ("from the local cache", "in the local library").
var localStores = wordSet("cache", "library", "storage", "store", "database", "db", "file", "files", "disk",
	"machine", "filesystem", "index", "copy", "workspace", "directory", "folder", "checkout", "clone", "memory")

// movingVerbs take local data elsewhere: "upload a local file" is not Local.
var movingVerbs = wordSet("upload", "uploads", "send", "sends", "publish", "publishes", "sync", "syncs", "push",
	"pushes", "share", "shares", "post", "posts", "submit", "submits", "deploy", "deploys", "import", "imports",
	"attach", "attaches")

// describesLocal reports whether description words place what the tool
// reads or changes on this host: "local" before a store, "locally", "on
// this machine", and nothing that carries it elsewhere.
func describesLocal(ws []string) bool {
	local := false
	for i, w := range ws {
		switch {
		case movingVerbs[w]:
			return false
		case w == "locally" || w == "offline":
			local = true
		case w == "local" && i+1 < len(ws) && localStores[ws[i+1]],
			// "the local notebook library", "the local project cache"
			w == "local" && i+2 < len(ws) && localStores[ws[i+2]]:
			local = true
		case w == "this" && i+1 < len(ws) && (ws[i+1] == "machine" || ws[i+1] == "host" || ws[i+1] == "computer") && i > 0 && ws[i-1] == "on":
			local = true
		case w == "memory" && i > 0 && ws[i-1] == "in",
			// "in memory", "in-memory": the server's own store.
			(w == "working" || w == "current") && i+1 < len(ws) && ws[i+1] == "directory",
			(w == "network" || w == "internet") && i > 0 && (ws[i-1] == "no" || ws[i-1] == "without"):
			local = true
		}
	}
	return local
}

// describesRemote is describesExternal without the page words: a local
// tool's "target webpage" is the page a local browser shows.
func describesRemote(ws []string) bool {
	for i, w := range ws {
		if externalServices[w] && !commonWordServices[w] || w == "internet" || w == "online" ||
			w == "web" && i+1 < len(ws) && ws[i+1] == "search" ||
			w == "cloud" && i+1 < len(ws) && cloudNoun(ws[i+1]) ||
			w == "remote" && i+1 < len(ws) && ws[i+1] == "cloud" {
			return true
		}
	}
	return false
}

// cloudNoun reports whether w follows "cloud" where it names somebody's
// service ("the cloud provider", "cloud storage"), not a word or point
// cloud. (A switch, as publicTLD: no map built at start-up.)
func cloudNoun(w string) bool {
	switch w {
	case "provider", "providers", "service", "services", "storage", "account", "accounts", "api", "fleet",
		"console", "platform":
		return true
	}
	return false
}

// publicTLD reports whether a host name ending in tld is one a description
// gives for where a tool goes ("a shareable excalidraw.com link"); file
// names (".json", ".md") do not end so.
func publicTLD(tld string) bool {
	switch tld {
	case "com", "io", "ai", "dev", "net", "org", "app", "co", "cloud":
		return true
	}
	return false
}

// namesPublicHost reports whether a description's first sentence names a
// public host: a dotted word (a URL's host or a bare name) whose last
// label is a publicTLD.
func namesPublicHost(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '.' || i == 0 || !isHostByte(s[i-1]) {
			continue
		}
		// The label after this dot, if it is the last of a name.
		j := i + 1
		for j < len(s) && isHostByte(s[j]) && s[j] != '.' {
			j++
		}
		if j < len(s) && (s[j] == '.' && j+1 < len(s) && isHostByte(s[j+1]) || s[j] == '@') {
			continue // not the last label, or an e-mail's user part
		}
		if tld := s[i+1 : j]; len(tld) <= 5 && publicTLD(asciiLower(tld)) {
			return true
		}
	}
	return false
}

func isHostByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '-'
}

// asciiLower lowers a short ASCII word without allocating when it is
// already lower case.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= 'A' && s[i] <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}

// describesExternal reports whether description words say the tool
// reaches the web or a named third-party service.
func describesExternal(ws []string) bool {
	for i, w := range ws {
		if externalServices[w] && !commonWordServices[w] {
			return true
		}
		if webWords[w] {
			// "web" only as in "web search", "the web", "web page".
			if w != "web" || (i+1 < len(ws) && (ws[i+1] == "search" || ws[i+1] == "page" || ws[i+1] == "pages")) || (i > 0 && ws[i-1] == "the") {
				return true
			}
		}
	}
	return false
}

// selfTool reports whether a tool's name and description are about the
// server itself rather than what it fronts: its cache, health, log level,
// its own tools, or which object the session has made active.
func selfTool(name, desc []string) bool {
	verb := ""
	for _, w := range name {
		if k, base := verbOf(w); k != vNone {
			verb = base
			break
		}
	}
	selection := verb == "set" || verb == "select" || verb == "switch" || verb == "use"
	for i, w := range name {
		switch w {
		case "cache", "caches":
			if verb != "purge" {
				return true
			}
		case "health":
			// "get_health", "health_check": the server's own, not an
			// endpoint's or a resource's.
			own := true
			for _, o := range name {
				if k, _ := verbOf(o); k == vNone && !healthWords[o] {
					own = false
				}
			}
			if own {
				return true
			}
		case "tool", "tools", "toolset", "toolsets":
			// The server's own catalogue ("get_tool_help",
			// "getEnabledTools", "search the MCP tool catalog"),
			// not a service's tools.
			for _, o := range name {
				if o == "help" || o == "enabled" || o == "mcp" {
					return true
				}
			}
			if kd, _ := verbOf(verb); kd == vRead {
				// Searching or listing them; running one runs it.
				for _, o := range desc {
					if o == "mcp" || o == "catalog" || o == "catalogue" {
						return true
					}
				}
			}
		case "level":
			if i > 0 && (name[i-1] == "log" || name[i-1] == "logging") {
				return true
			}
		case "active", "current":
			if selection {
				return true
			}
		}
	}
	for i, w := range desc {
		switch {
		case w == "server" && i > 0 && desc[i-1] == "this",
			w == "server" && i+1 < len(desc) && (desc[i+1] == "state" || desc[i+1] == "data"),
			selection && (w == "active" || w == "future"):
			return true
		}
	}
	return false
}

var healthWords = wordSet("health", "check", "status", "system", "server", "performance")

// browserManagement reports whether a browser server's tool manages the
// browser (tabs, window, emulation, closing or listing pages) rather than
// acting on a page.
func browserManagement(name, cmd []string) bool {
	browser := false
	for _, w := range cmd {
		if browserWords[w] {
			browser = true
			break
		}
	}
	if !browser {
		return false
	}
	verb := ""
	for _, w := range name {
		if k, base := verbOf(w); k != vNone {
			verb = base
			break
		}
	}
	for _, w := range name {
		switch w {
		case "tab", "tabs", "window", "viewport", "emulate", "resize":
			return true
		case "page", "pages":
			if verb == "close" || verb == "list" || verb == "select" {
				return true
			}
		case "close":
			if len(name) <= 2 {
				return true
			}
		}
	}
	return verb == "emulate" || verb == "resize"
}

// localPhrases in a tool's description say it answers from this host:
// "no API calls", "cache-only", "the local cache", "this MCP server".
var localPhrases = [...]string{"no api call", "cache-only", "local cache", "this server", "this mcp server",
	"local library", "never query", "never calls"}

// saysLocal reports whether a description (up to its first 2 KiB) holds
// one of localPhrases.
func saysLocal(desc string) bool {
	if len(desc) > 2048 {
		desc = desc[:2048]
	}
	lower := strings.ToLower(desc)
	for _, p := range localPhrases {
		if strings.Contains(lower, p) {
			return true
		}
	}
	return false
}

// moves reports whether a name's verb carries data between this host and
// elsewhere ("sync_project", "upload_file"): what it says of a local cache
// is where the data lands.
func moves(name []string) bool {
	for _, w := range name {
		if k, base := verbOf(w); k != vNone {
			return movingVerbs[base] || base == "download" || base == "fetch" || base == "pull"
		}
	}
	return false
}
