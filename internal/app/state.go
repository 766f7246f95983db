package app

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/hub/intent"
	"github.com/driftwatch/driftwatch/internal/safefile"
)

// errNoStatePath is returned when hub.stateFile is unset and there is no
// default folder for it.
var errNoStatePath = errors.New("hub.stateFile: no default state file (neither XDG_STATE_HOME nor HOME is an absolute folder): set hub.stateFile to a path, or to none to keep no state")

// StateFile resolves where a hub keeps its intent: hub.stateFile, else
// the default path for the hub id ($XDG_STATE_HOME/driftwatch/<id>.db);
// "" when it is none (memory only).
func StateFile(cfg *config.Config, getenv func(string) string) (string, error) {
	switch cfg.Hub.StateFile {
	case config.StateFileNone:
		return "", nil
	case "":
		if p := intent.DefaultPath(getenv, cfg.Hub.ID); p != "" {
			return p, nil
		}
		return "", errNoStatePath
	}
	return cfg.Hub.StateFile, nil
}

// openState opens the hub's state file (see package intent: it is locked
// while open, and a corrupt file is an error, never reset). Its folder is
// checked first (created 0700 when missing; an existing one keeps its mode
// and must be this user's, writable by nobody else, not a symbolic link;
// see package safefile), since other private files of the hub may live
// there too.
func openState(path string) (hub.IntentStore, error) {
	if err := safefile.MkdirPrivate(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("state folder: %w", err)
	}
	s, err := intent.Open(path, intent.Options{})
	if err != nil {
		return nil, err
	}
	return s, nil
}
