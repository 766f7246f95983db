package config

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/driftwatch/driftwatch/config/gitsource"
)

// gitSource reads a source's git section; nil when absent or invalid
// (reported).
func (d *decoder) gitSource(c child) *GitSource {
	if !c.set {
		return nil
	}
	g := &GitSource{Interval: DefaultGitInterval}
	file := d.filePath
	o := d.fields(c.node, c.field, c.pos, g,
		on(&g.URL, func(c child) {
			v, ok := d.str(c)
			if !ok {
				return
			}
			if err := gitsource.CheckURL(v); err != nil {
				d.errorf(c.pos, c.field, "%v", err)
				return
			}
			g.URL = v
		}),
		on(&g.Ref, func(c child) {
			v, ok := d.str(c)
			if !ok {
				return
			}
			if err := gitsource.CheckRef(v); err != nil {
				d.errorf(c.pos, c.field, "%v", err)
				return
			}
			g.Ref = v
		}),
		on(&g.Interval, func(c child) { d.pollInterval(c, &g.Interval) }),
		on(&g.Timeout, func(c child) {
			if c.node == nil {
				return
			}
			if v, ok := d.duration(c); ok {
				g.Timeout = v
			}
		}),
		on(&g.Auth, func(c child) {
			a := &g.Auth
			d.fields(c.node, c.field, c.pos, a,
				on(&a.TokenFile, func(c child) { file(c, &a.TokenFile) }),
				on(&a.UsernameFile, func(c child) { file(c, &a.UsernameFile) }),
				on(&a.PasswordFile, func(c child) { file(c, &a.PasswordFile) }),
				on(&a.SSHKeyFile, func(c child) { file(c, &a.SSHKeyFile) }),
				on(&a.KnownHostsFile, func(c child) { file(c, &a.KnownHostsFile) }),
			)
			if a.TokenFile != "" && a.PasswordFile != "" && a.SSHKeyFile == "" {
				d.errorf(c.pos, c.field, "set tokenFile or passwordFile, not both")
			}
		}),
		on(&g.Verify, func(c child) {
			if !c.set {
				return
			}
			v := &GitVerify{}
			if d.fields(c.node, c.field, c.pos, v, on(&v.KeysFile, func(c child) { file(c, &v.KeysFile) })) != nil {
				g.Verify = v
			}
		}),
		on(&g.WebhookSecretFile, func(c child) { file(c, &g.WebhookSecretFile) }),
	)
	if o == nil || g.URL == "" {
		return nil
	}
	return g
}

// pollInterval reads a remote source's poll interval (a Git source's, a
// chart repository's): at least MinGitInterval; *dst keeps its default
// when the field is absent or invalid (reported).
func (d *decoder) pollInterval(c child, dst *time.Duration) {
	if c.node == nil {
		return
	}
	v, ok := d.duration(c)
	if !ok {
		return
	}
	if v < MinGitInterval {
		d.errorf(c.pos, c.field, "interval %s is too short: want at least %s", v, MinGitInterval)
		return
	}
	*dst = v
}

// filePath reads a field naming a file beside the config (a credentials
// file, a CA bundle, a key): not empty, `~` and variables expanded, made
// absolute; *dst is left as it is when the field is absent or invalid
// (reported).
func (d *decoder) filePath(c child, dst *string) {
	v, ok := d.str(c)
	if !ok || v == "" {
		if c.set && (ok || c.node == nil) {
			d.errorf(c.pos, c.field, "must not be empty")
		}
		return
	}
	p, err := d.expandPath(v)
	if err != nil {
		d.errorf(c.pos, c.field, "%v", err)
		return
	}
	*dst = p
}

// GitOptions returns the gitsource options of a Git source for a cache
// folder.
func (g GitSource) GitOptions(cacheDir string) gitsource.Options {
	o := gitsource.Options{URL: g.URL, Ref: g.Ref, CacheDir: cacheDir, Timeout: g.Timeout,
		Auth: gitsource.Auth{TokenFile: g.Auth.TokenFile, UsernameFile: g.Auth.UsernameFile, PasswordFile: g.Auth.PasswordFile,
			SSHKeyFile: g.Auth.SSHKeyFile, KnownHostsFile: g.Auth.KnownHostsFile}}
	if g.Verify != nil {
		o.Verify = &gitsource.Verify{KeysFile: g.Verify.KeysFile}
	}
	return o
}

// HasGitSources reports whether any source of the config comes from Git,
// or from a chart repository (helm.repo): a source whose new revisions
// the hub fetches and loads.
func (c *Config) HasGitSources() bool {
	for _, s := range c.Sources {
		if s.Git != nil || s.Helm != nil && s.Helm.Repo != "" {
			return true
		}
	}
	return false
}

// checkoutGitSources gives every Git source its checkout through
// LoadOptions.GitCheckout, before the sources are rendered. A source
// whose checkout fails is reported at its git field (a fault of the
// source under IsolateSources); without the hook, every Git source is an
// error of the file.
func (d *decoder) checkoutGitSources() {
	for i := range d.cfg.Sources {
		s := &d.cfg.Sources[i]
		if s.Helm != nil && s.Helm.Repo != "" {
			d.pullChart(i)
			continue
		}
		if s.Git == nil {
			continue
		}
		at := d.srcs[i].git
		if d.opts.GitCheckout == nil {
			d.errorf(at.pos, at.field, "git sources need a hub or check/diff to fetch them (%s)", s.Git.URL)
			continue
		}
		co, err := d.opts.GitCheckout(d.cfg.Hub, s.ID, *s.Git)
		if err != nil {
			d.sourceFault(i, at, "%v", err)
			continue
		}
		if co.Dir == "" || !filepath.IsAbs(co.Dir) {
			d.sourceFault(i, at, "git checkout of %s: folder %q is not absolute", s.Git.URL, co.Dir)
			continue
		}
		s.checkout = &co
	}
}

// gitPath resolves a path of a Git source (relative, variables expanded)
// inside its checkout.
func (s Source) gitPath(field, p string) (string, error) {
	if s.checkout == nil {
		return "", &pathError{field: field, msg: fmt.Sprintf("git %s has no checkout", s.Git.URL)}
	}
	out, err := gitsource.SafePath(s.checkout.Dir, p)
	if err != nil {
		return "", &pathError{field: field, msg: fmt.Sprintf("%s in %s: %v", p, s.Git.URL, err)}
	}
	return out, nil
}

// pullChart gives source i, whose chart comes from a repository, the
// version to render through LoadOptions.ChartPull, as checkoutGitSources
// gives a Git source its checkout.
func (d *decoder) pullChart(i int) {
	s := &d.cfg.Sources[i]
	at := d.fieldOf(d.srcs[i], "helm.repo")
	if d.opts.ChartPull == nil {
		d.errorf(at.pos, at.field, "charts from a repository need a hub or check/diff to pull them (%s)", s.Helm.Repo)
		return
	}
	co, err := d.opts.ChartPull(d.cfg.Hub, s.ID, *s.Helm)
	if err != nil {
		d.sourceFault(i, at, "%v", err)
		return
	}
	if co.Archive == "" || !filepath.IsAbs(co.Archive) {
		d.sourceFault(i, at, "chart %s from %s: archive %q is not absolute", s.Helm.Chart, s.Helm.Repo, co.Archive)
		return
	}
	s.checkout = &co
}
