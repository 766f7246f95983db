package app

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/driftwatch/driftwatch/config"
)

// WriteIgnoreRule adds rule (YAML as tui.ProposeIgnoreRule returns it) to
// the ignore list of application appID in the config file, keeping every
// other line, and reloads. The edited file is validated before it replaces
// the old one, by a rename in the same folder (a symbolic link to the
// config stays a link: its target is replaced). It returns a status
// message.
func (a *App) WriteIgnoreRule(appID, rule string) (string, error) {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	path, err := filepath.EvalSymlinks(a.path)
	if err != nil {
		return "", fmt.Errorf("write ignore rule: %w", err)
	}
	info, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("write ignore rule: %w", err)
	}
	old, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("write ignore rule: %w", err)
	}
	data, err := config.AddIgnoreRule(a.path, old, appID, rule)
	if err != nil {
		return "", fmt.Errorf("write ignore rule: %w", err)
	}
	if _, err := config.Parse(a.path, data, a.loadOpts); err != nil {
		return "", fmt.Errorf("write ignore rule: the edited config would be rejected, %s left as it was:\n%w", a.path, err)
	}
	if err := replaceFile(path, data, info.Mode().Perm()); err != nil {
		return "", fmt.Errorf("write ignore rule: %w", err)
	}
	a.log.Info("ignore rule written to the config", "file", a.path, "application", appID)
	if err := a.Reload(false); err != nil {
		a.log.Error("config reload rejected", "err", err)
		return "", fmt.Errorf("ignore rule written to %s; %w", a.path, err)
	}
	return "ignore rule added to application " + appID + " in " + a.path + "; config reloaded", nil
}

// replaceFile writes data to a new file next to path and renames it over
// path, so readers see the old file or the new one, never a part.
func replaceFile(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
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
		_ = os.Remove(tmp)
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
