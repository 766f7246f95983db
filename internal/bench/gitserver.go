package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/memfs"
	"github.com/go-git/go-billy/v5/util"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/pktline"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/server"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/sourcegraph/conc"
)

// gitServer is the bench's Git server: repositories held in memory,
// served on loopback over Git's smart HTTP protocol (GET
// /NAME/info/refs?service=git-upload-pack, the reference advertisement,
// and POST /NAME/git-upload-pack, the pack) by go-git's server side. No git
// binary runs. go-git's upload-pack does not advertise the shallow
// capability, so clients fetch the whole history (the bench's
// repositories have a few commits); it does take the client's haves, so a
// fetch after a push carries only the new objects.
type gitServer struct {
	ln  net.Listener
	srv *http.Server
	wg  conc.WaitGroup
	log *slog.Logger

	mu    sync.Mutex
	repos map[string]*benchRepo
}

// benchRepo is one repository of the gitServer, with the traffic it
// served.
type benchRepo struct {
	name string
	// mu is held to read by upload-pack and to write by commit: the
	// in-memory storage is not safe for a write beside reads.
	mu   sync.RWMutex
	repo *git.Repository
	fs   billy.Filesystem
	st   storage.Storer

	adverts, packs atomic.Int64 // requests served
	sent, recv     atomic.Int64 // response and request body bytes
}

// gitTraffic is what a benchRepo served up to a moment.
type gitTraffic struct {
	// Adverts and Packs count info/refs and git-upload-pack requests.
	Adverts, Packs int64
	// Sent and Received are the bytes of the response and request
	// bodies.
	Sent, Received int64
}

// sub returns t minus an earlier t0.
func (t gitTraffic) sub(t0 gitTraffic) gitTraffic {
	return gitTraffic{Adverts: t.Adverts - t0.Adverts, Packs: t.Packs - t0.Packs, Sent: t.Sent - t0.Sent, Received: t.Received - t0.Received}
}

// startGitServer starts a gitServer on a loopback port; Stop stops it.
func startGitServer(log *slog.Logger) (*gitServer, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bench: git server: %w", err)
	}
	s := &gitServer{ln: ln, log: log, repos: map[string]*benchRepo{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{repo}/info/refs", s.infoRefs)
	mux.HandleFunc("POST /{repo}/git-upload-pack", s.uploadPack)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(log.With("component", "git-server").Handler(), slog.LevelWarn)}
	s.wg.Go(func() {
		defer func() {
			if p := recover(); p != nil {
				log.Error("bench: git server panicked", "panic", p)
			}
		}()
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("bench: git server", "err", err)
		}
	})
	return s, nil
}

// Stop closes the server and waits for it.
func (s *gitServer) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	s.wg.Wait()
	return err
}

// URL is the clone URL of the repository name.
func (s *gitServer) URL(name string) string {
	return "http://" + s.ln.Addr().String() + "/" + name
}

