package recommend

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
)

// ErrWidens refuses a change meant to tighten the policy (ELEVATE_CLASS,
// SPLIT_CLASS) that would let an agent do more than before. A class added
// to a tool is a class rules match: under default: deny a destructive tool
// no rule names is denied, and the class an agent's shaped arguments had
// the classifier find for it (vcs:read) may be one an allow rule takes.
// Such a change is not proposed, and not applied.
var ErrWidens = errors.New("the change would let an agent do more than before")

// classChanged returns the tool keys whose classes r changes, for the
// types that add classes to tools.
func classChanged(r Recommendation) []string {
	switch {
	case r.Type == ElevateClass && len(r.Change.Path) == 2:
		return r.Change.Path[1:]
	case r.Type == SplitClass:
		if v, ok := r.Change.Value.(map[string]any); ok {
			return toStrings(v["tools"])
		}
	}
	return nil
}

// unlistedAgent stands in widens for every agent without a manifest of
// its own.
const unlistedAgent = "sluice.recommend/any-other-agent"

// widens returns an error wrapping ErrWidens if a call of one of tools,
// by r's agent, an agent with a manifest or any other agent, with no
// arguments, gets a more permissive verdict under after than under
// before: deny before require_approval before allow. Such a call tells
// nothing of a rule's condition, which the calls the agent makes may
// meet (a repo argument, its principal, a Read classification its shaped
// arguments get) and the probe does not (a condition that fails denies
// it both ways): a tool a rule with a condition can match once its
// classes change is refused too, the change being one nobody can tell
// is no wider.
func widens(before, after *policy.Policy, r Recommendation, manifests map[string]Manifest, tools []string) error {
	agents := []string{unlistedAgent}
	if r.Agent != "" {
		agents = append(agents, r.Agent)
	}
	for a := range manifests {
		if a != anyAgent {
			agents = append(agents, a)
		}
	}
	// A bare key's classes are the tool's on every upstream, and a rule
	// may name one (upstream: docs): each such upstream is probed too.
	upstreams := []string{""}
	for _, p := range []*policy.Policy{before, after} {
		for _, u := range p.Upstreams() {
			if !slices.Contains(upstreams, u) {
				upstreams = append(upstreams, u)
			}
		}
	}
	for _, key := range tools {
		if upstream, tool, pinned := strings.Cut(key, "/"); pinned {
			if err := widensOn(before, after, r, agents, key, upstream, tool); err != nil {
				return err
			}
			continue
		}
		for _, upstream := range upstreams {
			if err := widensOn(before, after, r, agents, key, upstream, key); err != nil {
				return err
			}
		}
	}
	return nil
}

// widensOn is widens for tool on upstream ("" for none the policies
// name), named key in r, called by each of agents.
func widensOn(before, after *policy.Policy, r Recommendation, agents []string, key, upstream, tool string) error {
	if after.Conditional(upstream, tool) {
		return fmt.Errorf("recommendation %s: a rule with a condition can match %s, which a check without the calls' arguments, principal and classification cannot explore: %w", r.ID, key, ErrWidens)
	}
	method := "tools/call"
	switch {
	case strings.HasPrefix(tool, intercept.ResourcePrefix):
		method = "resources/read"
	case strings.HasPrefix(tool, intercept.PromptPrefix):
		method = "prompts/get"
	}
	rank := map[intercept.Verdict]int{intercept.Deny: 0, intercept.RequireApproval: 1, intercept.Allow: 2}
	for _, a := range agents {
		d := func() *intercept.ActionDescriptor {
			return &intercept.ActionDescriptor{Method: method, ToolName: tool, Upstream: upstream, Agent: a,
				SessionID: "sluice.recommend", Parameters: jsontext.Value("{}")}
		}
		was := intercept.Decide(context.Background(), before, d())
		now := intercept.Decide(context.Background(), after, d())
		if rank[now.Verdict] > rank[was.Verdict] {
			who := "an agent without a manifest"
			if a != unlistedAgent {
				who = a
			}
			on := ""
			if upstream != "" && !strings.Contains(key, "/") {
				on = " on " + upstream
			}
			return fmt.Errorf("recommendation %s: %s's %s%s would be %s (was %s): %w", r.ID, who, key, on, now.Verdict, was.Verdict, ErrWidens)
		}
	}
	return nil
}
