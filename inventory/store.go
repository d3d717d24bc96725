package inventory

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// FileFormat identifies the snapshot file format in its "format" member.
const FileFormat = "sluice.inventory.snapshot/v1"

// signatureAlg is the only signature algorithm of FileFormat.
const signatureAlg = "Ed25519"

// Kind tells the two snapshots kept per upstream apart. Each is stored in
// a directory named after it.
type Kind string

const (
	// Pinned is the approved inventory that later lists are compared with.
	Pinned Kind = "pinned"
	// Observed is the latest complete tools/list, kept so that drift and
	// blocks survive a restart.
	Observed Kind = "observed"
)

// Errors that Store.Load wraps, inside a *LoadError.
var (
	// ErrUnsigned: the file has no signature.
	ErrUnsigned = errors.New("snapshot is not signed")
	// ErrBadSignature: the signature does not verify with the store's
	// key: the file was changed after signing, or another key signed it.
	ErrBadSignature = errors.New("snapshot signature does not verify")
	// ErrCorrupt: the file is not a well-formed snapshot of the upstream
	// and kind asked for.
	ErrCorrupt = errors.New("snapshot file is corrupt")
)

// LoadError describes a snapshot file that could not be used.
type LoadError struct {
	Path     string
	Upstream string
	Kind     Kind
	Err      error
}

func (e *LoadError) Error() string {
	return fmt.Sprintf("inventory: %s snapshot of upstream %q (%s): %v", e.Kind, e.Upstream, e.Path, e.Err)
}

func (e *LoadError) Unwrap() error { return e.Err }

// Store keeps signed snapshots as JSON files, one per upstream and kind:
// <dir>/pinned/<upstream>.json and <dir>/observed/<upstream>.json, where
// the upstream name is kept as is if it consists of ASCII letters, digits,
// '-', '_' and non-leading '.', and other bytes are written as %XX.
//
// A file is a JSON object:
//
//	{
//	  "format": "sluice.inventory.snapshot/v1",
//	  "kind": "pinned",
//	  "snapshot": {"upstream": "demo", "hash": "…", "created_at": "…", "tools": [{"name": …, "hash": …}, …]},
//	  "signature": {"alg": "Ed25519", "key_id": "ed25519:…", "value": "<base64>"}
//	}
//
// A pinned snapshot also has "capability_sets" (each client capability set
// a list was pinned under, to the names it listed) and an observed one
// "listed_with" (the set of the client whose list it is); see capsets.go.
//
// signature.value is the standard base64 (padded) Ed25519 signature of the
// RFC 8785 form of the object without its "signature" member. Since the
// signature covers the canonical form, reformatting a file does not break
// it, while any change of content does.
//
// Files are written atomically (temporary file, fsync, rename) with mode
// 0600. A Store is safe for concurrent use by one process; two processes
// saving the same file race, and the last rename wins.
//
// The documents can be kept elsewhere than in files (NewBackendStore): in
// Redis, shared by every replica (OpenRedisBackend); they are signed and
// verified the same way wherever they are kept.
type Store struct {
	be    Backend
	key   ed25519.PrivateKey
	pub   ed25519.PublicKey
	keyID string
}

// NewStore returns a store in dir that signs with key and verifies with its
// public half. dir is created on first save.
func NewStore(dir string, key ed25519.PrivateKey) *Store {
	return NewBackendStore(FileBackend(dir), key)
}

// NewBackendStore returns a store that keeps its documents in be, signs
// with key and verifies with its public half.
func NewBackendStore(be Backend, key ed25519.PrivateKey) *Store {
	pub := key.Public().(ed25519.PublicKey)
	return &Store{be: be, key: key, pub: pub, keyID: KeyID(pub)}
}

// KeyID returns the id of the key the store signs with.
func (s *Store) KeyID() string { return s.keyID }

// Path returns where the snapshot of kind for upstream is kept: a file
// name, or the Redis key and field.
func (s *Store) Path(kind Kind, upstream string) string { return s.be.Where(kind, upstream) }

type snapshotFile struct {
	Format    string         `json:"format"`
	Kind      Kind           `json:"kind"`
	Snapshot  jsontext.Value `json:"snapshot"`
	Signature *fileSignature `json:"signature,omitzero"`
}

type fileSignature struct {
	Alg   string `json:"alg"`
	KeyID string `json:"key_id"`
	Value string `json:"value"`
}

// signedBytes returns what the signature of f covers.
func (f *snapshotFile) signedBytes() ([]byte, error) {
	b, err := json.Marshal(snapshotFile{Format: f.Format, Kind: f.Kind, Snapshot: f.Snapshot})
	if err != nil {
		return nil, err
	}
	return canonical(b)
}

// Save signs snap and writes it as the snapshot of kind for its upstream.
func (s *Store) Save(kind Kind, snap *Snapshot) error {
	out, err := s.encode(kind, snap)
	if err != nil {
		return err
	}
	if err := s.be.Put(kind, snap.Upstream, out); err != nil {
		return fmt.Errorf("inventory: saving %s snapshot of %q: %w: %w", kind, snap.Upstream, ErrStoreUnavailable, err)
	}
	return nil
}

