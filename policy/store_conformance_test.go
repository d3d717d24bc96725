package policy_test

import (
	"testing"

	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/policy/storetest"
)

func TestMemoryStoreConformance(t *testing.T) {
	storetest.Run(t, policy.NewMemoryStore(policy.MemoryOptions{}))
}
