package transport

import (
	"runtime"
	"strings"
)

// defaultInheritedEnv is what the official MCP SDKs' stdio clients
// (TypeScript getDefaultEnvironment, Python get_default_environment)
// pass a server they start when its config gives no environment.
var defaultInheritedEnv = map[string][]string{
	"windows": {"APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PROCESSOR_ARCHITECTURE",
		"PROGRAMFILES", "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "USERNAME", "USERPROFILE"},
	"": {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"},
}

// DefaultInheritedEnv returns the names of the environment variables a
// stdio upstream inherits when its [StdioDialer.InheritEnv] is nil: on
// POSIX systems HOME, LOGNAME, PATH, SHELL, TERM and USER, the set the
// official MCP SDKs' stdio clients pass.
func DefaultInheritedEnv() []string {
	if names, ok := defaultInheritedEnv[runtime.GOOS]; ok {
		return append([]string(nil), names...)
	}
	return append([]string(nil), defaultInheritedEnv[""]...)
}

// InheritedByDefault reports whether name is one of [DefaultInheritedEnv]
// (ignoring case on Windows, whose environment does).
func InheritedByDefault(name string) bool {
	for _, n := range DefaultInheritedEnv() {
		if n == name || (runtime.GOOS == "windows" && strings.EqualFold(n, name)) {
			return true
		}
	}
	return false
}

// inheritedEnv keeps the entries of environ, KEY=VALUE as os.Environ
// gives them, whose key inherit accepts; nil inherit is
// [InheritedByDefault]. As the SDKs do, a default variable whose value
// starts with "()" is dropped: that is a shell function exported by
// bash, not a setting.
func inheritedEnv(environ []string, inherit func(string) bool) []string {
	byDefault := inherit == nil
	if byDefault {
		inherit = InheritedByDefault
	}
	var env []string
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || !inherit(k) {
			continue
		}
		if byDefault && strings.HasPrefix(v, "()") {
			continue
		}
		env = append(env, kv)
	}
	return env
}
