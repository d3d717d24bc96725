// Package inventory keeps a signed, pinned inventory of the tools behind
// each upstream and notices when they change.
//
// Every tools/list result the gateway passes on is handed to
// Inventory.ObserveTools, and so is the gateway's own listing of an
// upstream's tools before a call from a client that listed none (see
// intercept.ToolsLister), so calls are screened against what the upstream
// serves now. The tools (name, title, description, input and
// output schema, annotations, icons, execution, _meta, and the members
// MCP does not define, kept together as Tool.Unknown) become a Snapshot, hashed with SHA-256 over
// RFC 8785 canonical JSON per tool and per snapshot; the snapshot hash is
// the tool_inventory_hash that action descriptors carry (Inventory.Hash).
// Pages of a paginated list are merged until the page without nextCursor.
//
// The first complete list of an upstream is pinned (or only on Pin, with
// PinManually). A later list whose tools differ from the pin — a changed
// description, schema or annotations, a new tool, a removed tool — raises
// an EventDrift per tool and, with DriftBlock (the default), makes Blocked
// hold calls of those tools back until an operator approves the new
// version (Approve, ApproveHash) after reading Diff. This is the defence
// against "rug pulls": a server approved with one tool definition that
// later serves another.
//
// Servers list tools according to the capabilities the client declared,
// so the pin keeps the names listed under each capability set
// (CapabilitySet; ObserveToolsPageWith is told the client's capabilities):
// a set's first list pins its new names, later a new name under it is
// drift and a missing one removed, while a tool of the pin that differs is
// drift whatever the set (see capsets.go).
//
// Pins made before unknown members were kept have none: the first
// complete list after an upgrade pins those its tools have, as listed,
// where a tool is otherwise as pinned (no drift); from then on a change
// of them is drift.
//
// Every tool version is also scanned for tool poisoning (Scan): hidden
// instruction blocks, concealment, instruction overrides, references to
// secrets and to other servers' tools, invisible Unicode, very long
// descriptions; the strings of its unknown members are read as its
// description is. Findings become EventPoisoning events and are available as
// risk factors (RiskFactors). Tools of one name on several upstreams are
// reported as EventCollision and listed by Collisions; the inventory never
// hides one behind the other.
//
// What else an upstream shows the model is scanned with the same rules:
// the items of prompts/list, resources/list and resources/templates/list
// (ScreenListed), not pinned, and the instructions of initialize and
// server/discover (ScreenInstructions), pinned with the tools on first
// sight (a pin without them adopts the next seen), their change drift,
// not shown with DriftBlock until the upstream's changes are approved. With
// ListingWithhold, the default, what looks poisoned is not shown, and
// Withheld refuses a later prompts/get or resources/read of it.
//
// Snapshots are stored as JSON files in the data directory, signed with
// the gateway's Ed25519 key (see Store for the format) and verified on
// load; a file that is unsigned or badly signed is rejected with an
// EventSnapshotRejected, and a rejected pin blocks its upstream until it
// is pinned again. The package starts no goroutines.
//
// Usage:
//
//	inv, err := inventory.New(inventory.Options{Dir: dataDir, Events: sink})
//	...
//	interceptor.Observer = inv                    // tools/list results, and listings to screen
//	if reason, blocked := inv.Blocked(upstream, tool); blocked {
//		// soft deny with inventory.ReasonDrift and reason
//	}
//	descriptor.ToolInventoryHash = inv.Hash(upstream)
//
// and for the operator:
//
//	d, _ := inv.Diff("github")   // sluice inventory diff github
//	fmt.Print(d)
//	inv.ApproveHash("github", "create_issue", d.Changes[0].ObservedHash)
package inventory
