// Package gitsource is the Git side of manifest sources: it keeps a local,
// shallow cache of one branch, tag or commit of a remote repository and
// checks the commit's tree out into a folder of its own, verifying the
// commit's signature first when asked to. It also verifies the push
// webhooks of GitHub, GitLab, Gitea and Forgejo (ParsePush), so that a hub
// can fetch as soon as a repository changes instead of waiting for its next
// poll.
//
// Everything is done in process with github.com/go-git/go-git/v5: no git
// binary is run. A Repo talks to its server through its own HTTP client
// (go-git's smart HTTP transport) or its own SSH connection
// (golang.org/x/crypto/ssh, dialed here so that the Fetch's timeout also
// bounds the SSH handshake; ~/.ssh/config is not read), so nothing here
// changes go-git's process-wide transport registry.
//
// # Fetching
//
// Open validates the options and touches no network. Each Repo.Fetch:
//
//  1. lists the remote's references (one round trip) and resolves Options.Ref
//     (a branch, a tag, a full 40-hex commit SHA, or the remote's HEAD);
//  2. when the resolved commit is already in the cache, downloads nothing;
//     otherwise downloads a pack of that single commit at depth 1 (where the
//     server supports shallow fetches; every Git server of note does),
//     telling the server which commit the cache already holds so that only
//     what changed is sent. A branch that was force-pushed to a commit that
//     does not descend from the old one is simply taken: there is no
//     fast-forward check;
//  3. verifies the commit's signature (Options.Verify);
//  4. checks the commit's tree out into CacheDir/trees/<commit> (written
//     under a temporary name and renamed into place, so a folder of that
//     name is always complete), within the size limits;
//  5. removes every tree but the one it returns and the one before it.
//
// A file:// URL names a repository on this machine: it is read in place
// (its objects are not copied into the cache), with the same resolution,
// verification and checkout.
//
// # The cache
//
// CacheDir belongs to one Repo at a time (one source: one URL and one ref;
// DirName gives a stable folder name for them). It holds repo.git (a bare,
// shallow repository that go-git writes to), trees/ and state.json (the
// current and previous commit). The cache survives restarts: a new Repo on
// the same CacheDir finds its commit and tree and downloads nothing while the
// remote has not moved. Every fetch that brings something new adds one pack
// to repo.git; past 16 packs the cache is emptied and the next fetch
// downloads the commit whole again (one depth-1 pack), which bounds the
// cache to about two checkouts and one pack.
//
// # Hostile repositories
//
// A repository's content is not trusted. The checkout refuses tree entries
// whose names are empty, ".", "..", contain a slash, backslash or NUL byte,
// or spell ".git" in any case; it stops at Options.MaxFiles entries and
// Options.MaxBytes of file content (the same byte limit also applies to the
// pack one fetch downloads). Symbolic links are written as symbolic links,
// but only when they resolve inside the tree: a link with an absolute target,
// or one that leaves the tree through "..", directly or through other links,
// makes the whole revision fail. Readers of a tree should still open files
// through SafePath, which resolves links itself and refuses any path that
// leaves the folder. Submodules are not fetched: each one is an empty folder.
//
// go-git holds each object of a pack whole while it indexes it, so before
// a pack is indexed it is read through once in constant memory, and an
// object that inflates to more than Options.MaxObjectBytes, or a delta that
// builds one, refuses the whole pack (a few megabytes of pack can inflate to
// gigabytes). The object store reads objects larger than 1 MiB from their
// pack as the checkout copies them, never whole into memory.
//
// # Credentials
//
// Credentials are never part of Options.URL: they are read from files
// (Auth) at every Fetch, so a rotated token is picked up without a restart.
// They are only sent over https, ssh, or http to a loopback address. SSH
// needs a known_hosts file: host keys are always checked.
package gitsource
