// Package chartrepo is the Helm side of manifest sources: it keeps a local
// cache of one chart of a Helm chart repository (an HTTP(S) server of
// index.yaml and chart archives) or of an OCI registry (oci://), at the
// version that an exact version or a semantic version constraint selects.
// It is to Helm repositories what package gitsource is to Git.
//
// Everything is done in process: no helm binary is run and Helm's
// repository and registry clients are not used (they read whole responses
// without a bound). Index entries are read and versions selected with
// Helm's own rules, archives are checked with Helm's chart loader, and OCI
// registries are spoken to with oras-go's registry client.
//
// # Fetching
//
// Open validates the options and touches no network. Each Repo.Fetch:
//
//  1. resolves Options.Version: for an HTTP(S) repository it downloads
//     <URL>/index.yaml and picks the entry as `helm pull --version` does
//     (an exact version present is taken as is, otherwise the newest that
//     satisfies the constraint; "" is the newest stable version); for an
//     OCI registry it lists the tags of <URL>/<Chart>, reads each tag as a
//     semantic version ("_" standing for "+", as Helm pushes them), picks
//     the same way, and reads that tag's manifest;
//  2. when the cache already holds that version with that digest, downloads
//     nothing more; otherwise downloads the archive (the index entry's first
//     URL, relative to the repository's, or the manifest's chart layer) and
//     verifies its digest (index.yaml's digest when it gives one, always
//     the layer's);
//  3. checks that the archive loads as a chart of the name and version asked
//     for;
//  4. writes it into CacheDir/charts/<chart>-<version>-<12 hex of the
//     digest>/<chart>-<version>.tgz (under a temporary name, renamed into
//     place, read-only), records it in CacheDir/state.json, and removes
//     every archive but the one it returns and the one before it.
//
// # The cache
//
// CacheDir belongs to one Repo at a time (one URL and one chart; DirName
// gives a stable folder name for them). The cache survives restarts:
// Cached returns the last revision fetched, also from a new Repo on the
// same CacheDir, as long as its archive is still there with its digest.
//
// # Hostile servers
//
// Nothing a server sends is trusted. index.yaml is bounded by
// Options.MaxIndexBytes and the archive by Options.MaxChartBytes, whatever
// Content-Length says (an OCI layer that declares more is refused before
// it is fetched; manifests and tag list pages are bounded at 4 MiB).
// Versions are refused unless they are semantic versions safe in a file
// name; archive URLs other than http(s), or that downgrade an https
// repository to http, are refused, and so are redirects from https to
// http. Helm's loader bounds what an archive inflates to. Every Fetch is
// bounded by Options.Timeout. Errors name the URL and the HTTP status, not
// the text a server sent with it.
//
// # Credentials
//
// Credentials are never part of Options.URL: they are read from files
// (Auth) at every Fetch, so rotated ones are picked up without a restart.
// They are only sent over https, or http to a loopback address, and only to
// the repository's host and port: an archive URL or a redirect elsewhere
// gets none.
package chartrepo