// create adds an empty repository name whose HEAD is the branch main.
func (s *gitServer) create(name string) (*benchRepo, error) {
	st, fs := memory.NewStorage(), memfs.New()
	repo, err := git.InitWithOptions(st, fs, git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")})
	if err != nil {
		return nil, fmt.Errorf("bench: git repository %s: %w", name, err)
	}
	r := &benchRepo{name: name, repo: repo, fs: fs, st: st}
	s.mu.Lock()
	s.repos[name] = r
	s.mu.Unlock()
	return r, nil
}

// repo returns the repository of a request, or answers 404.
func (s *gitServer) repo(w http.ResponseWriter, req *http.Request) *benchRepo {
	s.mu.Lock()
	r := s.repos[req.PathValue("repo")]
	s.mu.Unlock()
	if r == nil {
		http.Error(w, "no such repository", http.StatusNotFound)
	}
	return r
}

// session opens an upload-pack session on r (callers hold r.mu to read).
func (r *benchRepo) session() (transport.UploadPackSession, error) {
	ep, err := transport.NewEndpoint("/" + r.name)
	if err != nil {
		return nil, err
	}
	return server.NewServer(server.MapLoader{ep.String(): r.st}).NewUploadPackSession(ep, nil)
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// infoRefs serves the smart-HTTP reference advertisement.
func (s *gitServer) infoRefs(w http.ResponseWriter, req *http.Request) {
	r := s.repo(w, req)
	if r == nil {
		return
	}
	if svc := req.URL.Query().Get("service"); svc != transport.UploadPackServiceName {
		http.Error(w, fmt.Sprintf("service %q: only %s is served", svc, transport.UploadPackServiceName), http.StatusForbidden)
		return
	}
	r.adverts.Add(1)
	r.mu.RLock()
	defer r.mu.RUnlock()
	sess, err := r.session()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(req.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	ar.Prefix = [][]byte{[]byte("# service=" + transport.UploadPackServiceName), pktline.Flush}
	w.Header().Set("Content-Type", "application/x-"+transport.UploadPackServiceName+"-advertisement")
	w.Header().Set("Cache-Control", "no-cache")
	if err := ar.Encode(countingWriter{w, &r.sent}); err != nil {
		s.log.Warn("bench: git server: advertisement", "repo", r.name, "err", err)
	}
}

// uploadPack serves a smart-HTTP git-upload-pack request: the wants (and
// haves) in, the pack out.
func (s *gitServer) uploadPack(w http.ResponseWriter, req *http.Request) {
	r := s.repo(w, req)
	if r == nil {
		return
	}
	r.packs.Add(1)
	body := countingReader{req.Body, &r.recv}
	upr, err := decodeUploadPack(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	sess, err := r.session()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer sess.Close()
	resp, err := sess.UploadPack(req.Context(), upr)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/x-"+transport.UploadPackServiceName+"-result")
	w.Header().Set("Cache-Control", "no-cache")
	if err := resp.Encode(countingWriter{w, &r.sent}); err != nil {
		s.log.Warn("bench: git server: upload-pack", "repo", r.name, "err", err)
	}
}

// decodeUploadPack reads an upload-pack request: the upload-request (wants,
// capabilities, shallows, depth, up to a flush), then the haves up to
// "done" (go-git's decoder reads the first part only).
func decodeUploadPack(body io.Reader) (*packp.UploadPackRequest, error) {
	upr := packp.NewUploadPackRequest()
	if err := upr.Decode(body); err != nil {
		return nil, fmt.Errorf("upload-pack request: %w", err)
	}
	sc := pktline.NewScanner(body)
	for sc.Scan() {
		line := strings.TrimSuffix(string(sc.Bytes()), "\n")
		switch {
		case line == "done":
			return upr, nil
		case line == "":
			continue // a flush between have rounds
		case strings.HasPrefix(line, "have "):
			h := plumbing.NewHash(strings.TrimPrefix(line, "have "))
			if h.IsZero() {
				return nil, fmt.Errorf("upload-pack request: bad line %q", line)
			}
			upr.Haves = append(upr.Haves, h)
		default:
			return nil, fmt.Errorf("upload-pack request: unexpected line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("upload-pack request: %w", err)
	}
	return upr, nil
}

// traffic returns what r served so far.
func (r *benchRepo) traffic() gitTraffic {
	return gitTraffic{Adverts: r.adverts.Load(), Packs: r.packs.Load(), Sent: r.sent.Load(), Received: r.recv.Load()}
}

// commit writes files (path to content) over the work tree, commits every
// change on main and returns the commit's hash. Files not named stay.
func (r *benchRepo) commit(files map[string]string, msg string) (plumbing.Hash, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if err := util.WriteFile(r.fs, p, []byte(files[p]), 0o644); err != nil {
			return plumbing.ZeroHash, fmt.Errorf("bench: git repository %s: write %s: %w", r.name, p, err)
		}
	}
	wt, err := r.repo.Worktree()
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("bench: git repository %s: %w", r.name, err)
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("bench: git repository %s: add: %w", r.name, err)
	}
	h, err := wt.Commit(msg, &git.CommitOptions{AllowEmptyCommits: true,
		Author: &object.Signature{Name: "driftwatch bench", Email: "bench@example.com", When: time.Now()}})
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("bench: git repository %s: commit: %w", r.name, err)
	}
	return h, nil
}
