package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/server"
	"github.com/vigil-run/vigil/session"
)

// people are the principals of the tests: for each of two tenants one of
// each role and one with none, and an admin (of acme, who sees every
// tenant). Each key is also its bearer token (padded to a token's length).
var people = map[string]server.Principal{}

func init() {
	for _, tenant := range []string{"acme", "globex"} {
		for _, role := range []server.Role{server.RoleViewer, server.RoleUser, server.RoleApprover} {
			people[tenant+"-"+string(role)] = server.Principal{Name: string(role) + "@" + tenant, Tenant: tenant, Roles: []server.Role{role}}
		}
		people[tenant+"-none"] = server.Principal{Name: "nobody@" + tenant, Tenant: tenant}
	}
	people["admin"] = server.Principal{Name: "root@acme", Tenant: "acme", Roles: []server.Role{server.RoleAdmin}}
}

// tokenOf is the bearer token of people[key].
func tokenOf(key string) string { return key + "-0123456789abcdef" }

// peopleAuth authenticates people: those with roles through a real token
// file, the role-less ones (which a token file cannot name, an issuer's
// token can) by their token alone.
func peopleAuth(t *testing.T) server.Authenticator {
	var lines strings.Builder
	none := map[string]server.Principal{}
	for key, p := range people {
		if len(p.Roles) == 0 {
			none[tokenOf(key)] = p
			continue
		}
		roles := make([]string, len(p.Roles))
		for i, r := range p.Roles {
			roles[i] = string(r)
		}
		fmt.Fprintf(&lines, "%s %s %s %s\n", p.Name, p.Tenant, strings.Join(roles, ","), tokenOf(key))
	}
	path := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(path, []byte(lines.String()), 0o600))
	file, err := server.NewTokens(path, "")
	require.NoError(t, err)
	return roleless{file, none}
}

// roleless asks the token file, then knows the role-less principals.
type roleless struct {
	file server.Authenticator
	none map[string]server.Principal
}

func (a roleless) Authenticate(r *http.Request) (server.Principal, error) {
	p, err := a.file.Authenticate(r)
	if !errors.Is(err, server.ErrBadCredentials) {
		return p, err
	}
	if p, ok := a.none[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]; ok {
		return p, nil
	}
	return server.Principal{}, err
}

// tenantFixture is a server with acme's session waiting for an approval
// and an idle session of globex, both made through the API by their
// tenant's user.
type tenantFixture struct {
	*api
	acme, globex, call string
}

func newTenantFixture(t *testing.T) *tenantFixture {
	metrics, err := server.NewMetrics()
	require.NoError(t, err)
	a := newAPI(t, composition(true, calc, scripted.Reply{Text: "42."}), server.Options{Auth: peopleAuth(t), Metrics: metrics})
	f := &tenantFixture{api: a}
	a.auth = tokenOf("acme-user")
	f.acme = a.create()
	a.auth = tokenOf("globex-user")
	f.globex = a.create()
	a.auth = tokenOf("acme-user")
	a.startWorker()
	a.json(http.StatusAccepted, "POST", "/v1/sessions/"+f.acme+"/turns", `{"prompt":"6 times 7?"}`, nil)
	a.auth = tokenOf("admin")
	recs := a.until(f.acme, -1, suspends)
	req, err := session.DecodeData[session.ApprovalRequest](recs[len(recs)-1])
	require.NoError(t, err)
	f.call = req.ID
	// The worker finishes the job after the turn suspended, logging
	// nothing more: poll for it.
	var sum server.Summary
	require.Eventually(t, func() bool {
		a.json(http.StatusOK, "GET", "/v1/sessions/"+f.acme, "", &sum)
		return sum.Status == server.StatusSuspended
	}, 20*time.Second, 5*time.Millisecond)
	a.stopWorker()
	return f
}

// state is what a refused request must leave as it was: acme's log and
// queue and the sessions there are.
type state struct {
	events, jobs, sessions int
}

func (f *tenantFixture) state() state {
	f.t.Helper()
	ctx := context.Background()
	log, err := f.rt.Session(ctx, f.acme)
	require.NoError(f.t, err)
	q, err := f.rt.Queue()
	require.NoError(f.t, err)
	jobs, err := q.Jobs(ctx, f.acme)
	require.NoError(f.t, err)
	infos, err := f.rt.Sessions(ctx)
	require.NoError(f.t, err)
	return state{len(log.Records), len(jobs), len(infos)}
}

