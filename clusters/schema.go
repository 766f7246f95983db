package clusters

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi"
	"k8s.io/kube-openapi/pkg/schemaconv"
	"k8s.io/kube-openapi/pkg/spec3"
	smd "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"github.com/driftwatch/driftwatch/clusters/drift"
)

// errNoSchema is returned (wrapped) by schemaCache.For when neither the
// cluster nor client-go knows the kind.
var errNoSchema = errors.New("no schema")

// schemaRefetchAfter is how long a group-version's document is trusted to
// be complete: a kind it lacks (a CRD created since, or a new version of
// one) refetches the paths and the document once it is older than this.
const schemaRefetchAfter = 2 * time.Second

// schemaCache holds the schemas one cluster publishes (OpenAPI v3, one
// document per group-version), as drift.Schemas by kind: fetched lazily
// per group-version on the first kind asked for, converted to
// structured-merge-diff types as the apiserver's own field manager
// converts them, and kept until Invalidate. A kind the cached document
// lacks refetches it (at most every schemaRefetchAfter). When the cluster
// cannot serve a built-in kind's schema, client-go's embedded one stands
// in. It is safe for concurrent use; fetches are serialized.
type schemaCache struct {
	openapi openapi.ClientWithContext
	log     *slog.Logger
	now     func() time.Time

	// sem serializes fetches (a buffered channel of one, so waiting for
	// it honours the context).
	sem chan struct{}

	mu      sync.Mutex
	paths   map[string]openapi.GroupVersionWithContext // nil until fetched
	pathsAt time.Time
	gvs     map[schema.GroupVersion]*gvSchemas
}

// gvSchemas is the converted document of one group-version.
type gvSchemas struct {
	fetched time.Time
	types   *smd.Schema
	// models names the model of each kind of the group-version.
	models map[string]string
	// kinds are the schemas compiled so far, by kind.
	kinds map[string]drift.Schema
}

// newSchemaCache returns an empty schema cache over d's OpenAPI v3
// endpoint.
func newSchemaCache(d discovery.DiscoveryInterface, log *slog.Logger) *schemaCache {
	return &schemaCache{
		openapi: openapi.ToClientWithContext(d.OpenAPIV3()),
		log:     log,
		now:     time.Now,
		sem:     make(chan struct{}, 1),
		gvs:     make(map[schema.GroupVersion]*gvSchemas),
	}
}

// For returns the schema of gvk as the cluster publishes it. When the
// cluster cannot serve it (unreachable, or no such group-version or kind),
// a built-in kind gets client-go's embedded schema and no error; any other
// kind gets the zero drift.Schema (lists atomic, maps as structs) and the
// error, wrapping errNoSchema when the cluster answered without it.
func (c *schemaCache) For(ctx context.Context, gvk schema.GroupVersionKind) (drift.Schema, error) {
	s, err := c.lookup(ctx, gvk)
	if err == nil {
		return s, nil
	}
	if b, ok := drift.BuiltinSchema(gvk); ok {
		if !errors.Is(err, errNoSchema) {
			c.log.Debug("cluster schema unavailable, using the built-in one", "kind", gvk.String(), "err", err)
		}
		return b, nil
	}
	return drift.Schema{}, fmt.Errorf("schema of %s: %w", gvk, err)
}

// Invalidate forgets every schema and the list of group-versions: the next
// For fetches them again.
func (c *schemaCache) Invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paths = nil
	clear(c.gvs)
}

// lookup returns the cluster's schema of gvk, fetching (or refetching) its
// group-version's document when needed.
func (c *schemaCache) lookup(ctx context.Context, gvk schema.GroupVersionKind) (drift.Schema, error) {
	gv := gvk.GroupVersion()
	if s, ok, stale := c.cached(gvk); ok {
		return s, nil
	} else if !stale {
		return drift.Schema{}, fmt.Errorf("group-version %s has no kind %s: %w", gv, gvk.Kind, errNoSchema)
	}
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return drift.Schema{}, ctx.Err()
	}
	defer func() { <-c.sem }()
	// Another fetch may have brought it meanwhile.
	if s, ok, stale := c.cached(gvk); ok {
		return s, nil
	} else if !stale {
		return drift.Schema{}, fmt.Errorf("group-version %s has no kind %s: %w", gv, gvk.Kind, errNoSchema)
	}
	g, err := c.fetch(ctx, gv)
	if err != nil {
		return drift.Schema{}, err
	}
	c.mu.Lock()
	c.gvs[gv] = g
	c.mu.Unlock()
	if s, ok, _ := c.cached(gvk); ok {
		return s, nil
	}
	return drift.Schema{}, fmt.Errorf("group-version %s has no kind %s: %w", gv, gvk.Kind, errNoSchema)
}

