package gitsource

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// newPGPKey makes an OpenPGP key pair and returns it with its armored
// public key.
func newPGPKey(t testing.TB, name string) (*openpgp.Entity, string) {
	t.Helper()
	e, err := openpgp.NewEntity(name, "", strings.ToLower(name)+"@example.com", &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Serialize(w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return e, buf.String() + "\n"
}

// sshKeyPair is an SSH key written in OpenSSH format.
type sshKeyPair struct {
	path   string // the private key file (0600)
	public string // the authorized_keys form of the public key
	signer ssh.Signer
}

// newSSHKey makes an ed25519 SSH key in dir.
func newSSHKey(t testing.TB, dir, name string) sshKeyPair {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, name)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return sshKeyPair{
		path:   writeFile(t, dir, name, string(pem.EncodeToMemory(block))),
		public: strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub))),
		signer: signer,
	}
}

// goGitCommit commits files in f's work repository with go-git, signed
// with key or signer (or neither), and returns the commit.
func goGitCommit(t testing.TB, f *fixture, msg string, files map[string]string, key *openpgp.Entity, signer git.Signer) string {
	t.Helper()
	f.write(files)
	repo, err := git.PlainOpen(f.work)
	if err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "Ada Author", Email: "ada@example.com", When: time.Now()}
	h, err := wt.Commit(msg, &git.CommitOptions{Author: sig, Committer: sig, SignKey: key, Signer: signer, AllowEmptyCommits: true})
	if err != nil {
		t.Fatal(err)
	}
	return h.String()
}

// sshsigSigner signs commits the way git does with gpg.format=ssh, through
// github.com/hiddeco/sshsig.
type sshsigSigner struct{ s ssh.Signer }

func (s sshsigSigner) Sign(message io.Reader) ([]byte, error) {
	sig, err := sshsig.Sign(message, s.s, sshsig.HashSHA512, "git")
	if err != nil {
		return nil, err
	}
	return sshsig.Armor(sig), nil
}

