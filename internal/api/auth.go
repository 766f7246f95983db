package api

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"strings"
)

// Role is what a bearer token may do.
type Role int

// Roles, in increasing power.
const (
	// RoleNone is an unauthenticated request.
	RoleNone Role = iota
	// RoleViewer reads snapshots, nodes, holds and the watch stream.
	RoleViewer
	// RoleOperator also repairs, pauses, holds, sets policies and reloads.
	RoleOperator
)

// String returns the role's name as written in a token file.
func (r Role) String() string {
	switch r {
	case RoleViewer:
		return "viewer"
	case RoleOperator:
		return "operator"
	}
	return "none"
}

// parseRole is the inverse of Role.String for the roles a token may have.
func parseRole(s string) (Role, bool) {
	switch s {
	case "viewer":
		return RoleViewer, true
	case "operator":
		return RoleOperator, true
	}
	return RoleNone, false
}

// callerKey is the request-context key of the authenticated caller.
type callerKey struct{}

// Caller is who made a request: the token's role and name.
type Caller struct {
	Role Role
	Name string
}

// withCaller returns ctx carrying c.
func withCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// callerOf returns the authenticated caller of r (RoleNone when none).
func callerOf(r *http.Request) Caller {
	c, _ := r.Context().Value(callerKey{}).(Caller)
	return c
}

// localCaller is every caller of a handler without tokens (Options.Tokens
// nil): only tests of other code and in-process uses build one.
func localCaller() Caller { return Caller{Role: RoleOperator, Name: "local"} }

// MinTokenLength is the shortest token LoadTokens accepts, in characters.
// NewToken's tokens are 43.
const MinTokenLength = 32

// Tokens are the bearer tokens a hub accepts, each with a role and a name.
// Only SHA-256 hashes of the tokens are kept. The zero value accepts no
// token.
type Tokens struct {
	entries []tokenEntry
}

type tokenEntry struct {
	hash   [sha256.Size]byte
	caller Caller
}

// Len returns the number of tokens.
func (t *Tokens) Len() int { return len(t.entries) }

// Lookup returns the caller a token belongs to. It compares the token's
// SHA-256 hash with every entry in constant time (crypto/subtle), so
// neither the token's length nor how much of it matches, nor which entry
// matched, shows in the time it takes.
func (t *Tokens) Lookup(token string) (Caller, bool) {
	sum := sha256.Sum256([]byte(token))
	match, idx := 0, 0
	for i := range t.entries {
		eq := subtle.ConstantTimeCompare(sum[:], t.entries[i].hash[:])
		// Keep the first match without branching on secret data.
		idx = subtle.ConstantTimeSelect(eq&(1-match), i, idx)
		match |= eq
	}
	if match == 0 {
		return Caller{}, false
	}
	return t.entries[idx].caller, true
}