// cached returns the cached schema of gvk (compiling it on first use). When
// there is none, stale says whether the group-version's document should
// be fetched: it is not cached, or it lacks the kind and is older than
// schemaRefetchAfter.
func (c *schemaCache) cached(gvk schema.GroupVersionKind) (s drift.Schema, ok, stale bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.gvs[gvk.GroupVersion()]
	if g == nil {
		return drift.Schema{}, false, true
	}
	if s, ok := g.kinds[gvk.Kind]; ok {
		return s, true, false
	}
	model, ok := g.models[gvk.Kind]
	if !ok {
		return drift.Schema{}, false, c.now().Sub(g.fetched) >= schemaRefetchAfter
	}
	s = drift.NewSchema(typed.ParseableType{Schema: g.types, TypeRef: smd.TypeRef{NamedType: &model}})
	g.kinds[gvk.Kind] = s
	return s, true, false
}

// fetch reads and converts the document of gv, first refreshing the list
// of group-versions when it is missing, lacks gv, or is stale.
func (c *schemaCache) fetch(ctx context.Context, gv schema.GroupVersion) (*gvSchemas, error) {
	path := "apis/" + gv.Group + "/" + gv.Version
	if gv.Group == "" {
		path = "api/" + gv.Version
	}
	c.mu.Lock()
	paths, pathsAt := c.paths, c.pathsAt
	c.mu.Unlock()
	p, ok := paths[path]
	if !ok && (paths == nil || c.now().Sub(pathsAt) >= schemaRefetchAfter) {
		fresh, err := c.openapi.PathsWithContext(ctx)
		if err != nil {
			return nil, fmt.Errorf("openapi v3 paths: %w", err)
		}
		c.mu.Lock()
		c.paths, c.pathsAt = fresh, c.now()
		c.mu.Unlock()
		p, ok = fresh[path]
	}
	if !ok {
		return nil, fmt.Errorf("openapi v3 has no group-version %s: %w", gv, errNoSchema)
	}
	raw, err := p.SchemaWithContext(ctx, runtime.ContentTypeJSON)
	if err != nil {
		return nil, fmt.Errorf("openapi v3 %s: %w", path, err)
	}
	return parseGVSchemas(raw, gv, c.now())
}

// parseGVSchemas converts an OpenAPI v3 group-version document to
// structured-merge-diff types (schemaconv, as the apiserver's field manager
// does) and indexes the models of gv's kinds by their
// x-kubernetes-group-version-kind extension.
func parseGVSchemas(raw []byte, gv schema.GroupVersion, at time.Time) (*gvSchemas, error) {
	var doc spec3.OpenAPI
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("openapi v3 %s: %w", gv, err)
	}
	if doc.Components == nil || len(doc.Components.Schemas) == 0 {
		return nil, fmt.Errorf("openapi v3 %s: no component schemas: %w", gv, errNoSchema)
	}
	types, err := schemaconv.ToSchemaFromOpenAPI(doc.Components.Schemas, false)
	if err != nil {
		return nil, fmt.Errorf("openapi v3 %s: convert: %w", gv, err)
	}
	g := &gvSchemas{fetched: at, types: types, models: make(map[string]string), kinds: make(map[string]drift.Schema)}
	for name, s := range doc.Components.Schemas {
		raw, ok := s.Extensions["x-kubernetes-group-version-kind"]
		if !ok {
			continue
		}
		var gvks []schema.GroupVersionKind
		if b, err := json.Marshal(raw); err != nil || json.Unmarshal(b, &gvks) != nil {
			continue
		}
		for _, k := range gvks {
			if k.GroupVersion() == gv && k.Kind != "" {
				g.models[k.Kind] = name
			}
		}
	}
	return g, nil
}