// encode returns the signed document of snap as the snapshot of kind.
func (s *Store) encode(kind Kind, snap *Snapshot) ([]byte, error) {
	if snap.Upstream == "" {
		return nil, errors.New("inventory: snapshot without an upstream name")
	}
	body, err := json.Marshal(snap)
	if err != nil {
		return nil, fmt.Errorf("inventory: encoding snapshot: %w", err)
	}
	f := snapshotFile{Format: FileFormat, Kind: kind, Snapshot: body}
	msg, err := f.signedBytes()
	if err != nil {
		return nil, fmt.Errorf("inventory: encoding snapshot: %w", err)
	}
	f.Signature = &fileSignature{
		Alg:   signatureAlg,
		KeyID: s.keyID,
		Value: base64.StdEncoding.EncodeToString(ed25519.Sign(s.key, msg)),
	}
	out, err := json.Marshal(f, jsontext.WithIndent("  "))
	if err != nil {
		return nil, fmt.Errorf("inventory: encoding snapshot: %w", err)
	}
	return append(out, '\n'), nil
}

// SaveFirst saves snap as the snapshot of kind for its upstream unless
// one is kept already, and returns the snapshot kept: snap, or the one
// that was there (another replica's first pin), verified. A kept document
// that fails verification is not replaced: its *LoadError is returned.
func (s *Store) SaveFirst(kind Kind, snap *Snapshot) (*Snapshot, error) {
	doc, err := s.encode(kind, snap)
	if err != nil {
		return nil, err
	}
	kept, err := s.be.PutIfAbsent(kind, snap.Upstream, doc)
	if err != nil {
		return nil, fmt.Errorf("inventory: saving %s snapshot of %q: %w: %w", kind, snap.Upstream, ErrStoreUnavailable, err)
	}
	if kept == nil {
		return snap, nil
	}
	got, err := s.decode(kind, snap.Upstream, kept)
	if err != nil {
		return nil, &LoadError{Path: s.Path(kind, snap.Upstream), Upstream: snap.Upstream, Kind: kind, Err: err}
	}
	return got, nil
}

// Load reads and verifies the snapshot of kind for upstream. A missing
// document is an error wrapping fs.ErrNotExist; one that fails
// verification is a *LoadError wrapping ErrUnsigned, ErrBadSignature or
// ErrCorrupt.
func (s *Store) Load(kind Kind, upstream string) (*Snapshot, error) {
	b, err := s.be.Get(kind, upstream)
	if err != nil {
		return nil, fmt.Errorf("inventory: %w", err)
	}
	snap, err := s.decode(kind, upstream, b)
	if err != nil {
		return nil, &LoadError{Path: s.Path(kind, upstream), Upstream: upstream, Kind: kind, Err: err}
	}
	return snap, nil
}

func (s *Store) decode(kind Kind, upstream string, b []byte) (*Snapshot, error) {
	var f snapshotFile
	if err := json.Unmarshal(b, &f, json.RejectUnknownMembers(true)); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if f.Format != FileFormat {
		return nil, fmt.Errorf("%w: format %q, want %q", ErrCorrupt, f.Format, FileFormat)
	}
	if f.Kind != kind {
		return nil, fmt.Errorf("%w: kind %q, want %q", ErrCorrupt, f.Kind, kind)
	}
	if f.Signature == nil {
		return nil, fmt.Errorf("%w; only snapshots written by the gateway are trusted, "+
			"re-pin with: sluice inventory pin %s", ErrUnsigned, upstream)
	}
	if f.Signature.Alg != signatureAlg {
		return nil, fmt.Errorf("%w: algorithm %q, want %q", ErrBadSignature, f.Signature.Alg, signatureAlg)
	}
	if f.Signature.KeyID != s.keyID {
		return nil, fmt.Errorf("%w: signed by key %s, this gateway's key is %s; "+
			"if the key was replaced on purpose, re-pin with: sluice inventory pin %s",
			ErrBadSignature, f.Signature.KeyID, s.keyID, upstream)
	}
	sig, err := base64.StdEncoding.Strict().DecodeString(f.Signature.Value)
	if err != nil {
		return nil, fmt.Errorf("%w: signature value: %v", ErrBadSignature, err)
	}
	msg, err := f.signedBytes()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if !ed25519.Verify(s.pub, msg, sig) {
		return nil, fmt.Errorf("%w with key %s: the file was changed after the gateway signed it; "+
			"review it and re-pin with: sluice inventory pin %s", ErrBadSignature, s.keyID, upstream)
	}
	// The file is indented, and a tool's schemas and annotations are kept
	// as raw JSON: compacted, they are byte for byte what was listed, so
	// a drift diff compares them by value, not by the file's whitespace.
	if err := f.Snapshot.Compact(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	var snap Snapshot
	if err := json.Unmarshal(f.Snapshot, &snap, json.RejectUnknownMembers(true)); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if snap.Upstream != upstream {
		return nil, fmt.Errorf("%w: snapshot of upstream %q in the file of %q", ErrCorrupt, snap.Upstream, upstream)
	}
	if err := snap.verify(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return &snap, nil
}

// List returns the upstreams that have a snapshot of kind, sorted.
func (s *Store) List(kind Kind) ([]string, error) {
	names, err := s.be.List(kind)
	if err != nil {
		return nil, fmt.Errorf("inventory: %w", err)
	}
	slices.Sort(names)
	return names, nil
}

// Remove deletes the snapshot of kind for upstream; a missing one is not
// an error.
func (s *Store) Remove(kind Kind, upstream string) error {
	if err := s.be.Remove(kind, upstream); err != nil {
		return fmt.Errorf("inventory: %w", err)
	}
	return nil
}

// fileName maps an upstream name to a file name; see Store.
func fileName(upstream string) string {
	var b strings.Builder
	for i := 0; i < len(upstream); i++ {
		c := upstream[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.' && i > 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String() + ".json"
}

// writeFileAtomic replaces path with data so that a crash leaves either
// the old or the new file, never a torn one.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-*") // mode 0600
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	// Make the rename itself durable.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
