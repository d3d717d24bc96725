package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/sluicehq/sluice/auth"
)

// runKeys is `sluice keys create|list|revoke`.
func runKeys(_ context.Context, args []string, out io.Writer) error {
	fs := newFlagSet("keys")
	cfgPath := fs.String("config", "", "config file whose data_dir (or auth.api_keys.file) holds the keys")
	file := fs.String("file", "", "the key file (overrides --config)")
	agent := fs.String("agent", "", "create: the agent the key authenticates as")
	expires := fs.Duration("expires", 0, "create: how long the key is valid, such as 720h (default: until revoked)")
	asJSON := fs.Bool("json", false, "list: JSON output")
	if len(args) == 0 {
		return usageErrorf("keys: name a subcommand: create, list or revoke")
	}
	verb := args[0]
	if isHelp(verb) {
		return &helpError{fs}
	}
	switch verb {
	case "create", "list", "revoke":
	default:
		return usageErrorf("keys: unknown subcommand %q (want create, list or revoke)", verb)
	}
	fs.Init("keys "+verb, flag.ContinueOnError)
	var pos []string
	rest := args[1:]
	for {
		if err := parseFlags(fs, rest); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	path := *file
	// A key made for a config whose gateway asks for none: the key file
	// filled up and every agent went on unauthenticated, nothing said.
	var unasked string
	if path == "" {
		cfg := &config{}
		if *cfgPath != "" {
			var err error
			if cfg, err = loadConfig(*cfgPath); err != nil {
				return err
			}
			if cfg.Auth == nil || !cfg.Auth.Mode.Has(auth.ModeAPIKey) {
				unasked = fmt.Sprintf("# note: %s's auth: does not take api_key, so its gateway does not ask for this key; set auth: {mode: api_key} (or list api_key among its modes)\n", *cfgPath)
			}
		}
		var err error
		if path, err = cfg.keyFile(); err != nil {
			return err
		}
	}
	now := time.Now()
	switch verb {
	case "create":
		if *agent == "" || len(pos) > 0 {
			return errors.New("keys create: give --agent NAME (and nothing else)")
		}
		tok, k, err := auth.CreateKey(path, *agent, *expires, now)
		if err != nil {
			return fmt.Errorf("keys create: %w", err)
		}
		fmt.Fprintf(out, "%s\n", tok)
		exp := "never"
		if k.Expires != nil {
			exp = k.Expires.Format(time.RFC3339)
		}
		fmt.Fprintf(out, "# id %s, agent %s, expires %s; shown once: send it as Authorization: Bearer <key>\n", k.ID, k.Agent, exp)
		fmt.Fprint(out, unasked)
	case "list":
		if len(pos) > 0 {
			return usageErrorf("keys list: unexpected argument %q", pos[0])
		}
		keys, err := auth.ListKeys(path)
		if err != nil {
			return err
		}
		if *asJSON {
			enc := json.NewEncoder(out)
			enc.SetIndent("", "  ")
			return enc.Encode(keys)
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tAGENT\tSTATUS\tCREATED\tEXPIRES")
		for _, k := range keys {
			exp := "-"
			if k.Expires != nil {
				exp = k.Expires.Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", k.ID, k.Agent, k.Status(now), k.Created.Format(time.RFC3339), exp)
		}
		return tw.Flush()
	case "revoke":
		if len(pos) != 1 {
			return usageErrorf("keys revoke: give one key ID (see sluice keys list), got %d", len(pos))
		}
		k, err := auth.RevokeKey(path, pos[0], now)
		if err != nil {
			return fmt.Errorf("keys revoke: %w", err)
		}
		fmt.Fprintf(out, "revoked %s (agent %s)\n", k.ID, k.Agent)
	}
	return nil
}
