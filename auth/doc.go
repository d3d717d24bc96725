// Package auth authenticates the agents that call the gateway: API keys
// issued by `sluice keys`, JWT bearer tokens from an external identity
// provider (Sluice is an OAuth 2.1 resource server), and TLS client
// certificates. Whoever authenticates becomes an [intercept.Principal] in
// the request's context, and the gateway takes it as the agent: the name
// a client gives itself no longer decides which rules, memory and
// approvals apply to it.
//
//	a, err := auth.New(auth.Config{Mode: auth.Modes{auth.ModeJWT}, JWT: auth.JWTConfig{
//		Issuer: "https://idp.example/realms/agents", Audience: []string{"https://sluice.example/mcp"},
//		JWKSURL: "https://idp.example/realms/agents/protocol/openid-connect/certs"}}, auth.Deps{})
//	if err != nil { ... }
//	http.ListenAndServe(addr, a.Middleware(g.Handler()))
//
// The package reads package intercept only; the gateway never imports it.
package auth
