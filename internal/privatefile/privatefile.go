// Package privatefile makes a database file the gateway keeps readable by
// its own account only, whatever the directory it lives in allows.
//
//	if err := privatefile.Prepare(path); err != nil {
//		return err
//	}
//	db, err := sql.Open("sqlite", path)
package privatefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Prepare creates path, empty and 0600, if it does not exist, and takes
// group and other permissions off it, and off its SQLite -wal, -shm and
// -journal files, if it does. SQLite creates a database 0644 (and its
// -wal and -shm files as the database is), so a data_dir that already
// existed with 0755 (one made by hand or by a package) let every account
// on the host read what the gateway keeps there.
func Prepare(path string) error {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	f.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm", path + "-journal"} {
		info, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if perm := info.Mode().Perm(); perm&0o077 != 0 {
			if err := os.Chmod(p, perm&^0o077); err != nil {
				return fmt.Errorf("%s is readable by other accounts and its mode could not be changed: %w", p, err)
			}
		}
	}
	return nil
}