// TestFetchVerifiesSignatures pushes commits signed in several ways and
// checks which ones Fetch accepts: OpenPGP by a trusted key (go-git's
// signing), SSH by a trusted key (git's own gpg.format=ssh signing through
// ssh-keygen, and sshsig's) are taken; unsigned commits, commits signed by
// other keys, and a signed commit whose content was changed are refused,
// naming the commit and why, and the last good tree stays.
func TestFetchVerifiesSignatures(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	trusted, trustedPub := newPGPKey(t, "Trusted")
	other, _ := newPGPKey(t, "Other")
	second, secondPub := newPGPKey(t, "Second")
	sshTrusted := newSSHKey(t, dir, "id_trusted")
	sshOther := newSSHKey(t, dir, "id_other")
	keys := writeFile(t, dir, "keys", "# trusted signers\n"+trustedPub+"\n"+secondPub+
		"ops@example.com namespaces=\"git,file\" "+sshTrusted.public+"\n")

	f.commit("unsigned base", map[string]string{"f": "base"})
	f.push()
	srv := startGitServer(t, f, "", "")
	r := openOK(t, Options{URL: srv.url("repo.git"), Ref: "main", CacheDir: t.TempDir(), Verify: &Verify{KeysFile: keys}})
	var lastGood Revision

	accept := func(name, commit, signer string) {
		t.Helper()
		f.push("--force", "main")
		rev, err := r.Fetch(t.Context())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if rev.Commit != commit || !strings.Contains(rev.Signer, signer) {
			t.Fatalf("%s: commit %s signer %q, want %s by %q", name, rev.Commit, rev.Signer, commit, signer)
		}
		lastGood = rev
	}
	refuse := func(name, commit, want string) {
		t.Helper()
		f.push("--force", "main")
		_, err := r.Fetch(t.Context())
		if !errors.Is(err, ErrSignature) || !strings.Contains(err.Error(), "commit "+commit) || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: error %v, want ErrSignature naming commit %s and saying %q", name, err, commit, want)
		}
		if lastGood.Dir != "" {
			if _, err := os.Stat(lastGood.Dir); err != nil {
				t.Fatalf("%s: the last good tree is gone: %v", name, err)
			}
		}
	}

	refuse("unsigned", f.run(f.work, "rev-parse", "HEAD"), "is not signed")

	c := goGitCommit(t, f, "signed", map[string]string{"f": "pgp"}, trusted, nil)
	accept("OpenPGP, trusted", c, "openpgp "+strings.ToUpper(fingerprint(trusted))+" Trusted")

	c = goGitCommit(t, f, "signed by the second key", map[string]string{"f": "pgp2"}, second, nil)
	accept("OpenPGP, second block of the keys file", c, "Second")

	c = goGitCommit(t, f, "signed by another", map[string]string{"f": "other"}, other, nil)
	refuse("OpenPGP, untrusted", c, "is signed by OpenPGP key "+strings.ToUpper(keyID(other))+", which is not in "+keys)

	c = f.commit("unsigned", map[string]string{"f": "plain"})
	refuse("unsigned", c, "is not signed")

	f.run(f.work, "-c", "gpg.format=ssh", "-c", "user.signingkey="+sshTrusted.path, "commit", "-q", "-S", "--allow-empty", "-m", "ssh signed by git")
	c = f.run(f.work, "rev-parse", "HEAD")
	accept("SSH by git and ssh-keygen, trusted", c, "ssh "+ssh.FingerprintSHA256(sshTrusted.signer.PublicKey())+" ops@example.com")

	c = goGitCommit(t, f, "ssh signed by sshsig", map[string]string{"f": "sshsig"}, nil, sshsigSigner{sshTrusted.signer})
	accept("SSH by sshsig, trusted", c, "ssh ")

	f.run(f.work, "-c", "gpg.format=ssh", "-c", "user.signingkey="+sshOther.path, "commit", "-q", "-S", "--allow-empty", "-m", "ssh signed by another")
	c = f.run(f.work, "rev-parse", "HEAD")
	refuse("SSH, untrusted", c, "is signed by SSH key "+ssh.FingerprintSHA256(sshOther.signer.PublicKey())+", which is not in")

	signed := goGitCommit(t, f, "to tamper with", map[string]string{"f": "pgp"}, trusted, nil)
	c = tamper(t, f, signed)
	refuse("OpenPGP, content changed after signing", c, "the OpenPGP signature does not verify")

	signed = goGitCommit(t, f, "to tamper with", map[string]string{"f": "ssh"}, nil, sshsigSigner{sshTrusted.signer})
	c = tamper(t, f, signed)
	refuse("SSH, content changed after signing", c, "the SSH signature by")

	// The keys file is read at each Fetch: removing a key refuses what it
	// signed, even a commit already in the cache.
	c = goGitCommit(t, f, "signed", map[string]string{"f": "pgp3"}, trusted, nil)
	accept("OpenPGP, trusted", c, "Trusted")
	if err := os.WriteFile(keys, []byte(secondPub), 0o600); err != nil {
		t.Fatal(err)
	}
	refuse("key removed from the keys file", c, "which is not in")
}

// tamper rewrites the work repository's commit h with a changed message and
// its signature kept, points main at it and returns its hash.
func tamper(t testing.TB, f *fixture, h string) string {
	t.Helper()
	repo, err := git.PlainOpen(f.work)
	if err != nil {
		t.Fatal(err)
	}
	c, err := repo.CommitObject(plumbing.NewHash(h))
	if err != nil {
		t.Fatal(err)
	}
	if c.PGPSignature == "" {
		t.Fatal("the commit to tamper with is not signed")
	}
	c.Message += "and a change after signing\n"
	obj := repo.Storer.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		t.Fatal(err)
	}
	nh, err := repo.Storer.SetEncodedObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	f.run(f.work, "update-ref", "refs/heads/main", nh.String())
	return nh.String()
}

