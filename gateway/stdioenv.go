package gateway

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/gateway/transport"
)

// ownEnvPrefix starts the names of the sluice command's own variables
// (SLUICE_ADMIN_TOKEN): no InheritEnv pattern passes them.
const ownEnvPrefix = "SLUICE_"

// CheckInheritEnv reports an inherit_env entry that is not a variable
// name or a PREFIX* pattern, or inherit_env on an upstream that runs no
// process.
func (u *Upstream) CheckInheritEnv() error {
	if len(u.InheritEnv) > 0 && u.Command == "" {
		return errors.New("inherit_env applies only to stdio upstreams (command:); remove it")
	}
	for i, n := range u.InheritEnv {
		name := strings.TrimSuffix(n, "*")
		if strings.ContainsAny(name, "=*\x00") || (name == "" && n != "*") {
			return fmt.Errorf("inherit_env[%d]: %q is not a variable name (NAME), a prefix (PREFIX*) or \"*\"", i, n)
		}
	}
	return nil
}

// inheritEnv is the StdioDialer's InheritEnv for u: the default set, the
// names InheritEnv gives in full, and the names its patterns match but
// for the gateway's own.
func (u *Upstream) inheritEnv() func(string) bool {
	if len(u.InheritEnv) == 0 {
		return nil // the default set
	}
	names := map[string]bool{}
	var prefixes []string
	for _, n := range u.InheritEnv {
		if p, ok := strings.CutSuffix(n, "*"); ok {
			prefixes = append(prefixes, p)
		} else {
			names[n] = true
		}
	}
	withheld := map[string]bool{}
	for _, n := range u.WithholdEnv {
		withheld[n] = true
	}
	return func(name string) bool {
		if names[name] || transport.InheritedByDefault(name) {
			return true
		}
		if withheld[name] || strings.HasPrefix(name, ownEnvPrefix) {
			return false
		}
		for _, p := range prefixes {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
		return false
	}
}
