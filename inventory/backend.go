package inventory

import (
	"context"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// Backend keeps the signed snapshot documents of a Store. The Store signs
// what it puts and verifies what it gets, so a Backend need not be
// trusted; it must be safe for concurrent use.
type Backend interface {
	// Get returns the document of kind for upstream, or an error wrapping
	// fs.ErrNotExist if there is none.
	Get(kind Kind, upstream string) ([]byte, error)
	// Put replaces the document of kind for upstream.
	Put(kind Kind, upstream string, doc []byte) error
	// PutIfAbsent stores doc unless a document of kind for upstream is
	// kept already, and then returns that document instead (nil when doc
	// was stored). Two gateways pinning an upstream first at the same
	// time agree on one pin this way.
	PutIfAbsent(kind Kind, upstream string, doc []byte) (kept []byte, err error)
	// List returns the upstreams with a document of kind, in any order.
	List(kind Kind) ([]string, error)
	// Remove deletes the document of kind for upstream, if any.
	Remove(kind Kind, upstream string) error
	// Where names the place of a document for messages: a file name, a
	// Redis key and field.
	Where(kind Kind, upstream string) string
}

// Watcher is a Backend that tells when another process changed a document
// (OpenRedisBackend's does); Inventory.Watch uses it.
type Watcher interface {
	// Watch calls changed for every document another writer put, until
	// ctx is done, and resync whenever notifications may have been missed
	// (on every (re)connection). It returns ctx's error, or why it cannot
	// watch.
	Watch(ctx context.Context, changed func(kind Kind, upstream string), resync func()) error
}

// FileBackend keeps each document in a file:
// <dir>/pinned/<upstream>.json and <dir>/observed/<upstream>.json (see
// Store for how the upstream name is written), replaced atomically, mode
// 0600. Processes sharing dir share the snapshots, but learn of another's
// change only when they next read it (at start).
func FileBackend(dir string) Backend { return fileBackend(dir) }

type fileBackend string

func (d fileBackend) Where(kind Kind, upstream string) string {
	return filepath.Join(string(d), string(kind), fileName(upstream))
}

func (d fileBackend) Get(kind Kind, upstream string) ([]byte, error) {
	return os.ReadFile(d.Where(kind, upstream))
}

func (d fileBackend) Put(kind Kind, upstream string, doc []byte) error {
	return writeFileAtomic(d.Where(kind, upstream), doc)
}

func (d fileBackend) PutIfAbsent(kind Kind, upstream string, doc []byte) ([]byte, error) {
	kept, err := os.ReadFile(d.Where(kind, upstream))
	if err == nil {
		return kept, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return nil, d.Put(kind, upstream, doc)
}

func (d fileBackend) List(kind Kind) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(string(d), string(kind)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || strings.HasPrefix(n, ".") || !strings.HasSuffix(n, ".json") {
			continue
		}
		up, err := url.PathUnescape(strings.TrimSuffix(n, ".json"))
		if err != nil || fileName(up) != n {
			continue // not a name this backend writes
		}
		names = append(names, up)
	}
	return names, nil
}

func (d fileBackend) Remove(kind Kind, upstream string) error {
	err := os.Remove(d.Where(kind, upstream))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
