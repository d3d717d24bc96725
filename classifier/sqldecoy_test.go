package classifier

import (
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// TestSQLDecoysNotRead: arguments the agent writes cannot make a SQL tool
// read as a Read: a data-modifying CTE (whatever precedes its DELETE), or a
// decoy SELECT beside the statement the server runs.
func TestSQLDecoysNotRead(t *testing.T) {
	b, err := NewBuiltin(Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range []string{
		`{"sql":"WITH d AS (DELETE FROM users RETURNING id) SELECT id FROM d"}`,
		`{"sql":"WITH d AS (UPDATE users SET admin = true RETURNING id) SELECT id FROM d"}`,
		`{"sql":"DROP TABLE users","query":"SELECT id FROM users"}`,
		`{"query":"SELECT id FROM users","sql":"DELETE FROM users"}`,
	} {
		d := &intercept.ActionDescriptor{Upstream: "db", ToolName: "execute_sql", ToolDescription: "Execute a SQL statement.",
			Parameters: jsontext.Value(args), TargetEndpoint: "postgres://db.internal/app"}
		v, err := b.Classify(t.Context(), d)
		if err != nil {
			t.Fatal(err)
		}
		if got := v.Axes.Get(AxisActionType).Classified; got == Read {
			t.Errorf("%s: classified Read (%.2f, %s)", args, v.Axes.Get(AxisActionType).Confidence, v.Axes.Get(AxisActionType).Source)
		}
	}
	d := &intercept.ActionDescriptor{Upstream: "db", ToolName: "execute_sql", ToolDescription: "Execute a SQL statement.",
		Parameters: jsontext.Value(`{"sql":"SELECT id FROM users WHERE id = 1"}`), TargetEndpoint: "postgres://db.internal/app"}
	if v, _ := b.Classify(t.Context(), d); v.Axes.Get(AxisActionType).Classified != Read {
		t.Errorf("a plain SELECT: %s, want Read", v.Axes.Get(AxisActionType).Classified)
	}
}
