package terraform

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Versions of the tools scripts/build-binaries.sh builds; keep them in step
// with the script, which names its cache folder after them (ToolsStamp).
const (
	// TofuVersion is the OpenTofu release the build script builds.
	TofuVersion = "v1.12.6"
	// LocalProviderVersion is the hashicorp/local provider release the
	// build script puts in its filesystem mirror.
	LocalProviderVersion = "v1.4.0"
	// ToolsStamp names the tools' folder in driftwatch's binaries cache.
	ToolsStamp = "tofu-" + TofuVersion + "_local-" + LocalProviderVersion
	// EnvToolsDir overrides the tools folder (scripts/test.sh sets it).
	EnvToolsDir = "DRIFTWATCH_TOFU_DIR"
)

// ToolsDir returns the folder of the tools scripts/build-binaries.sh
// builds (bin/tofu, mirror/, tofurc): $DRIFTWATCH_TOFU_DIR, else
// ToolsStamp in driftwatch's binaries cache ($XDG_CACHE_HOME/driftwatch,
// else ~/.cache/driftwatch). getenv nil means os.Getenv.
func ToolsDir(getenv func(string) string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	if d := getenv(EnvToolsDir); d != "" {
		return d
	}
	cache := getenv("XDG_CACHE_HOME")
	if cache == "" {
		home := getenv("HOME")
		if home == "" {
			return ""
		}
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "driftwatch", ToolsStamp)
}

// CLIConfig returns the tofu CLI config file of the tools folder, which
// installs providers from its filesystem mirror only; "" when the tools
// are not built.
func CLIConfig(getenv func(string) string) string {
	d := ToolsDir(getenv)
	if d == "" {
		return ""
	}
	p := filepath.Join(d, "tofurc")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// ErrBinaryMissing is wrapped by FindBinary's error when no binary is found.
var ErrBinaryMissing = errors.New("binary missing")

// FindBinary resolves a workspace's binary setting: an absolute path is
// used as is; "terraform" is looked up in $PATH; "" and "tofu" mean tofu
// from the binaries cache (ToolsDir), else from $PATH.
func FindBinary(binary string, getenv func(string) string) (string, error) {
	switch binary {
	case "", "tofu":
		if d := ToolsDir(getenv); d != "" {
			p := filepath.Join(d, "bin", "tofu")
			if isExecutable(p) {
				return p, nil
			}
		}
		p, err := exec.LookPath("tofu")
		if err != nil {
			return "", fmt.Errorf("%w: tofu is neither in %s nor in $PATH (build it with scripts/build-binaries.sh tofu)",
				ErrBinaryMissing, filepath.Join(ToolsDir(getenv), "bin"))
		}
		return p, nil
	case "terraform":
		p, err := exec.LookPath("terraform")
		if err != nil {
			return "", fmt.Errorf("%w: terraform is not in $PATH", ErrBinaryMissing)
		}
		return p, nil
	}
	if !isExecutable(binary) {
		return "", fmt.Errorf("%w: %s is not an executable file", ErrBinaryMissing, binary)
	}
	return binary, nil
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}
