package server_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/server"
)

// Tokens long enough for a token file.
const (
	aliceTok = "alice-0123456789abcdef"
	bobTok   = "bob-0123456789abcdef01"
	carolTok = "carol-0123456789abcdef"
)

// authAs authenticates a request carrying the Authorization header h.
func authAs(a server.Authenticator, h string) (server.Principal, error) {
	req := httptest.NewRequest("GET", "/v1/sessions", nil)
	if h != "" {
		req.Header.Set("Authorization", h)
	}
	return a.Authenticate(req)
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
}

func TestATokenFileNamesEachTokensPrincipal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.txt")
	writeFile(t, path, `# who   tenant  roles              token
alice   acme    user,approver      `+aliceTok+`

  bob   globex  viewer             `+bobTok+`   
	# an indented comment
`)
	toks, err := server.NewTokens(path, "carol default admin "+carolTok)
	require.NoError(t, err)
	assert.Equal(t, 3, toks.Len())
	for _, tc := range []struct {
		header string
		want   server.Principal
	}{
		{"Bearer " + aliceTok, server.Principal{Name: "alice", Tenant: "acme", Roles: []server.Role{server.RoleUser, server.RoleApprover}}},
		{"bearer " + bobTok, server.Principal{Name: "bob", Tenant: "globex", Roles: []server.Role{server.RoleViewer}}},
		{"Bearer   " + carolTok + " ", server.Principal{Name: "carol", Tenant: "default", Roles: []server.Role{server.RoleAdmin}}},
	} {
		p, err := authAs(toks, tc.header)
		require.NoError(t, err, tc.header)
		assert.Equal(t, tc.want, p)
	}
	for _, h := range []string{"Bearer " + aliceTok + "x", "Bearer " + aliceTok[:len(aliceTok)-1], "Bearer alice", "Bearer " + strings.ToUpper(aliceTok)} {
		_, err := authAs(toks, h)
		assert.ErrorIs(t, err, server.ErrBadCredentials, h)
	}
	for _, h := range []string{"", aliceTok, "Basic " + aliceTok, "Bearer ", "Bearer eyJhbGciOiJSUzI1NiJ9.e30.c2ln"} {
		_, err := authAs(toks, h)
		assert.ErrorIs(t, err, server.ErrNoCredentials, "%q", h)
	}
}

func TestAMalformedTokenFileNamesTheLine(t *testing.T) {
	ok := "alice acme user " + aliceTok + "\n"
	for _, tc := range []struct {
		name, text, want string
	}{
		{"old format", "# tokens\n" + aliceTok + "\n", "line 2: a bare token: each line now names its principal, \"name tenant roles token\""},
		{"three fields", ok + "bob globex " + bobTok + "\n", "line 2: 3 fields, want 4: name tenant roles token"},
		{"five fields", ok + "bob globex viewer " + bobTok + " #bob\n", "line 2: 5 fields, want 4"},
		{"unknown role", ok + "\n\nbob globex viewer,root " + bobTok + "\n", `line 4: "root" is not a role (viewer, user, approver, admin)`},
		{"empty role", "bob globex viewer,, " + bobTok + "\n", `line 1: "" is not a role`},
		{"short token", "bob globex viewer s3cret\n", "line 1: the token is shorter than 16 characters"},
		{"a JWT", "bob globex viewer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJib2IifQ.c2lnbmF0dXJl\n", "line 1: the token looks like a JWT"},
		{"a control character", "bob\x01 globex viewer " + bobTok + "\n", "line 1: the name and the tenant must be printable"},
		{"one token twice", ok + "bob globex viewer " + aliceTok + "\n", "one token is given for both alice and bob"},
		{"no token", "# nobody yet\n\n", "holds no token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tokens.txt")
			writeFile(t, path, tc.text)
			_, err := server.NewTokens(path, "")
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			for _, tok := range []string{aliceTok, bobTok, "s3cret", "c2lnbmF0dXJl"} {
				assert.NotContains(t, err.Error(), tok, "an error never shows a token")
			}
		})
	}
	_, err := server.NewTokens(filepath.Join(t.TempDir(), "missing"), "")
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestVIGIL_TOKENSTakesTheFileFormat(t *testing.T) {
	toks, err := server.NewTokens("", "alice acme user "+aliceTok+"; bob globex viewer "+bobTok+"\n")
	require.NoError(t, err)
	p, err := authAs(toks, "Bearer "+bobTok)
	require.NoError(t, err)
	assert.Equal(t, "bob", p.Name)

	_, err = server.NewTokens("", aliceTok+","+bobTok)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "VIGIL_TOKENS entry 1: a bare token")
	_, err = server.NewTokens("", "")
	assert.Error(t, err, "no token at all")
}

