package app

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/internal/safefile"
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
	old, err := config.ReadFile(path)
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
	if err := safefile.Replace(path, data, info.Mode().Perm()); err != nil {
		return "", fmt.Errorf("write ignore rule: %w", err)
	}
	a.log.Info("ignore rule written to the config", "file", a.path, "application", appID)
	if err := a.Reload(false); err != nil {
		a.log.Error("config reload rejected", "err", err)
		return "", fmt.Errorf("ignore rule written to %s; %w", a.path, err)
	}
	return "ignore rule added to application " + appID + " in " + a.path + "; config reloaded", nil
}
