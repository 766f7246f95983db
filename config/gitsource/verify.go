package gitsource

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"

	"github.com/driftwatch/driftwatch/internal/safefile"
)

// maxKeysFileBytes bounds Verify.KeysFile.
const maxKeysFileBytes = 1 << 20

// sshNamespace is the namespace git signs commits in.
const sshNamespace = "git"

// Armor lines of the formats a keys file and a signature may hold.
const (
	pgpKeyBegin = "-----BEGIN PGP PUBLIC KEY BLOCK-----"
	pgpKeyEnd   = "-----END PGP PUBLIC KEY BLOCK-----"
	pgpSigBegin = "-----BEGIN PGP SIGNATURE-----"
	pgpMsgBegin = "-----BEGIN PGP MESSAGE-----"
	sshSigBegin = "-----BEGIN SSH SIGNATURE-----"
	x509Begin   = "-----BEGIN SIGNED MESSAGE-----"
	x509Cert    = "-----BEGIN CERTIFICATE-----"
)

// keyring is the content of a Verify.KeysFile.
type keyring struct {
	file string
	// pgp holds each armored OpenPGP block as written (go-git's
	// Commit.Verify takes one armored key ring) and its parsed keys.
	pgp     []string
	pgpKeys openpgp.EntityList
	ssh     []sshKey
}

// sshKey is one trusted SSH key and the options of its line.
type sshKey struct {
	line       int
	principals string
	key        ssh.PublicKey
	namespaces []string  // nil: any
	after      time.Time // valid-after; zero: none
	before     time.Time // valid-before; zero: none
}

// loadKeyring reads and parses a keys file.
func loadKeyring(path string) (*keyring, error) {
	b, err := safefile.ReadLimited(path, maxKeysFileBytes)
	if err != nil {
		return nil, fmt.Errorf("verify.keysFile: %w", err)
	}
	k, err := parseKeyring(path, string(b))
	if err != nil {
		return nil, fmt.Errorf("verify.keysFile: %w", err)
	}
	return k, nil
}

// parseKeyring parses the text of a keys file named file.
func parseKeyring(file, text string) (*keyring, error) {
	k := &keyring{file: file}
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case line == pgpKeyBegin:
			start := i
			for i < len(lines) && strings.TrimSpace(lines[i]) != pgpKeyEnd {
				i++
			}
			if i == len(lines) {
				return nil, fmt.Errorf("%s:%d: an OpenPGP key block with no %s", file, start+1, pgpKeyEnd)
			}
			block := strings.Join(lines[start:i+1], "\n") + "\n"
			keys, err := openpgp.ReadArmoredKeyRing(strings.NewReader(block))
			if err != nil {
				return nil, fmt.Errorf("%s:%d: OpenPGP key block: %w", file, start+1, err)
			}
			k.pgp = append(k.pgp, block)
			k.pgpKeys = append(k.pgpKeys, keys...)
		case strings.HasPrefix(line, "-----BEGIN "):
			return nil, fmt.Errorf("%s:%d: %s is not a public key block", file, i+1, line)
		default:
			key, err := parseSSHKeyLine(line)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", file, i+1, err)
			}
			key.line = i + 1
			k.ssh = append(k.ssh, key)
		}
	}
	if len(k.pgp) == 0 && len(k.ssh) == 0 {
		return nil, fmt.Errorf("%s holds no keys", file)
	}
	return k, nil
}

// parseSSHKeyLine parses "[principals [options]] keytype base64 [comment]":
// an authorized_keys line or a gpg.ssh.allowedSignersFile line.
func parseSSHKeyLine(line string) (sshKey, error) {
	fields, err := splitFields(line)
	if err != nil {
		return sshKey{}, err
	}
	at := -1
	var pub ssh.PublicKey
	for i := 0; i+1 < len(fields) && i <= 2; i++ {
		raw, err := base64.StdEncoding.DecodeString(fields[i+1])
		if err != nil {
			continue
		}
		if p, err := ssh.ParsePublicKey(raw); err == nil && p.Type() == fields[i] {
			at, pub = i, p
			break
		}
	}
	if at < 0 {
		return sshKey{}, errors.New("neither an OpenPGP key block nor an SSH public key line")
	}
	k := sshKey{key: pub}
	if at >= 1 {
		k.principals = fields[0]
	}
	if at == 2 {
		if err := k.setOptions(fields[1]); err != nil {
			return sshKey{}, err
		}
	}
	return k, nil
}

