package inventory

// EventType names what an Event reports. The values follow the
// sluice.<what> naming of the audit events.
type EventType string

const (
	// EventPinned: a snapshot became the pinned inventory of an upstream,
	// on first sight or by Pin, or a pin held was saved again in a store
	// that had lost it. Detail: hash, tools, and first_seen or restored.
	EventPinned EventType = "sluice.inventory_pinned"
	// EventApproved: an operator approved the current version of a tool
	// (Tool set) or of all tools (Tool empty). Detail: pinned_hash,
	// tool_hash or hash.
	EventApproved EventType = "sluice.inventory_approved"
	// EventDrift: a tool differs from its pinned version; one event per
	// tool and new version. Detail: change (added, removed, changed),
	// fields, pinned_hash, observed_hash, diff (human-readable), blocked.
	// A listing records at most maxRefreshEvents drift and poisoning
	// events of an upstream; one more of each type, with Tool empty and
	// Detail not_recorded and reason, counts the rest.
	EventDrift EventType = "sluice.inventory_drift"
	// EventPoisoning: the scan found something in a tool's description or
	// schemas; one event per finding and tool version. Detail: rule,
	// severity, field, excerpt, tool_hash. For a listed prompt, resource
	// or resource template (Tool prompt:NAME, resource:URI,
	// resource_template:TEMPLATE) or server instructions (Tool empty),
	// item_hash, method and withheld instead of tool_hash. A listed answer
	// records at most maxListingEvents of them; one more, with rule
	// findings_not_recorded and not_recorded, counts the rest.
	EventPoisoning EventType = "sluice.tool_poisoning"
	// EventCollision: tools of one name are offered by more than one
	// upstream. Tool is the name; Upstream is the upstream whose list
	// revealed it. Detail: upstreams.
	EventCollision EventType = "sluice.tool_collision"
	// EventSnapshotRejected: a stored snapshot failed verification (missing
	// or bad signature, corrupt file). Detail: kind, path, error.
	EventSnapshotRejected EventType = "sluice.inventory_snapshot_rejected"
	// EventInvalidList: a tools/list result could not be used. Detail:
	// error.
	EventInvalidList EventType = "sluice.inventory_invalid_list"
	// EventStoreError: a snapshot could not be saved; the in-memory state
	// still changed. Detail: kind, error.
	EventStoreError EventType = "sluice.inventory_store_error"
)

// Event is something the inventory noticed. Detail values are strings,
// numbers, booleans and []string, so that any JSON encoder can write them.
type Event struct {
	Type     EventType
	Upstream string
	Tool     string // empty when the event is about the whole upstream
	Detail   map[string]any
}

// EventSink receives the inventory's events. Emit is called synchronously
// from the method that caused the event, never while the inventory holds a
// lock, so it may call back into the inventory; it should return quickly.
type EventSink interface {
	Emit(Event)
}

// EventFunc adapts a function to EventSink.
type EventFunc func(Event)

// Emit calls f(e).
func (f EventFunc) Emit(e Event) { f(e) }

var _ EventSink = EventFunc(nil)
