package telemetry

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAttackParameterPairsKept: AWS CloudFormation (the CLI, the SDKs,
// and the MCP servers over them) takes a stack's parameters as
// {"ParameterKey": "DbPassword", "ParameterValue": "…"}; the name/value
// pairs redacted were name/key/header/field… beside value/val/content,
// so a stack's password parameter reached the record whole.
func TestAttackParameterPairsKept(t *testing.T) {
	const secret = "Zx8pQ2mN7vR4tL9k"
	args := `{"StackName":"db","Parameters":[{"ParameterKey":"DbPassword","ParameterValue":"` + secret + `"},{"ParameterKey":"Size","ParameterValue":"small"}]}`
	kept := Redactor{KeepArguments: true}.Arguments([]byte(args))
	b, _ := json.Marshal(kept.Value)
	if strings.Contains(string(b), secret) || !strings.Contains(string(b), "small") {
		t.Errorf("kept arguments: %s; want the password parameter redacted, the size kept", b)
	}
	other := strings.ReplaceAll(args, secret, "0000000000000000")
	if h1, h2 := (Redactor{}).Arguments([]byte(args)).SHA256, (Redactor{}).Arguments([]byte(other)).SHA256; h1 != h2 || h1 != kept.SHA256 {
		t.Errorf("arguments_sha256 depends on the password (%s vs %s, decoded %s)", h1, h2, kept.SHA256)
	}
}