// Every route, tried by every principal on acme's session: another
// tenant's principal gets 404 (never 403, which would tell the session
// exists), a principal of the tenant without the route's role 403
// forbidden, and neither changes anything; the others are admitted.
func TestEveryRouteAcrossTenantsAndRoles(t *testing.T) {
	f := newTenantFixture(t)
	s := "/v1/sessions/" + f.acme
	routes := []struct {
		name, method, path, body string
		role                     server.Role
		// admitted is the answer of an admitted caller: chosen so it
		// changes nothing of acme's session (a turn on a suspended
		// session is refused, the decision's scope is invalid, there is
		// nothing to cancel).
		admitted int
		code     string
		// session says the route names acme's session (else another
		// tenant is admitted as anyone would be). A fork names it in its
		// body, so the route's role is checked first: a caller that may
		// fork nothing is told 403 whatever the source (which tells
		// nothing of it), one that may fork is told 404.
		session bool
	}{
		{"list", "GET", "/v1/sessions", "", server.RoleViewer, http.StatusOK, "", false},
		{"create", "POST", "/v1/sessions", "", server.RoleUser, http.StatusCreated, "", false},
		{"get", "GET", s, "", server.RoleViewer, http.StatusOK, "", true},
		{"events", "GET", s + "/events", "", server.RoleViewer, http.StatusOK, "", true},
		{"verify", "GET", s + "/verify", "", server.RoleViewer, http.StatusOK, "", true},
		{"turns", "POST", s + "/turns", `{"prompt":"again"}`, server.RoleUser, http.StatusConflict, server.CodeSuspended, true},
		{"approvals", "POST", s + "/approvals/" + f.call, `{"allow":false,"scope":"session"}`, server.RoleApprover, http.StatusBadRequest, server.CodeInvalidDecision, true},
		{"cancel", "POST", s + "/cancel", "", server.RoleUser, http.StatusOK, "", true},
		// An admitted delete is refused by its query, deleting nothing.
		{"delete", "DELETE", s + "?tree=maybe", "", server.RoleUser, http.StatusBadRequest, server.CodeBadRequest, true},
		{"fork", "POST", "/v1/sessions", `{"fork":{"session":"` + f.acme + `","at":-1}}`, server.RoleUser, http.StatusCreated, "", true},
		{"steps", "GET", s + "/steps", "", server.RoleViewer, http.StatusOK, "", true},
		{"step request", "GET", s + "/steps/1/1/request", "", server.RoleViewer, http.StatusOK, "", true},
		{"forks", "POST", s + "/forks", `{"at":-1}`, server.RoleUser, http.StatusCreated, "", true},
		{"trace", "GET", s + "/trace", "", server.RoleViewer, http.StatusOK, "", true},
		{"usage", "GET", s + "/usage", "", server.RoleViewer, http.StatusOK, "", true},
		{"replay", "GET", s + "/replay", "", server.RoleViewer, http.StatusOK, "", true},
		{"metrics", "GET", "/metrics", "", server.RoleAdmin, http.StatusOK, "", false},
	}
	tokens := []string{"admin", "acme-viewer", "acme-user", "acme-approver", "acme-none",
		"globex-viewer", "globex-user", "globex-approver", "globex-none"}
	for _, rt := range routes {
		for _, tok := range tokens {
			p := people[tok]
			t.Run(rt.name+"/"+tok, func(t *testing.T) {
				f.t = t
				f.auth = tokenOf(tok)
				want, code := rt.admitted, rt.code
				inBody := rt.path == "/v1/sessions"
				switch {
				case rt.session && !p.Has(server.RoleAdmin) && p.Tenant != "acme" && (!inBody || p.Has(rt.role)):
					want, code = http.StatusNotFound, server.CodeNotFound
				case !p.Has(rt.role):
					want, code = http.StatusForbidden, server.CodeForbidden
				}
				before := f.state()
				got, body := f.do(rt.method, rt.path, rt.body)
				require.Equal(t, want, got, "%s %s as %s: %s", rt.method, rt.path, tok, body)
				if code != "" {
					var e server.Error
					require.NoError(t, json.Unmarshal(body, &e), "%s", body)
					assert.Equal(t, code, e.Code, "%s", body)
				}
				if want == http.StatusNotFound || want == http.StatusForbidden {
					assert.Equal(t, before, f.state(), "a refusal changes nothing")
				}
			})
		}
	}
}