// NewToken returns a random token: 32 bytes from crypto/rand, base64url
// without padding (43 characters).
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("new token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// LoadTokens reads a token file. Each line is
//
//	<token> <role> [name]
//
// where role is viewer or operator and name (default "line N") names the
// token in the logs; # starts a comment line and blank lines are skipped.
// Tokens are at least MinTokenLength printable ASCII characters and
// unique. Like ssh with a private key, it refuses a file that group or
// others may read or write. A symbolic link is followed (a Kubernetes
// Secret volume is made of them); the mode checked is the target's.
// Errors name the file and line and never contain a token.
func LoadTokens(path string) (*Tokens, error) {
	data, err := readPrivate(path)
	if err != nil {
		return nil, err
	}
	return ParseTokens(path, data)
}

// ParseTokens parses the contents of a token file (see LoadTokens); name
// is the file's name in errors. It does not check the file's mode.
func ParseTokens(name string, data []byte) (*Tokens, error) {
	t := &Tokens{}
	seen := make(map[[sha256.Size]byte]int)
	err := eachTokenLine(name, data, func(line int, fields []string) error {
		if len(fields) < 2 || len(fields) > 3 {
			return fmt.Errorf("%s:%d: want <token> <role> [name], got %d fields", name, line, len(fields))
		}
		role, ok := parseRole(fields[1])
		if !ok {
			return fmt.Errorf("%s:%d: role %q: want viewer or operator", name, line, fields[1])
		}
		c := Caller{Role: role, Name: fmt.Sprintf("line %d", line)}
		if len(fields) == 3 {
			c.Name = fields[2]
		}
		sum := sha256.Sum256([]byte(fields[0]))
		if first, dup := seen[sum]; dup {
			return fmt.Errorf("%s:%d: the token of line %d again: every token must be unique", name, line, first)
		}
		seen[sum] = line
		t.entries = append(t.entries, tokenEntry{hash: sum, caller: c})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(t.entries) == 0 {
		return nil, fmt.Errorf("%s: no tokens (lines are <token> <role> [name])", name)
	}
	return t, nil
}

// ReadToken returns the token a client sends from a file: the first field
// of its first line that is neither blank nor a comment. That is the whole
// file when it holds just a token, and the first token of a serve token
// file. Like LoadTokens it refuses a file group or others may access.
func ReadToken(path string) (string, error) {
	data, err := readPrivate(path)
	if err != nil {
		return "", err
	}
	return FirstToken(path, data)
}

// FirstToken returns the first token of a token file's contents (see
// ReadToken); name is the file's name in errors.
func FirstToken(name string, data []byte) (string, error) {
	var tok string
	errFound := errors.New("found")
	err := eachTokenLine(name, data, func(_ int, fields []string) error {
		tok = fields[0]
		return errFound
	})
	switch {
	case errors.Is(err, errFound):
		return tok, nil
	case err != nil:
		return "", err
	}
	return "", fmt.Errorf("%s: no token in the file", name)
}

// eachTokenLine calls f with the fields of every line of a token file that
// is neither blank nor a comment, after checking its token; f's error
// stops the walk and is returned.
func eachTokenLine(name string, data []byte, f func(line int, fields []string) error) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if err := checkToken(fields[0]); err != nil {
			return fmt.Errorf("%s:%d: %w", name, n, err)
		}
		if err := f(n, fields); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// checkToken refuses a short token or one that cannot travel in an HTTP
// header; the error never contains the token.
func checkToken(tok string) error {
	if len(tok) < MinTokenLength {
		return fmt.Errorf("token too short (%d characters, want at least %d)", len(tok), MinTokenLength)
	}
	for _, c := range []byte(tok) {
		if c < 0x21 || c > 0x7e {
			return errors.New("token holds a character that is not printable ASCII")
		}
	}
	return nil
}

// maxTokenFile bounds the size of a token file.
const maxTokenFile = 1 << 20

// readPrivate reads a file that holds secrets, following a symbolic link,
// and refuses it when group or others have any access to it (the mode is
// checked on the opened file, so it is the one read). One exception, as
// PostgreSQL makes for its key files: a file owned by root, read by another
// user, may be readable by its group (0440 or 0640), which is how
// Kubernetes mounts a Secret into a non-root container (owner root, group
// the Pod's fsGroup).
func readPrivate(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	if perm := fi.Mode().Perm(); !privateMode(perm, fileOwner(fi), os.Geteuid()) {
		return nil, fmt.Errorf("%s: mode %04o lets group or others access the tokens: run chmod 600 %s", path, perm, path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > maxTokenFile {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxTokenFile)
	}
	return data, nil
}

// privateMode reports whether a token file with permissions perm, owned by
// uid owner (-1 when unknown), is private enough for a process running as
// euid: no access for group or others, or, for a file of root read by
// another user, read access for the group only.
func privateMode(perm os.FileMode, owner, euid int) bool {
	if perm&0o077 == 0 {
		return true
	}
	return owner == 0 && euid > 0 && perm&0o037 == 0
}

// bearerToken returns the token of an "Authorization: Bearer <token>"
// header (the scheme is case-insensitive).
func bearerToken(r *http.Request) (string, bool) {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// safeMethod reports whether a method only reads (everything else is a
// write).
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// authenticate puts the caller of every request in its context (withCaller)
// or answers 401; without Options.Tokens every caller is localCaller. Each
// write is logged at info once answered (reads at debug), with the
// caller's role and name, never the token.
func (s *server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := s.caller(r)
		rec := &statusRecorder{ResponseWriter: w}
		defer func() { s.logRequest(r, rec.status, c) }()
		if err != nil {
			rec.Header().Set("WWW-Authenticate", err.challenge)
			writeError(rec, http.StatusUnauthorized, err)
			return
		}
		next.ServeHTTP(rec, r.WithContext(withCaller(r.Context(), c)))
	})
}

// authError is a refused credential, with its WWW-Authenticate challenge.
type authError struct {
	challenge string
	msg       string
}

func (e *authError) Error() string { return e.msg }

// caller returns who made r, or why it is refused.
func (s *server) caller(r *http.Request) (Caller, *authError) {
	if s.opts.Tokens == nil {
		return localCaller(), nil
	}
	tok, ok := bearerToken(r)
	if !ok {
		return Caller{}, &authError{challenge: `Bearer realm="driftwatch"`,
			msg: "authentication required: send Authorization: Bearer <token> (driftwatch attach and reload read --token-file or DRIFTWATCH_TOKEN)"}
	}
	c, ok := s.opts.Tokens.Lookup(tok)
	if !ok {
		return Caller{}, &authError{challenge: `Bearer realm="driftwatch", error="invalid_token"`, msg: "invalid bearer token"}
	}
	return c, nil
}

// logRequest logs a write at info and a read at debug.
func (s *server) logRequest(r *http.Request, status int, c Caller) {
	if status == 0 {
		status = http.StatusOK // the handler wrote nothing
	}
	level := slog.LevelInfo
	if safeMethod(r.Method) {
		level = slog.LevelDebug
	}
	s.opts.Logger.LogAttrs(r.Context(), level, "api request",
		slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Int("status", status),
		slog.String("role", c.Role.String()), slog.String("caller", c.Name), slog.String("remote", r.RemoteAddr))
}

// bodyKind says whether a write takes a JSON body.
type bodyKind bool

const (
	noBody   bodyKind = false
	jsonBody bodyKind = true
)

// write guards a write route: the caller must be an operator (403) and the
// handler not read-only (403); a body, required when body is jsonBody,
// must be application/json (415) and at most Options.MaxBodyBytes (413,
// also while the handler reads it).
func (s *server) write(body bodyKind, next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c := callerOf(r); c.Role < RoleOperator {
			writeError(w, http.StatusForbidden, fmt.Errorf("%s %q may not %s %s: the operator role is required", c.Role, c.Name, r.Method, r.URL.Path))
			return
		}
		if s.opts.ReadOnly {
			writeError(w, http.StatusForbidden, errors.New("read-only mode: actions are disabled"))
			return
		}
		if body == jsonBody || r.ContentLength != 0 {
			ct := r.Header.Get("Content-Type")
			if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
				writeError(w, http.StatusUnsupportedMediaType, fmt.Errorf("content type %q: want application/json", ct))
				return
			}
		}
		if r.ContentLength > s.opts.MaxBodyBytes {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Errorf("body of %d bytes: the limit is %d", r.ContentLength, s.opts.MaxBodyBytes))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
		next(w, r)
	})
}

// statusRecorder remembers the status a handler answered. Unwrap lets
// http.ResponseController reach the connection (flush, deadlines).
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (w *statusRecorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush implements http.Flusher for streams that assert it.
func (w *statusRecorder) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush() // a writer that cannot flush has nothing to flush
}

// Unwrap returns the wrapped writer (for http.ResponseController).
func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }
