package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/driftwatch/driftwatch/clusters"
	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/config/manifest"
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
	// From is a folder of manifests (or a manifest file, or a chart's
	// .tgz) to start from: the starter gets a source of it instead of the
	// example application (see config.InspectStarterFolder); "" keeps the
	// example.
	From string
	// Namespace is the namespace of From's namespaced objects that set
	// none (a chart's release namespace); it needs From.
	Namespace string
}

// Init is `driftwatch init`: it reads the kubeconfig's contexts and prints
// (or writes to o.OutputFile) a commented starter config with one cluster per
// context and one example application, which Check accepts. An existing
// output file is never overwritten without o.Force.
//
// With o.From, the manifests there are rendered once first: Init reports
// on Stderr how many objects of which kinds they hold, and fails naming
// the folder when they do not render. The source's path is written
// relative to the output file's folder (to the current folder when the
// config is printed).
func Init(ctx context.Context, o InitOptions, env Env) error {
	if o.Namespace != "" {
		if o.From == "" {
			return UsageError("init: --namespace %s: it is the namespace of the --from manifests: pass --from too", o.Namespace)
		}
		if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
			return UsageError("init: --namespace %q: %s", o.Namespace, strings.Join(errs, "; "))
		}
	}
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
	opts := config.StarterOptions{KubeconfigPath: kubeconfigPath, Contexts: o.Contexts, Namespace: o.Namespace}
	if o.From != "" {
		from, err := config.InspectStarterFolder(ctx, o.From, o.Namespace, manifest.Self())
		if err != nil {
			return fmt.Errorf("init: --from %w", err)
		}
		if opts.FromPath, err = starterPath(o.From, o.OutputFile); err != nil {
			return fmt.Errorf("init: --from %s: %w", o.From, err)
		}
		if strings.Contains(opts.FromPath, "${") {
			return fmt.Errorf("init: --from %s: a source path cannot hold ${ (the config reads it as ${cluster...}): rename the folder", o.From)
		}
		opts.From = from
		reportFrom(env.Stderr, from, o.Namespace)
	}
	starter, err := config.Starter(kc, opts)
	if err != nil {
		return fmt.Errorf("init: kubeconfig %s: %w", where, err)
	}
	if opts.From != nil && opts.From.Overlays != nil {
		reportOverlays(env.Stderr, kc, o.Contexts, opts.From.Overlays)
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

// starterPath returns the path a config written to outputFile ("" or "-":
// printed) names the folder from by: relative to the config's folder (the
// current folder when printed), unless from is absolute.
func starterPath(from, outputFile string) (string, error) {
	if filepath.IsAbs(from) {
		return filepath.Clean(from), nil
	}
	if outputFile == "" || outputFile == "-" {
		return filepath.Clean(from), nil
	}
	absFrom, err := filepath.Abs(from)
	if err != nil {
		return "", err
	}
	base, err := filepath.Abs(filepath.Dir(outputFile))
	if err != nil {
		return "", err
	}
	return filepath.Rel(base, absFrom)
}

// reportFrom says on w what the --from manifests render to, and where
// their objects without a namespace go.
func reportFrom(w io.Writer, f *config.StarterFolder, namespace string) {
	kind := f.Kind
	if f.Overlays != nil {
		kind = "kustomize overlays"
	}
	for _, r := range f.Renders {
		where := f.Path
		if r.Location != "." {
			where = filepath.Join(f.Path, r.Location)
		}
		fmt.Fprintf(w, "driftwatch: %s (%s): %s\n", where, kind, r.Summary())
	}
	switch ns := f.SourceNamespace(namespace); {
	case namespace != "" && ns == "":
		fmt.Fprintf(w, "driftwatch: --namespace %s left out: every namespaced object of %s sets its namespace\n", namespace, f.Path)
	case ns == "" && f.Kind != "helm" && f.Unnamespaced() > 0:
		fmt.Fprintf(w, "driftwatch: %s: %d namespaced objects set no namespace: they go to default (pass --namespace)\n", f.Path, f.Unnamespaced())
	}
}

// reportOverlays names on w the clusters whose overlay the starter could
// not guess from their context names.
func reportOverlays(w io.Writer, kc *clientcmdapi.Config, contexts, overlays []string) {
	if contexts == nil {
		for name := range kc.Contexts {
			contexts = append(contexts, name)
		}
		slices.Sort(contexts)
	}
	var unknown []string
	for _, c := range contexts {
		if config.StarterOverlay(c, overlays) == "" && !slices.Contains(unknown, c) {
			unknown = append(unknown, c)
		}
	}
	switch {
	case len(unknown) == 0:
	case len(unknown) == len(contexts):
		fmt.Fprintf(w, "driftwatch: no context name holds an overlay's name (%s): set each cluster's %s label, then uncomment the source\n",
			strings.Join(overlays, ", "), config.StarterEnvLabel)
	default:
		noun := "context"
		if len(unknown) > 1 {
			noun = "contexts"
		}
		fmt.Fprintf(w, "driftwatch: %s %s: no overlay guessed from the name: set the cluster's %s label to one of %s\n",
			noun, strings.Join(unknown, ", "), config.StarterEnvLabel, strings.Join(overlays, ", "))
	}
}