// fingerprint is an OpenPGP key's fingerprint in hex.
func fingerprint(e *openpgp.Entity) string {
	return strings.ToUpper(bytesHex(e.PrimaryKey.Fingerprint))
}

// keyID is the 16-hex key ID of the key that signs: go-crypto's NewEntity
// signs with its signing subkey when there is one.
func keyID(e *openpgp.Entity) string {
	id := e.PrimaryKey.KeyId
	for _, s := range e.Subkeys {
		if s.Sig.FlagSign {
			id = s.PublicKey.KeyId
		}
	}
	return strings.ToUpper(uint64Hex(id))
}

func bytesHex(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

func uint64Hex(v uint64) string {
	b := make([]byte, 8)
	for i := 7; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
	return bytesHex(b)
}

// TestParseKeyring checks the keys file parser: what it accepts, and the
// file and line of what it refuses.
func TestParseKeyring(t *testing.T) {
	dir := t.TempDir()
	k := newSSHKey(t, dir, "k")
	_, pub := newPGPKey(t, "A")
	good := []string{
		k.public,
		"alice@example.com " + k.public,
		`alice@example.com,bob@example.com namespaces="git" ` + k.public,
		`* valid-after="20200101",valid-before="20991231Z" ` + k.public,
		pub,
		"# comment\n\n" + pub + "\n" + k.public + "\n",
	}
	for _, text := range good {
		if _, err := parseKeyring("keys", text); err != nil {
			t.Errorf("parseKeyring(%.60q): %v", text, err)
		}
	}
	bad := []struct{ text, want string }{
		{"", "keys holds no keys"},
		{"# only a comment\n", "holds no keys"},
		{"hello world\n", "keys:1: neither an OpenPGP key block nor an SSH public key line"},
		{"\n" + `a cert-authority ` + k.public, "keys:2: cert-authority keys are not supported"},
		{`a bogus=1 ` + k.public, `unknown option "bogus"`},
		{`a valid-after="yesterday" ` + k.public, "is not YYYYMMDD"},
		{`a "unterminated ` + k.public, "unterminated quote"},
		{strings.SplitN(pub, "\n", 4)[0] + "\n" + strings.SplitN(pub, "\n", 4)[1] + "\n", "an OpenPGP key block with no"},
		{"-----BEGIN PGP PRIVATE KEY BLOCK-----\n", "is not a public key block"},
		{"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nnot base64!\n-----END PGP PUBLIC KEY BLOCK-----\n", "keys:1: OpenPGP key block"},
	}
	for _, tc := range bad {
		_, err := parseKeyring("keys", tc.text)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseKeyring(%.60q) = %v, want an error saying %q", tc.text, err, tc.want)
		}
	}
	if _, err := loadKeyring(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "verify.keysFile") {
		t.Errorf("missing keys file: %v", err)
	}
}

// TestVerifySSHKeyOptions checks that an allowed signers line's namespaces
// and validity window are enforced.
func TestVerifySSHKeyOptions(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	k := newSSHKey(t, dir, "k")
	c := goGitCommit(t, f, "ssh", map[string]string{"f": "x"}, nil, sshsigSigner{k.signer})
	repo, err := git.PlainOpen(f.work)
	if err != nil {
		t.Fatal(err)
	}
	commit, err := repo.CommitObject(plumbing.NewHash(c))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ line, want string }{
		{`a namespaces="file" ` + k.public, `may not sign in the namespace "git"`},
		{`a valid-before="20000101" ` + k.public, "was not valid at the commit's time"},
		{`a valid-after="20990101Z" ` + k.public, "was not valid at the commit's time"},
		{`a namespaces="file,git",valid-after="20000101" ` + k.public, ""},
	}
	for _, tc := range cases {
		kr, err := parseKeyring("keys", tc.line)
		if err != nil {
			t.Fatal(err)
		}
		_, err = kr.verify(commit)
		if tc.want == "" && err != nil || tc.want != "" && (!errors.Is(err, ErrSignature) || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.line[:30], err, tc.want)
		}
	}
}
