package policy

import (
	"fmt"
	"strings"
	"testing"
)

// The case-variant check runs for every rule whose condition is evaluated,
// on arguments the agent chooses: it must look only where the condition
// reads, not walk (and allocate for) every nested object of a large
// argument once per rule.
func TestCaseVariantWalksOnlyWhereRead(t *testing.T) {
	env, err := newCELEnv()
	if err != nil {
		t.Fatal(err)
	}
	c, err := compileCondition(env, `has(args.path) && args.path.startsWith("/etc/")`, DefaultCostLimit)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(`{"path": "/tmp/x", "blob": {`)
	for i := range 2000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d": {"a": 1, "b": {"c": 2}}`, i)
	}
	b.WriteString(`}}`)
	args, err := decodeArgs([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.caseVariant(args); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(5, func() { _ = c.caseVariant(args) }); n > 0 {
		t.Errorf("caseVariant allocated %v times on objects the condition does not read", n)
	}
	// Still found where it reads.
	bad, _ := decodeArgs([]byte(`{"PATH": "/etc/shadow", "blob": {"k": {"PATH": 1}}}`))
	if c.caseVariant(bad) == nil {
		t.Error("PATH where args.path is read was not refused")
	}
}
