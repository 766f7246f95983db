package chartrepo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"
)

// Media types of Helm charts in OCI registries.
const (
	helmConfigMediaType = "application/vnd.cncf.helm.config.v1+json"
	helmChartMediaType  = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
	// legacyChartMediaType is what Helm 3.0-3.7 pushed.
	legacyChartMediaType = "application/tar+gzip"
)

// Bounds of what a registry sends besides the archive.
const (
	// maxManifestBytes bounds a manifest, and one page of the tag list.
	maxManifestBytes = 4 << 20
	// maxTagPages bounds the pages of one tag list (each of at most
	// maxManifestBytes; the page size is the registry's).
	maxTagPages = 1000
	// maxTags bounds the tags of one registry repository.
	maxTags = 100_000
)

// ociReference returns the registry repository of the chart.
func ociReference(u repoURL, chart string) registry.Reference {
	name := chart
	if u.ociRepo != "" {
		name = u.ociRepo + "/" + chart
	}
	return registry.Reference{Registry: u.u.Host, Repository: name}
}

// ociSource is a chart in an OCI registry.
type ociSource struct {
	r     *Repo
	tr    *http.Transport
	repo  *remote.Repository
	shown string // oci://host/path/chart
}

// newOCISource returns the source of an oci:// Repo.
func newOCISource(r *Repo, tr *http.Transport, creds *credentials) *ociSource {
	ref := ociReference(r.url, r.opts.Chart)
	scheme := schemeHTTPS
	if r.opts.PlainHTTP {
		scheme = schemeHTTP
	}
	home := hostPort(scheme, r.url.u)
	ac := &auth.Client{
		Client: newClient(tr, r.opts.Timeout, home),
		Header: http.Header{"User-Agent": {userAgent}},
		Cache:  auth.NewCache(),
	}
	if creds != nil {
		ac.Credential = auth.StaticCredential(ref.Registry, auth.Credential{Username: creds.user, Password: creds.password})
	}
	repo := &remote.Repository{
		Client:           ac,
		Reference:        ref,
		PlainHTTP:        r.opts.PlainHTTP,
		TagListMaxPages:  maxTagPages,
		MaxMetadataBytes: maxManifestBytes,
		// Tag-listing pagination can be asked for; 1000 is what most
		// registries give at most.
		TagListPageSize:    1000,
		ManifestMediaTypes: []string{ocispec.MediaTypeImageManifest},
	}
	return &ociSource{r: r, tr: tr, repo: repo, shown: "oci://" + ref.Registry + "/" + ref.Repository}
}

// close implements source.
func (s *ociSource) close() { s.tr.CloseIdleConnections() }

// registryError names what failed, with the status the registry answered
// (not its free text), or the transport error.
func (s *ociSource) registryError(what string, err error) error {
	var er *errcode.ErrorResponse
	if errors.As(err, &er) {
		if er.StatusCode == http.StatusNotFound && what == "tag list" {
			return namedErr(ErrNotFound, "chart %s not found in %s (%s: 404 Not Found)", s.r.opts.Chart, s.r.opts.URL, s.shown)
		}
		return statusError(s.shown+": "+what, er.StatusCode)
	}
	if errors.Is(err, auth.ErrBasicCredentialNotFound) {
		return kindErr(ErrUnauthorized, "%s: %s: 401 Unauthorized (the registry asks for credentials and none are configured)", s.shown, what)
	}
	var ke *kindError
	if errors.As(err, &ke) {
		return err
	}
	return fmt.Errorf("%s: %s: %w", s.shown, what, err)
}

// tagVersion is a tag that names a semantic version.
type tagVersion struct {
	tag     string // as in the registry ("1.2.3_build")
	version string // as the chart names it ("1.2.3+build")
	sv      *semver.Version
}

// resolve implements source: it lists the tags, picks the highest that
// satisfies Options.Version (as Helm does, with "_" in a tag read as
// "+"), and reads its manifest.
func (s *ociSource) resolve(ctx context.Context) (candidate, error) {
	var versions []tagVersion
	count := 0
	err := s.repo.Tags(ctx, "", func(tags []string) error {
		count += len(tags)
		if count > maxTags {
			return kindErr(ErrTooLarge, "%s: the registry lists more than %d tags", s.shown, maxTags)
		}
		for _, t := range tags {
			v := strings.ReplaceAll(t, "_", "+")
			sv, err := semver.StrictNewVersion(v)
			if err != nil || !safeVersion(v) {
				continue
			}
			versions = append(versions, tagVersion{tag: t, version: v, sv: sv})
		}
		return nil
	})
	if err != nil {
		return candidate{}, s.registryError("tag list", err)
	}
	slices.SortStableFunc(versions, func(a, b tagVersion) int { return b.sv.Compare(a.sv) })
	tv, ok := s.pick(versions)
	if !ok {
		list := make([]string, 0, min(len(versions), maxListed+1))
		for _, v := range versions[:min(len(versions), maxListed+1)] {
			list = append(list, v.version)
		}
		return candidate{}, notFoundError(s.r.opts.Chart, s.r.opts.Version, s.r.opts.URL, list)
	}
	return s.manifest(ctx, tv)
}

// pick returns the version Options.Version selects among versions
// (sorted newest first): an exact match, else the newest that satisfies
// the constraint ("" skips prereleases).
func (s *ociSource) pick(versions []tagVersion) (tagVersion, bool) {
	want := s.r.opts.Version
	if want != "" {
		for _, v := range versions {
			if v.version == want {
				return v, true
			}
		}
	}
	c := s.r.constraint
	if c == nil {
		c, _ = semver.NewConstraint("*")
	}
	for _, v := range versions {
		if c.Check(v.sv) {
			return v, true
		}
	}
	return tagVersion{}, false
}

