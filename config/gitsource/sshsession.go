package gitsource

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"unicode"

	"github.com/go-git/go-git/v5/plumbing/format/pktline"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"golang.org/x/crypto/ssh"
)

// sshSession is an upload-pack session over SSH that this package dials
// itself rather than through go-git's SSH transport: go-git bounds only the
// TCP connect, so a server that accepts a connection and then says nothing
// would hang a Fetch past its timeout. Here the Fetch's context closes the
// connection when it ends, which interrupts the handshake and every read.
// It also means ~/.ssh/config is not read: the URL says where to connect.
type sshSession struct {
	conn   net.Conn
	client *ssh.Client
	sess   *ssh.Session
	stdin  io.WriteCloser
	stdout io.Reader
	stderr *stderrBuffer
	// stop cancels the closing of conn at the end of the context.
	stop func() bool

	adv     *packp.AdvRefs
	packRun bool
}

// dialSSH connects to addr, authenticates with cfg and starts
// git-upload-pack on path.
func dialSSH(ctx context.Context, addr string, cfg *ssh.ClientConfig, path string) (*sshSession, error) {
	d := net.Dialer{Timeout: cfg.Timeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &sshSession{conn: conn, stderr: &stderrBuffer{}}
	s.stop = context.AfterFunc(ctx, func() { _ = conn.Close() })
	c, chans, reqs, err := ssh.NewClientConn(conn, addr, cfg)
	if err != nil {
		s.stop()
		_ = conn.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("ssh handshake: %w", ctx.Err())
		}
		return nil, err
	}
	s.client = ssh.NewClient(c, chans, reqs)
	if s.sess, err = s.client.NewSession(); err != nil {
		_ = s.Close()
		return nil, err
	}
	if s.stdin, err = s.sess.StdinPipe(); err != nil {
		_ = s.Close()
		return nil, err
	}
	if s.stdout, err = s.sess.StdoutPipe(); err != nil {
		_ = s.Close()
		return nil, err
	}
	s.sess.Stderr = s.stderr
	if err := s.sess.Start(transport.UploadPackServiceName + " " + shellQuote(path)); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// shellQuote quotes s for the remote shell as git does: in single quotes,
// with ' and ! outside them.
func shellQuote(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '\'' || c == '!' {
			b.WriteString(`'\`)
			b.WriteByte(c)
			b.WriteByte('\'')
			continue
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('\'')
	return b.String()
}

// AdvertisedReferences lists the server's references.
func (s *sshSession) AdvertisedReferences() (*packp.AdvRefs, error) {
	return s.AdvertisedReferencesContext(context.Background())
}

// AdvertisedReferencesContext lists the server's references (once). The
// context that bounds it is the one given to dialSSH.
func (s *sshSession) AdvertisedReferencesContext(context.Context) (*packp.AdvRefs, error) {
	if s.adv != nil {
		return s.adv, nil
	}
	ar := packp.NewAdvRefs()
	if err := ar.Decode(s.stdout); err != nil {
		var line *pktline.ErrorLine
		switch {
		case errors.Is(err, packp.ErrEmptyAdvRefs):
			return nil, transport.ErrEmptyRemoteRepository
		case errors.As(err, &line):
			return nil, serverError(line.Text)
		case errors.Is(err, packp.ErrEmptyInput):
			// The server said nothing on stdout: why is on stderr, once the
			// command has ended (our end of stdin closed first, so that no
			// server waits for it; the context bounds the wait).
			_ = s.stdin.Close()
			_ = s.sess.Wait()
			if msg := s.stderr.firstLine(); msg != "" {
				return nil, serverError(msg)
			}
			return nil, errors.New("the server closed the connection without listing its refs")
		}
		return nil, err
	}
	if ar.IsEmpty() {
		return nil, transport.ErrEmptyRemoteRepository
	}
	transport.FilterUnsupportedCapabilities(ar.Capabilities)
	s.adv = ar
	return ar, nil
}

// serverError turns a message of the server into an error, wrapping
// transport.ErrRepositoryNotFound when it says so.
func serverError(msg string) error {
	msg = printable(msg)
	for _, notFound := range []string{"does not appear to be a git repository", "not found", "does not exist", "could not be found", "no such repository"} {
		if strings.Contains(strings.ToLower(msg), notFound) {
			return fmt.Errorf("the server says %q: %w", msg, transport.ErrRepositoryNotFound)
		}
	}
	return fmt.Errorf("the server says %q", msg)
}

// UploadPack sends the request and returns the response, whose packfile is
// read from it.
func (s *sshSession) UploadPack(_ context.Context, req *packp.UploadPackRequest) (*packp.UploadPackResponse, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	s.packRun = true
	if err := req.UploadRequest.Encode(s.stdin); err != nil {
		return nil, fmt.Errorf("send the request: %w", err)
	}
	if err := req.UploadHaves.Encode(s.stdin, true); err != nil {
		return nil, fmt.Errorf("send the haves: %w", err)
	}
	if err := pktline.NewEncoder(s.stdin).Encodef("done\n"); err != nil {
		return nil, fmt.Errorf("send done: %w", err)
	}
	if err := s.stdin.Close(); err != nil {
		return nil, fmt.Errorf("send done: %w", err)
	}
	resp := packp.NewUploadPackResponse(req)
	if err := resp.Decode(io.NopCloser(s.stdout)); err != nil {
		if msg := s.stderr.firstLine(); msg != "" {
			return nil, fmt.Errorf("%w (%w)", err, serverError(msg))
		}
		return nil, err
	}
	return resp, nil
}

// Close ends the session: a flush tells upload-pack nothing is wanted when
// no pack was asked for, then the connection is closed.
func (s *sshSession) Close() error {
	if s.stdin != nil && !s.packRun {
		_, _ = s.stdin.Write(pktline.FlushPkt)
	}
	if s.sess != nil {
		_ = s.sess.Close()
	}
	if s.client != nil {
		_ = s.client.Close()
	}
	s.stop()
	return s.conn.Close()
}

// stderrBuffer keeps the first 4 KiB the server writes on stderr.
type stderrBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *stderrBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := 4096 - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// firstLine returns the first line of stderr that is not blank.
func (b *stderrBuffer) firstLine() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	for line := range strings.SplitSeq(b.buf.String(), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return ""
}

// printable replaces control characters (a hostile server's terminal
// escapes) and bounds the length of a server's message.
func printable(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '?'
		}
		return r
	}, s)
	if len(s) > 512 {
		s = s[:512] + "..."
	}
	return s
}