// setOptions applies the comma-separated options of an allowed signers
// line.
func (k *sshKey) setOptions(opts string) error {
	for _, opt := range splitOptions(opts) {
		name, value, _ := strings.Cut(opt, "=")
		value = strings.Trim(value, `"`)
		switch strings.ToLower(name) {
		case "namespaces":
			k.namespaces = strings.Split(value, ",")
		case "valid-after", "valid-before":
			t, err := parseSSHTime(value)
			if err != nil {
				return fmt.Errorf("option %s: %w", name, err)
			}
			if strings.EqualFold(name, "valid-after") {
				k.after = t
			} else {
				k.before = t
			}
		case "cert-authority":
			return errors.New("cert-authority keys are not supported; list the signing keys themselves")
		default:
			return fmt.Errorf("unknown option %q", name)
		}
	}
	return nil
}

// parseSSHTime parses ssh-keygen's YYYYMMDD[HHMM[SS]][Z] (local time
// without Z).
func parseSSHTime(s string) (time.Time, error) {
	loc := time.Local
	if v, ok := strings.CutSuffix(s, "Z"); ok {
		s, loc = v, time.UTC
	}
	for _, layout := range []string{"20060102", "200601021504", "20060102150405"} {
		if len(s) == len(layout) {
			return time.ParseInLocation(layout, s, loc)
		}
	}
	return time.Time{}, fmt.Errorf("%q is not YYYYMMDD[HHMM[SS]][Z]", s)
}