// manifest reads the manifest of tv and finds the chart's layer in it.
func (s *ociSource) manifest(ctx context.Context, tv tagVersion) (candidate, error) {
	where := s.shown + ":" + tv.tag
	desc, rc, err := s.repo.FetchReference(ctx, tv.tag)
	if err != nil {
		if errors.Is(err, errdef.ErrNotFound) {
			return candidate{}, fmt.Errorf("%s: the tag is listed but its manifest is not found", where)
		}
		return candidate{}, s.registryError("manifest of "+tv.tag, err)
	}
	defer rc.Close()
	if desc.Size > maxManifestBytes {
		return candidate{}, kindErr(ErrTooLarge, "%s: the manifest is over %s", where, sizeLabel(maxManifestBytes))
	}
	b, err := io.ReadAll(io.LimitReader(rc, maxManifestBytes+1))
	if err != nil {
		return candidate{}, fmt.Errorf("%s: manifest: %w", where, err)
	}
	if len(b) > maxManifestBytes {
		return candidate{}, kindErr(ErrTooLarge, "%s: the manifest is over %s", where, sizeLabel(maxManifestBytes))
	}
	if err := desc.Digest.Validate(); err != nil {
		return candidate{}, fmt.Errorf("%s: the manifest's digest %q: %w", where, desc.Digest, err)
	}
	if int64(len(b)) != desc.Size || desc.Digest.Algorithm().FromBytes(b) != desc.Digest {
		return candidate{}, kindErr(ErrDigest, "%s: digest mismatch: the registry says the manifest is %s, it is %s", where, desc.Digest, desc.Digest.Algorithm().FromBytes(b))
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return candidate{}, fmt.Errorf("%s: the manifest is not valid JSON: %v", where, err)
	}
	if m.MediaType != "" && m.MediaType != ocispec.MediaTypeImageManifest {
		return candidate{}, kindErr(ErrNotChart, "%s is a %s, not a Helm chart", where, m.MediaType)
	}
	if m.Config.MediaType != helmConfigMediaType {
		return candidate{}, kindErr(ErrNotChart, "%s is not a Helm chart (its config is %q, not %q)", where, m.Config.MediaType, helmConfigMediaType)
	}
	var layer *ocispec.Descriptor
	for i := range m.Layers {
		switch m.Layers[i].MediaType {
		case helmChartMediaType, legacyChartMediaType:
			if layer != nil {
				return candidate{}, kindErr(ErrNotChart, "%s has more than one chart layer", where)
			}
			layer = &m.Layers[i]
		}
	}
	if layer == nil {
		return candidate{}, kindErr(ErrNotChart, "%s has no layer of type %s", where, helmChartMediaType)
	}
	if err := layer.Digest.Validate(); err != nil {
		return candidate{}, fmt.Errorf("%s: the chart layer's digest %q: %w", where, layer.Digest, err)
	}
	if layer.Size < 0 {
		return candidate{}, fmt.Errorf("%s: the chart layer's size %d is negative", where, layer.Size)
	}
	if layer.Size > s.r.opts.MaxChartBytes {
		return candidate{}, kindErr(ErrTooLarge, "chart archive %s is over %s (the manifest declares %d bytes)", where, sizeLabel(s.r.opts.MaxChartBytes), layer.Size)
	}
	c := candidate{
		version:    tv.version,
		digest:     layer.Digest.String(),
		digestFrom: "the manifest",
		url:        where,
		size:       layer.Size,
		layer:      *layer,
		tag:        tv.tag,
	}
	if layer.Digest.Algorithm() == digest.SHA256 {
		c.sha256 = layer.Digest.Encoded()
	}
	if t, err := time.Parse(time.RFC3339, m.Annotations[ocispec.AnnotationCreated]); err == nil {
		c.created = t
	}
	return c, nil
}

// download implements source: it fetches the chart layer, at most its
// declared size (already checked against max), and verifies its digest
// when it is not a sha256 one (Fetch checks those).
func (s *ociSource) download(ctx context.Context, c candidate, max int64) ([]byte, error) {
	if c.size > max {
		return nil, kindErr(ErrTooLarge, "chart archive %s is over %s", c.url, sizeLabel(max))
	}
	rc, err := s.repo.Blobs().Fetch(ctx, c.layer)
	if err != nil {
		return nil, s.registryError("chart layer "+c.layer.Digest.String(), err)
	}
	defer rc.Close()
	var buf bytes.Buffer
	n, err := io.Copy(&buf, io.LimitReader(rc, c.size+1))
	if err != nil {
		return nil, fmt.Errorf("chart archive %s: %w", c.url, err)
	}
	if n != c.size {
		return nil, kindErr(ErrDigest, "chart archive %s: digest mismatch: the manifest declares %d bytes, the registry sent %d", c.url, c.size, min(n, c.size+1))
	}
	if c.sha256 == "" {
		if got := c.layer.Digest.Algorithm().FromBytes(buf.Bytes()); got != c.layer.Digest {
			return nil, kindErr(ErrDigest, "chart archive %s: digest mismatch: the manifest says %s, the archive is %s", c.url, c.layer.Digest, got)
		}
	}
	return buf.Bytes(), nil
}