// Another tenant's session is answered word for word as a session that
// does not exist, on every route that names one.
func TestAnotherTenantsSessionIsNoSession(t *testing.T) {
	f := newTenantFixture(t)
	f.auth = tokenOf("globex-user")
	const nosuch = "01NOSUCHSESSION0000000000X"
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/sessions/ID", ""},
		{"GET", "/v1/sessions/ID/events", ""},
		{"POST", "/v1/sessions/ID/turns", `{"prompt":"x"}`},
		{"DELETE", "/v1/sessions/ID", ""},
		{"POST", "/v1/sessions", `{"fork":{"session":"ID","at":-1}}`},
		{"GET", "/v1/sessions/ID/steps", ""},
		{"GET", "/v1/sessions/ID/steps/1/1/request", ""},
		{"POST", "/v1/sessions/ID/forks", `{"at":-1}`},
		{"GET", "/v1/sessions/ID/trace", ""},
		{"GET", "/v1/sessions/ID/usage", ""},
		{"GET", "/v1/sessions/ID/replay", ""},
	} {
		theirs, body := f.do(c.method, strings.ReplaceAll(c.path, "ID", f.acme), strings.ReplaceAll(c.body, "ID", f.acme))
		none, want := f.do(c.method, strings.ReplaceAll(c.path, "ID", nosuch), strings.ReplaceAll(c.body, "ID", nosuch))
		assert.Equal(t, http.StatusNotFound, theirs, "%s", body)
		assert.Equal(t, none, theirs)
		assert.Equal(t, string(want), strings.ReplaceAll(string(body), f.acme, nosuch), "%s %s", c.method, c.path)
	}
}

// The list shows a caller its tenant's sessions only, an admin every
// tenant's; each names its tenant and creator.
func TestListShowsTheCallersTenant(t *testing.T) {
	f := newTenantFixture(t)
	for tok, want := range map[string][]string{
		"acme-viewer":   {f.acme},
		"globex-viewer": {f.globex},
		"admin":         {f.acme, f.globex},
	} {
		f.auth = tokenOf(tok)
		var list struct{ Sessions []server.SessionInfo }
		f.json(http.StatusOK, "GET", "/v1/sessions", "", &list)
		var ids []string
		for _, s := range list.Sessions {
			ids = append(ids, s.ID)
			tenant := strings.SplitN(s.By, "@", 2)[1]
			assert.Equal(t, tenant, s.Tenant, "%s was made by %s", s.ID, s.By)
		}
		assert.ElementsMatch(t, want, ids, tok)
	}
}

// Who created a session, posted a turn, forked or decided is the
// authenticated principal, in the log; a fork stays in its parent's
// tenant even when an admin of another makes it.
func TestWhoDidItIsLogged(t *testing.T) {
	f := newTenantFixture(t)
	ctx := context.Background()
	log, err := f.rt.Session(ctx, f.acme)
	require.NoError(t, err)
	assert.Equal(t, "acme", log.Info.Tenant)
	assert.Equal(t, "user@acme", log.Info.By)
	var start session.TurnStart
	for _, r := range log.Records {
		if r.Type() == session.TypeTurnStart {
			start, err = session.DecodeData[session.TurnStart](r)
			require.NoError(t, err)
		}
	}
	assert.Equal(t, "user@acme", start.By, "the turn/start names who posted the turn")

	f.auth = tokenOf("admin")
	var sum server.Summary
	f.json(http.StatusCreated, "POST", "/v1/sessions", `{"fork":{"session":"`+f.globex+`","at":-1}}`, &sum)
	assert.Equal(t, "globex", sum.Tenant, "a fork belongs to its parent's tenant")
	assert.Equal(t, "root@acme", sum.By)

	f.auth = tokenOf("acme-approver")
	var e server.Error
	f.json(http.StatusBadRequest, "POST", "/v1/sessions/"+f.acme+"/approvals/"+f.call, `{"allow":true,"by":"user@acme"}`, &e)
	assert.Equal(t, server.CodeBadRequest, e.Code, "a body cannot say who decided")
	f.json(http.StatusAccepted, "POST", "/v1/sessions/"+f.acme+"/approvals/"+f.call, `{"allow":true}`, nil)
	f.auth = tokenOf("admin")
	f.startWorker()
	recs := f.until(f.acme, int64(len(log.Records)-1), turnEnd)
	var decided bool
	for _, r := range recs {
		if r.Type() == session.TypeApprovalDecision {
			d, err := session.DecodeData[session.ApprovalDecision](r)
			require.NoError(t, err)
			assert.Equal(t, "approver@acme", d.By)
			decided = true
		}
	}
	assert.True(t, decided)
}