// splitFields splits a line at spaces, keeping double-quoted parts whole.
func splitFields(line string) ([]string, error) {
	var out []string
	var cur strings.Builder
	quoted := false
	for _, r := range line {
		switch {
		case r == '"':
			quoted = !quoted
			cur.WriteRune(r)
		case (r == ' ' || r == '\t') && !quoted:
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if quoted {
		return nil, errors.New("an unterminated quote")
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out, nil
}

// splitOptions splits options at commas outside double quotes.
func splitOptions(s string) []string {
	var out []string
	start, quoted := 0, false
	for i, r := range s {
		switch {
		case r == '"':
			quoted = !quoted
		case r == ',' && !quoted:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// verify checks c's signature against the keyring and names the signer.
func (k *keyring) verify(c *object.Commit) (string, error) {
	id := c.Hash.String()
	sig := strings.TrimSpace(c.PGPSignature)
	switch {
	case sig == "":
		return "", fmt.Errorf("commit %s is not signed (verify.keysFile %s): %w", id, k.file, ErrSignature)
	case strings.HasPrefix(sig, pgpSigBegin) || strings.HasPrefix(sig, pgpMsgBegin):
		return k.verifyPGP(c)
	case strings.HasPrefix(sig, sshSigBegin):
		return k.verifySSH(c)
	case strings.HasPrefix(sig, x509Begin) || strings.HasPrefix(sig, x509Cert):
		return "", fmt.Errorf("commit %s has an X.509 (gpgsm) signature, which is not supported: %w", id, ErrSignature)
	default:
		return "", fmt.Errorf("commit %s has a signature of an unknown format: %w", id, ErrSignature)
	}
}

// verifyPGP checks an OpenPGP signature with go-git's Commit.Verify, once
// per armored block of the keys file.
func (k *keyring) verifyPGP(c *object.Commit) (string, error) {
	id := c.Hash.String()
	if len(k.pgp) == 0 {
		return "", fmt.Errorf("commit %s has an OpenPGP signature, and %s holds no OpenPGP key: %w", id, k.file, ErrSignature)
	}
	issuer := pgpIssuer(c.PGPSignature)
	var lastErr error
	for _, block := range k.pgp {
		e, err := c.Verify(block)
		if err == nil {
			return "openpgp " + fmt.Sprintf("%X", e.PrimaryKey.Fingerprint) + identity(e), nil
		}
		if errors.Is(err, object.ErrMultipleSignatures) {
			return "", fmt.Errorf("commit %s carries several signatures, which is refused: %w", id, ErrSignature)
		}
		lastErr = err
	}
	if issuer != 0 && len(k.pgpKeys.KeysById(issuer)) == 0 {
		return "", fmt.Errorf("commit %s is signed by OpenPGP key %016X, which is not in %s: %w", id, issuer, k.file, ErrSignature)
	}
	return "", fmt.Errorf("commit %s: the OpenPGP signature does not verify (%v): %w", id, lastErr, ErrSignature)
}

// identity is " <name>" of an OpenPGP key's primary identity, or "".
func identity(e *openpgp.Entity) string {
	if id := e.PrimaryIdentity(); id != nil {
		return " " + id.Name
	}
	return ""
}

// pgpIssuer returns the key ID that made an armored OpenPGP signature, 0
// when it says none.
func pgpIssuer(armored string) uint64 {
	b, err := armor.Decode(strings.NewReader(armored))
	if err != nil {
		return 0
	}
	p, err := packet.Read(b.Body)
	if err != nil {
		return 0
	}
	s, ok := p.(*packet.Signature)
	if !ok || s.IssuerKeyId == nil {
		return 0
	}
	return *s.IssuerKeyId
}

// verifySSH checks an SSH signature (git's gpg.format=ssh) with
// github.com/hiddeco/sshsig, against the keys of the file, in git's
// namespace, within the keys' validity at the commit's committer time.
func (k *keyring) verifySSH(c *object.Commit) (string, error) {
	id := c.Hash.String()
	sig, err := sshsig.Unarmor([]byte(c.PGPSignature))
	if err != nil {
		return "", fmt.Errorf("commit %s: unreadable SSH signature (%v): %w", id, err, ErrSignature)
	}
	fp := ssh.FingerprintSHA256(sig.PublicKey)
	var key *sshKey
	for i := range k.ssh {
		if ssh.FingerprintSHA256(k.ssh[i].key) == fp {
			key = &k.ssh[i]
			break
		}
	}
	if key == nil {
		return "", fmt.Errorf("commit %s is signed by SSH key %s, which is not in %s: %w", id, fp, k.file, ErrSignature)
	}
	if key.namespaces != nil && !slices.Contains(key.namespaces, sshNamespace) {
		return "", fmt.Errorf("commit %s: SSH key %s (%s:%d) may not sign in the namespace %q: %w", id, fp, k.file, key.line, sshNamespace, ErrSignature)
	}
	when := c.Committer.When
	if !key.after.IsZero() && when.Before(key.after) || !key.before.IsZero() && when.After(key.before) {
		return "", fmt.Errorf("commit %s: SSH key %s (%s:%d) was not valid at the commit's time %s: %w", id, fp, k.file, key.line, when.Format(time.RFC3339), ErrSignature)
	}
	msg := &plumbing.MemoryObject{}
	if err := c.EncodeWithoutSignature(msg); err != nil {
		return "", fmt.Errorf("commit %s: %w", id, err)
	}
	r, err := msg.Reader()
	if err != nil {
		return "", fmt.Errorf("commit %s: %w", id, err)
	}
	defer r.Close()
	var body bytes.Buffer
	if _, err := io.Copy(&body, r); err != nil {
		return "", fmt.Errorf("commit %s: %w", id, err)
	}
	if err := sshsig.Verify(&body, sig, key.key, sig.HashAlgorithm, sshNamespace); err != nil {
		return "", fmt.Errorf("commit %s: the SSH signature by %s does not verify (%v): %w", id, fp, err, ErrSignature)
	}
	signer := "ssh " + fp
	if key.principals != "" {
		signer += " " + key.principals
	}
	return signer, nil
}