// Reload swaps the whole set at once; a reload that fails keeps the set
// in force. Requests authenticate throughout (-race).
func TestReloadSwapsTheTokensAtOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.txt")
	writeFile(t, path, "alice acme user "+aliceTok+"\n")
	toks, err := server.NewTokens(path, "carol default admin "+carolTok)
	require.NoError(t, err)
	a := newAPI(t, composition(false, scripted.Reply{Text: "ok"}), server.Options{Auth: toks})
	status := func(tok string) int {
		code, _ := a.do("GET", "/v1/sessions", "", "Authorization", "Bearer "+tok)
		return code
	}
	require.Equal(t, http.StatusOK, status(aliceTok))
	require.Equal(t, http.StatusUnauthorized, status(bobTok))

	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				p, err := authAs(toks, "Bearer "+carolTok)
				if !assert.NoError(t, err) || !assert.Equal(t, "carol", p.Name) {
					return
				}
			}
		})
	}
	for i := range 50 {
		if i%2 == 0 {
			writeFile(t, path, "bob globex viewer "+bobTok+"\n")
		} else {
			writeFile(t, path, "alice acme user "+aliceTok+"\n")
		}
		require.NoError(t, toks.Reload())
	}
	close(stop)
	wg.Wait()
	assert.Equal(t, http.StatusOK, status(aliceTok), "the last file's")
	assert.Equal(t, http.StatusUnauthorized, status(bobTok), "revoked by the reload")

	writeFile(t, path, "bob globex viewer "+bobTok+"\n")
	require.NoError(t, toks.Reload())
	assert.Equal(t, http.StatusUnauthorized, status(aliceTok), "revoked by the reload")
	assert.Equal(t, http.StatusOK, status(bobTok))
	assert.Equal(t, http.StatusOK, status(carolTok), "VIGIL_TOKENS stays")

	writeFile(t, path, "bob globex viewer\n")
	err = toks.Reload()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "line 1: 3 fields")
	assert.Equal(t, http.StatusOK, status(bobTok), "a failed reload keeps the set in force")
	require.NoError(t, os.Remove(path))
	require.Error(t, toks.Reload())
	assert.Equal(t, http.StatusOK, status(bobTok), "a failed reload keeps the set in force")
}

// FuzzTokenLines: any text is a set of tokens or an error, never a
// panic; an error never shows a token-sized field of the text, and every
// principal parsed holds known roles only.
func FuzzTokenLines(f *testing.F) {
	f.Add("alice acme user,approver " + aliceTok + "\n# c\n\nbob globex viewer " + bobTok)
	f.Add(aliceTok)
	f.Add("a b c d e")
	f.Add("a b root " + aliceTok)
	f.Add("a\x00 b admin " + aliceTok + ";b c viewer " + aliceTok)
	f.Fuzz(func(t *testing.T, text string) {
		toks, err := server.NewTokens("", text)
		if err != nil {
			for f := range strings.FieldsSeq(strings.ReplaceAll(text, ";", "\n")) {
				if len(f) >= server.MinTokenLength {
					assert.NotContains(t, err.Error(), f, "an error shows a field of the text that could be a token")
				}
			}
			return
		}
		require.Positive(t, toks.Len())
		for f := range strings.FieldsSeq(strings.ReplaceAll(text, ";", "\n")) {
			p, err := authAs(toks, "Bearer "+f)
			if err != nil {
				continue
			}
			for _, r := range p.Roles {
				_, err := server.ParseRole(string(r))
				assert.NoError(t, err)
			}
		}
	})
}
