package classifier

import "strings"

// envKind is what the names of a stdio upstream's environment say of the
// server as a whole (UpstreamConfig.EnvNames).
type envKind uint8

const (
	// envUnknown: the operator's environment for it is not known.
	envUnknown envKind = iota
	// envNone: known, and naming neither a credential nor a service's
	// address or account (only paths, log levels, limits, a kubeconfig).
	envNone
	// envService: a service's address or account (_URL, _HOST, _REGION,
	// a _PASSWORD), with no credential of the kind an API takes: the
	// server reaches something, which may be on this host (a loopback
	// database's URL and password).
	envService
	// envCredential: a credential an API takes (_API_KEY, _TOKEN,
	// _SECRET, _PAT, _CREDENTIALS).
	envCredential
)

// envNamesKind reads the names of the variables the operator gives a
// server, the most telling first: a credential, then an address.
func envNamesKind(names []string) envKind {
	kind := envNone
	for _, n := range names {
		switch k := envNameKind(n); {
		case k == envCredential:
			return k
		case k == envService:
			kind = k
		}
	}
	return kind
}

// envNameKind reads one variable's name: its words ("AMAP_MAPS_API_KEY":
// amap, maps, api, key), the last of which names what it holds.
func envNameKind(name string) envKind {
	ws := strings.FieldsFunc(strings.ToLower(name), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
	if len(ws) == 0 {
		return envNone
	}
	for _, w := range ws {
		switch w {
		case "secret", "credentials", "credential", "apikey":
			// XERO_CLIENT_SECRET, GOOGLE_APPLICATION_CREDENTIALS,
			// GDRIVE_CREDENTIALS_PATH.
			return envCredential
		}
	}
	switch ws[len(ws)-1] {
	case "key", "token", "pat":
		// _API_KEY, _ACCESS_KEY, _ACCESS_TOKEN, GITHUB_PAT; not
		// MAX_TOKENS (a model's budget).
		return envCredential
	case "password", "passwd", "pwd", "user", "username", "url", "uri", "host", "hostname", "endpoint", "addr",
		"address", "server", "domain", "dsn", "region", "project", "tenant", "account", "workspace", "org",
		"organization", "site", "instance":
		// A password is what a database takes too, and a URL may be
		// loopback: where the service is, the name does not say.
		return envService
	}
	return envNone
}

// credentialFlag reports whether a command line gives the server an API
// credential as a flag: --api-key X, --token=X, --accessToken X,
// --clarity_api_token=X. Flag names only; values are never looked at.
func credentialFlag(cmd string) bool {
	for rest := cmd; rest != ""; {
		i := strings.IndexByte(rest, ' ')
		f := rest
		if i >= 0 {
			f, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		if len(f) < 2 || f[0] != '-' {
			continue
		}
		if j := strings.IndexByte(f, '='); j >= 0 {
			f = f[:j]
		}
		if flagEndsWith(f, "apikey") || flagEndsWith(f, "token") || flagEndsWith(f, "secret") {
			return true
		}
	}
	return false
}

// flagEndsWith reports whether flag, with its dashes and underscores
// left out and ASCII case folded, ends with word (lower case).
func flagEndsWith(flag, word string) bool {
	j := len(word)
	for i := len(flag) - 1; i >= 0 && j > 0; i-- {
		b := flag[i]
		if b == '-' || b == '_' {
			continue
		}
		if b >= 'A' && b <= 'Z' {
			b += 'a' - 'A'
		}
		j--
		if b != word[j] {
			return false
		}
	}
	return j == 0
}

// serverCredential is what the operator's configuration says of a stdio
// upstream's server as a whole: a credential (in its environment or on
// its command line), no service at all, or not known.
func (c *compiled) serverCredential(upstream, cmd string) envKind {
	kind := c.envs[upstream]
	if kind != envCredential && credentialFlag(cmd) {
		return envCredential
	}
	return kind
}
