// Package safefile creates, writes and reads files that only their owner may
// read: state files, tokens and logs. Files are created with mode 0600, in
// folders created with mode 0700 or existing ones that only their owner (this
// user) may write to, and a symbolic link where a file or its folder
// should be is refused, never followed, so that another local user who can
// plant a link cannot redirect what driftwatch writes (or make it read a
// file of their choosing).
//
// ReadLimited and ReadCredential read the files the config names (a Git
// or chart repository's credentials, CA bundles, keys): bounded in size
// before they are read, and a credential to one trimmed line.
//
// What is checked, and what is not:
//
//   - The file itself is opened with O_NOFOLLOW, so a symbolic link at its
//     path is refused by the kernel, without a window between a check and
//     the open. The error says "<path> is a symbolic link; refusing to
//     follow it" and wraps syscall.ELOOP.
//   - Its folder (the last element of the folder path) is opened with
//     O_NOFOLLOW too: a folder that is a symbolic link is refused. Folders
//     higher up are resolved as usual (a home folder on another disk, or
//     macOS's /var -> /private/var, are ordinary setups); missing ones are
//     created with mode 0700, existing ones are left as they are.
//   - A file with a looser mode than 0600 that OpenPrivate opens is
//     tightened to 0600 through the open descriptor, and a file of another
//     user is refused. An existing folder is never changed: one of another
//     user, one that group or others may write to, or a shared sticky
//     folder such as /tmp, is refused with its path and mode (the user may
//     have pointed us at their home or a shared data folder, whose mode is
//     theirs to decide). ReadPrivate instead refuses a file that group or
//     others can read or write, since what it reads (a token) may have
//     been seen or changed already.
//
// O_NOFOLLOW, file modes and owners are Unix notions. On other systems
// (Windows) the package degrades gracefully: it checks for a symbolic link
// with Lstat just before opening (a check that can race with the open),
// and leaves permissions to the folder's access control lists. There a
// symbolic link error does not wrap syscall.ELOOP.
package safefile
