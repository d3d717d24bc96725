package gateway

import (
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// The capabilities a client declares go with its tools/list answers to the
// inventory (intercept.Interceptor.ObserveToolsPageWith): servers list
// tools according to them.

// initCapabilities returns the capabilities the client declares in m, an
// initialize request, or nil.
func initCapabilities(m *intercept.Message) jsontext.Value {
	if c := intercept.ValidMember(m.Params, "capabilities"); c.Kind() == '{' {
		return c
	}
	return nil
}

// metaCapabilities returns the capabilities the client declares in m's
// _meta (a 2026-07-28 request), or nil.
func metaCapabilities(m *intercept.Message) jsontext.Value {
	if c := intercept.ValidMember(m.Meta, metaClientCaps); c.Kind() == '{' {
		return c
	}
	return nil
}

// clientCapabilities returns the capabilities the client of x declared:
// at its session's initialize, or in the initialize x is, or in its
// request's _meta (a 2026-07-28 request, which has no session), or nil.
// A session's server lists what its initialize declared, whatever a
// request's _meta says: taking the _meta's, a client pinned a capability
// set with a list its server had not made for it
// (TestAttackCapabilitySetMetaInSession). Nor does a request of an
// earlier version have capabilities in its _meta: taking them, a client
// pinned a set with what a stateless server lists a client declaring
// none (TestAttackCapabilitySetMetaOldEra). An exchange made to ask the
// interceptor a question (aggregator.ownsTask) has no messages.
func (x *exchange) clientCapabilities() jsontext.Value {
	if x.sess != nil {
		return x.sess.caps
	}
	if !x.batch && len(x.msgs) == 1 {
		if c := metaCapabilities(x.msgs[0]); c != nil && isModern(x.version) {
			return c
		}
		if x.msgs[0].Method == "initialize" {
			return initCapabilities(x.msgs[0])
		}
	}
	return nil
}
