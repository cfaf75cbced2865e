package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"unicode"
	"unicode/utf8"
)

// MinTokenLength is the shortest token a token file may hold: a token is
// a password that never expires, so it must not be guessable.
const MinTokenLength = 16

// TokenLineFormat is the format of a token file's lines, for messages.
const TokenLineFormat = "name tenant roles token"

// credential is one token: the principal it names and the SHA-256 of the
// token, so that comparing takes the same time whatever its length.
type credential struct {
	p   Principal
	sum [sha256.Size]byte
}

// Tokens is an [Authenticator] of bearer tokens, each naming a principal:
// the lines of a token file (`name tenant roles token`: roles
// comma-separated from viewer, user, approver, admin; # starts a comment
// line) and entries in the same format given once (VIGIL_TOKENS).
// [Tokens.Reload] reads the file again and swaps the set at once.
type Tokens struct {
	path  string
	fixed []credential // kept by Reload
	set   atomic.Pointer[[]credential]
}

// NewTokens returns the tokens of the file at path (none when path is "")
// and of extra: entries in the file's format separated by newlines or ';'
// (VIGIL_TOKENS). A malformed line is an error naming it; so is a set
// without any token.
func NewTokens(path, extra string) (*Tokens, error) {
	fixed, err := parseTokens("VIGIL_TOKENS entry", strings.ReplaceAll(extra, ";", "\n"))
	if err != nil {
		return nil, err
	}
	t := &Tokens{path: path, fixed: fixed}
	if err := t.Reload(); err != nil {
		return nil, err
	}
	if t.Len() == 0 {
		return nil, errors.New("server: no token given")
	}
	return t, nil
}

// adminTokens are [Options].Tokens: admins of the default tenant.
func adminTokens(tokens []string) *Tokens {
	var fixed []credential
	for _, tok := range tokens {
		if tok = strings.TrimSpace(tok); tok != "" {
			fixed = append(fixed, credential{Principal{Name: "token", Tenant: DefaultTenant, Roles: []Role{RoleAdmin}}, sha256.Sum256([]byte(tok))})
		}
	}
	t := &Tokens{fixed: fixed}
	t.set.Store(&fixed)
	return t
}

// Reload reads the token file again and puts its tokens (and the fixed
// ones) in force at once. On an error the set in force is kept.
func (t *Tokens) Reload() error {
	set := slices.Clone(t.fixed)
	if t.path != "" {
		data, err := os.ReadFile(t.path)
		if err != nil {
			return fmt.Errorf("server: token file: %w", err)
		}
		creds, err := parseTokens(t.path+": line", string(data))
		if err != nil {
			return err
		}
		if len(creds) == 0 {
			return fmt.Errorf("server: token file %s holds no token (lines: %s)", t.path, TokenLineFormat)
		}
		set = append(set, creds...)
	}
	if err := distinct(set); err != nil {
		return err
	}
	t.set.Store(&set)
	return nil
}

// Len returns the number of tokens in force.
func (t *Tokens) Len() int { return len(*t.set.Load()) }

// Authenticate returns the principal of r's bearer token. Every token in
// force is compared, in constant time, whichever matches.
func (t *Tokens) Authenticate(r *http.Request) (Principal, error) {
	tok, ok := bearer(r)
	if !ok || looksLikeJWT(tok) {
		return Principal{}, ErrNoCredentials
	}
	sum := sha256.Sum256([]byte(tok))
	set := *t.set.Load()
	found, at := 0, 0
	for i, c := range set {
		eq := subtle.ConstantTimeCompare(sum[:], c.sum[:])
		found |= eq
		at = subtle.ConstantTimeSelect(eq, i, at)
	}
	if found == 0 {
		return Principal{}, fmt.Errorf("%w: unknown token", ErrBadCredentials)
	}
	p := set[at].p
	p.Roles = slices.Clone(p.Roles)
	return p, nil
}

// parseTokens reads token lines; where prefixes the line number in errors
// ("tokens.txt: line"). An error never quotes a line: it may hold a token.
func parseTokens(where, text string) ([]credential, error) {
	var out []credential
	n := 0
	for line := range strings.Lines(text) {
		n++
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		c, err := parseTokenLine(strings.Fields(line))
		if err != nil {
			return nil, fmt.Errorf("server: %s %d: %w", where, n, err)
		}
		out = append(out, c)
	}
	return out, nil
}

func parseTokenLine(f []string) (credential, error) {
	switch {
	case len(f) == 1:
		return credential{}, fmt.Errorf("a bare token: each line now names its principal, %q (e.g. alice acme user,approver TOKEN)", TokenLineFormat)
	case len(f) != 4:
		return credential{}, fmt.Errorf("%d fields, want 4: %s", len(f), TokenLineFormat)
	}
	name, tenant, roles, tok := f[0], f[1], f[2], f[3]
	if !printable(name) || !printable(tenant) {
		return credential{}, errors.New("the name and the tenant must be printable UTF-8")
	}
	p := Principal{Name: name, Tenant: tenant}
	for r := range strings.SplitSeq(roles, ",") {
		role, err := ParseRole(r)
		if err != nil && len(r) >= MinTokenLength {
			// Fields out of order may put the token here: never show it.
			return credential{}, errors.New("the roles are not roles (viewer, user, approver, admin): is a field missing?")
		}
		if err != nil {
			return credential{}, err
		}
		if !slices.Contains(p.Roles, role) {
			p.Roles = append(p.Roles, role)
		}
	}
	switch {
	case len(tok) < MinTokenLength:
		return credential{}, fmt.Errorf("the token is shorter than %d characters", MinTokenLength)
	case looksLikeJWT(tok):
		return credential{}, errors.New("the token looks like a JWT, which goes to --oidc-issuer, never to the token file")
	}
	return credential{p, sha256.Sum256([]byte(tok))}, nil
}

// ParseRole returns the role named s: viewer, user, approver or admin.
func ParseRole(s string) (Role, error) {
	switch r := Role(s); r {
	case RoleViewer, RoleUser, RoleApprover, RoleAdmin:
		return r, nil
	}
	return "", fmt.Errorf("%.40q is not a role (viewer, user, approver, admin)", s)
}

// distinct refuses a set where one token names two principals.
func distinct(set []credential) error {
	seen := make(map[[sha256.Size]byte]string, len(set))
	for _, c := range set {
		if other, dup := seen[c.sum]; dup {
			return fmt.Errorf("server: one token is given for both %s and %s", other, c.p.Name)
		}
		seen[c.sum] = c.p.Name
	}
	return nil
}

func printable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl)
}
