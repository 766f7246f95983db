package app

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/driftwatch/driftwatch/clusters"
	"github.com/driftwatch/driftwatch/config"
)

// InitOptions are the settings of Init (the flags of driftwatch init).
type InitOptions struct {
	// Kubeconfig is the kubeconfig file to read; "" reads the default one
	// as kubectl does: the files of $KUBECONFIG, merged, else
	// ~/.kube/config.
	Kubeconfig string
	// Contexts are the contexts to make clusters of; nil means every one.
	Contexts []string
	// OutputFile is the file to write; "" and "-" print the starter on
	// stdout.
	OutputFile string
	// Force overwrites an existing OutputFile.
	Force bool
}

// Init is `driftwatch init`: it reads the kubeconfig's contexts and prints
// (or writes to o.OutputFile) a commented starter config with one cluster per
// context and one example application, which Check accepts. An existing
// output file is never overwritten without o.Force.
func Init(o InitOptions, env Env) error {
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: o.Kubeconfig}
	where := o.Kubeconfig
	kubeconfigPath := ""
	if o.Kubeconfig == "" {
		files, fromEnv := clusters.DefaultKubeconfigFiles(env.Getenv)
		if len(files) == 0 {
			return errors.New("init: no kubeconfig: neither $KUBECONFIG nor HOME is set (pass --kubeconfig)")
		}
		rules.Precedence = files
		where = strings.Join(files, string(filepath.ListSeparator))
		if fromEnv {
			where = "$KUBECONFIG (" + where + ")"
		}
	} else {
		abs, err := filepath.Abs(o.Kubeconfig)
		if err != nil {
			return fmt.Errorf("init: --kubeconfig %s: %w", o.Kubeconfig, err)
		}
		kubeconfigPath = abs
	}
	kc, err := rules.Load()
	if err != nil {
		return fmt.Errorf("init: kubeconfig %s: %w", where, err)
	}
	starter, err := config.Starter(kc, config.StarterOptions{KubeconfigPath: kubeconfigPath, Contexts: o.Contexts})
	if err != nil {
		return fmt.Errorf("init: kubeconfig %s: %w", where, err)
	}
	if o.OutputFile == "" || o.OutputFile == "-" {
		_, err := env.Stdout.Write(starter)
		return err
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if o.Force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(o.OutputFile, flags, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("init: %s exists: pass --force to overwrite it", o.OutputFile)
	}
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	_, err = f.Write(starter)
	if err = errors.Join(err, f.Close()); err != nil {
		return fmt.Errorf("init: write %s: %w", o.OutputFile, err)
	}
	fmt.Fprintf(env.Stderr, "driftwatch: starter config written to %s; next: driftwatch check -f %s\n", o.OutputFile, o.OutputFile)
	return nil
}
