package classifier

import (
	"path"
	"strings"
)

// What a stdio server is, read from the command that starts it.
//
// A local MCP server is usually one of two things: a tool that acts on
// this host (files, shells, git checkouts, local databases, desktop apps,
// language servers) or a client of somebody's API that happens to run
// here (GitHub, Notion, Stripe, a cloud). Where a call goes is decided by
// the second far more often than its openWorldHint or its words admit, so
// the server's identity — the npm package, the Go module, the program — is
// read first: its package words name a third-party service (External), or
// a local capability (Local). A server that names neither is taken to
// front a remote API, with a confidence below the high band: most
// published servers do, but the guess is a prior, not evidence.
//
// The word sets are general knowledge of services and capabilities, not
// lists of the corpus's servers (testdata/corpus/README.md).

// serverIdentity returns the package words of a stdio command line: the
// npm package npx runs (its scope and name), the path of a Go module `go
// run` builds (without the host), the program otherwise; a `sh -c` script
// is read for its first command.
func serverIdentity(cmd string) string {
	f := strings.Fields(cmd)
	// "exec npx …", "env A=b npx …", "A=b npx …": the program comes after.
	for len(f) > 0 && (f[0] == "exec" || f[0] == "env" || strings.Contains(f[0], "=")) {
		f = f[1:]
	}
	if len(f) == 0 {
		return ""
	}
	prog := path.Base(f[0])
	args := f[1:]
	switch prog {
	case "sh", "bash":
		for i, a := range args {
			if a == "-c" && i+1 < len(args) {
				script := strings.Trim(strings.Join(args[i+1:], " "), `'"`)
				// The last command of the script is the server ("mkdir …; npx …").
				if j := strings.LastIndexAny(script, ";&|"); j >= 0 {
					script = script[j+1:]
				}
				return serverIdentity(script)
			}
		}
		return ""
	case "npx", "bunx", "pnpx", "uvx", "pipx":
		pkg := ""
		for i := 0; i < len(args); i++ {
			a := args[i]
			switch {
			case a == "-p" || a == "--package":
				if i+1 < len(args) && !strings.HasPrefix(args[i+1], "node-linux") && !strings.HasPrefix(args[i+1], "node@") {
					pkg = args[i+1]
				}
				i++
			case strings.HasPrefix(a, "--package="):
				pkg = strings.TrimPrefix(a, "--package=")
			case strings.HasPrefix(a, "-"):
			default:
				if pkg == "" {
					pkg = a
				}
				i = len(args)
			}
		}
		return stripVersion(pkg)
	case "go":
		for _, a := range args {
			if strings.Contains(a, ".") && strings.Contains(a, "/") && !strings.HasPrefix(a, "-") {
				mod := stripVersion(a)
				if _, rest, ok := strings.Cut(mod, "/"); ok { // drop the host
					return rest
				}
				return mod
			}
		}
		return ""
	case "node", "python", "python3", "deno", "bun":
		for _, a := range args {
			if !strings.HasPrefix(a, "-") {
				return strings.TrimSuffix(path.Base(a), path.Ext(a))
			}
		}
		return ""
	case "docker", "podman":
		// docker run [flags] IMAGE: the image is the identity.
		for i := len(args) - 1; i > 0; i-- {
			if args[i-1] != "-e" && args[i-1] != "-v" && !strings.HasPrefix(args[i], "-") && strings.Contains(args[i], "/") {
				return stripVersion(args[i])
			}
		}
		return prog
	}
	return prog
}

// stripVersion drops "@1.2.3" (not the scope's "@") and ":tag".
func stripVersion(pkg string) string {
	if i := strings.LastIndex(pkg, "@"); i > 0 {
		pkg = pkg[:i]
	}
	if i := strings.LastIndex(pkg, ":"); i > 0 && !strings.Contains(pkg[i:], "/") {
		pkg = pkg[:i]
	}
	return pkg
}

// localCapabilities are words of a server's identity naming what acts on
// this host.
var localCapabilities = wordSet(
	// files and documents on disk
	"filesystem", "fs", "file", "files", "directory", "pdf", "docx", "xlsx", "excel", "csv", "markdown", "obsidian",
	// shells, processes, terminals
	"shell", "terminal", "bash", "zsh", "powershell", "command", "commander", "exec", "process", "desktop", "tmux", "ssh",
	// version control working copies, local stores
	"git", "sqlite", "duckdb", "memory", "knowledge",
	// developer tooling on this machine
	"lsp", "language", "gopls", "eslint", "lint", "linter", "vitest", "jest", "pytest", "debugger", "nodejs", "node",
	"nx", "xcode", "android", "ios", "simulator", "adb", "device", "mobile", "emulator",
	// desktop applications and the OS
	"apple", "macos", "mac", "osascript", "applescript", "automator", "reminders", "windows", "clipboard", "screenshot",
	"keyboard", "mouse", "godot", "unity", "blender", "ableton", "roblox", "excalidraw",
	// pure computation
	"thinking", "sequential", "time", "calculator", "math", "everything")

var docWords = wordSet("docs", "doc", "documentation", "reference")

// serverZone places a stdio server by its identity: a named third-party
// service is External, a local capability Local; "" if it names neither.
func serverZone(identity string) (zone string, conf float64) {
	if identity == "" {
		return "", 0
	}
	ws := words(nil, identity)
	for _, w := range ws {
		if externalServices[w] {
			return External, 0.9
		}
	}
	for _, w := range ws {
		if docWords[w] {
			// "apple-docs", "android-docs": documentation about a
			// platform, published by its vendor, not the platform
			// on this host.
			return "", 0
		}
	}
	for _, w := range ws {
		if localCapabilities[w] {
			return Local, 0.85
		}
	}
	return "", 0
}
