package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/user"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/internal/invisible"
)

// runApprovals is the operator's side of held calls:
//
//	sluice approvals list
//	sluice approvals approve ID [--by alice]
//	sluice approvals decline ID
//
// The admin address and token come from --admin and --token, else
// SLUICE_ADMIN_TOKEN, else the gateway's config (--config, default
// ./sluice.yaml): its admin_listen, its admin_token or the token the
// gateway generated in its data_dir.
func runApprovals(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlagSet("approvals")
	ac := adminFlags(fs)
	by := fs.String("by", osUser(), "who decides, recorded with the decision (with an admin JWT as --token, its subject is recorded instead)")
	if len(args) == 0 {
		return usageErrorf("approvals: want list, approve ID or decline ID")
	}
	verb := args[0]
	if isHelp(verb) {
		return &helpError{fs}
	}
	switch verb {
	case "list", "approve", "decline":
	default:
		return usageErrorf("approvals: unknown verb %q (want list, approve or decline)", verb)
	}
	fs.Init("approvals "+verb, flag.ContinueOnError)
	rest := args[1:]
	var id string
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		id, rest = rest[0], rest[1:]
	}
	if err := parseFlags(fs, rest); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("approvals %s: unexpected argument %q", verb, fs.Arg(0))
	}
	if verb == "list" && id != "" {
		return usageErrorf("approvals list: unexpected argument %q (list takes no ID; approve ID or decline ID answer one)", id)
	}
	admin, token, err := ac.resolve()
	if err != nil {
		return err
	}
	base := admin + "/admin/approvals"
	switch verb {
	case "list":
		var reqs []approval.Request
		if err := adminCall(ctx, http.MethodGet, base, token, nil, &reqs); err != nil {
			return err
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		// ALSO SENT is what the call sends the upstream beside its
		// arguments (_meta and other members), bound to the approval:
		// the operator approves it too.
		fmt.Fprintln(tw, "ID\tSTATUS\tAGENT\tUPSTREAM/TOOL\tARGUMENTS\tALSO SENT\tEXPIRES")
		for _, r := range reqs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s/%s\t%s\t%s\t%s\n", inert(r.ID), inert(string(r.Status)), inertName(r.Agent), inert(r.Upstream), inert(r.Tool),
				inert(heldJSON(r.Arguments)), inert(heldJSON(r.Extra)), r.Expires.Format(time.RFC3339))
		}
		return tw.Flush()
	case "approve", "decline":
		if id == "" {
			return usageErrorf("approvals %s: want an approval ID", verb)
		}
		if strings.TrimSpace(*by) == "" {
			return usageErrorf("approvals %s: --by names who decides, recorded with the decision (no user name found)", verb)
		}
		body, _ := json.Marshal(map[string]string{"action": verb, "by": *by})
		var r approval.Request
		if err := adminCall(ctx, http.MethodPost, base+"/"+id, token, body, &r); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s %s: %s/%s by %s\n", inert(r.ID), inert(string(r.Status)), inert(r.Upstream), inert(r.Tool), inert(r.DecidedBy))
		return nil
	}
	return nil
}

// heldJSON is a held call's arguments or other members as the list shows
// them: "-" once the request is finished (the gateway drops what it held
// then) or when there are none.
func heldJSON(v jsontext.Value) string {
	if len(v) == 0 || string(v) == "null" {
		return "-"
	}
	return string(v)
}

func adminCall(ctx context.Context, method, url, token string, body []byte, into any) error {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(string(body)))
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("admin API: %w (is admin_listen set in the gateway's config?)", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if resp.StatusCode == http.StatusUnauthorized {
		return fmt.Errorf("admin API: %s: %s: pass --config with the gateway's config (its data_dir holds the generated %s), --token, or set $SLUICE_ADMIN_TOKEN",
			resp.Status, strings.TrimSpace(string(b)), adminTokenFile)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("admin API: %s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	return json.Unmarshal(b, into)
}

// inert is s as a terminal shows it harmlessly: quoted, control characters
// and tabs escaped, when it holds any (names and arguments are the
// agent's to choose; a row must not erase or forge another), and
// characters that show as nothing spelt out too ("ali\uFE0Fce", which
// strconv.Quote keeps as it is, reads as alice).
func inert(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return r == '\t' || !unicode.IsPrint(r) && r != ' ' || invisible.Is(r) }) < 0 {
		return s
	}
	return invisible.SpellOut(strconv.Quote(s))
}

// inertName is inert for an agent's name, which is quoted too when it
// has white space a reader would not see as it is (invisible.Name), as
// the console shows it: "alice " must not pass for alice.
func inertName(s string) string {
	if q := invisible.Name(s); q != s {
		return invisible.SpellOut(q)
	}
	return inert(s)
}

// osUser is who runs the CLI: $USER, else the account's name.
func osUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return ""
}
