//go:build unix

package adversarial_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/external"
	pluginpb "github.com/vigil-run/vigil/plugins/external/proto"
	"github.com/vigil-run/vigil/session"
)

// Over go-plugin none of the in-process attacks can be written: the
// protocol reaches no request and no provider. The host offers a plugin
// three calls, none of which carries a request or a provider, and hands
// it copies (protobuf messages) of what it shows; a plugin's own calls
// are session events (observed or vetoed, before commit, like any
// append) and tool calls (whose results are logged).
func TestProtocolOffersNoCallThatReachesARequest(t *testing.T) {
	methods := func(name protoreflect.Name) []string {
		svc := pluginpb.File_plugin_proto.Services().ByName(name)
		require.NotNil(t, svc, "service %s", name)
		var out []string
		for i := 0; i < svc.Methods().Len(); i++ {
			out = append(out, string(svc.Methods().Get(i).Name()))
		}
		sort.Strings(out)
		return out
	}
	assert.Equal(t, []string{"Emit", "Log", "Messages"}, methods("Host"),
		"what a plugin may ask the host; a new call must be judged against the side doors docs/architecture.md lists")
	assert.Equal(t, []string{"CallTool", "Configure", "Describe", "Dispose", "ListTools", "OnEvent", "Validate"}, methods("Plugin"))
	// A scorer is called by the host with a copy of a pair of turns; it
	// is served no Host at all.
	assert.Equal(t, []string{"Score"}, methods("Scorer"))
	assert.Equal(t, 3, pluginpb.File_plugin_proto.Services().Len(), "a new service must be judged against the side doors too")
}

// A plugin that asks for llm/stream, or for the bus's veto seam itself,
// is refused when it is applied, before it sees anything.
func TestOutOfProcessPluginCannotSubscribeToRequests(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "llmstream")
	out, err := exec.Command("go", "build", "-o", bin, "./testdata/llmstream").CombinedOutput()
	require.NoError(t, err, "%s", out)

	w := newWorld(t, invariants.ModeStrict)
	f, err := w.c.Plugin(external.New(), &external.Config{Path: bin})
	if err == nil {
		err = f.Err()
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), `subscribes to "llm/stream"`)

	// The composition keeps working, and the provider gets the request
	// the log folds to.
	sess := w.session(t)
	res, err := w.turn(t, sess, "hello")
	require.NoError(t, err)
	assert.Equal(t, session.ReasonCompleted, res.Reason)
	require.Len(t, w.rec.received(), 1)
	assert.Equal(t, "hello", w.rec.received()[0].Messages.At(0).Content)
	require.NoError(t, sess.Flush(context.Background()))
	w.requireVerifies(t, sess)
}
