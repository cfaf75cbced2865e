// Package browsertest starts the headless Chromium that the browser tests
// (the playground's, the API's stream tickets) drive through chromedp.
package browsertest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// ChromiumPath is Debian's chromium, which .ci/run installs.
const ChromiumPath = "/usr/bin/chromium"

// New starts a headless chromium for the test and returns the context
// its actions run in, or skips the test when there is none — except in
// CI, where a missing browser fails it. The browser goes when the test
// ends, before what the test started earlier (cleanups run last first),
// so its open streams end before the servers they reach close.
func New(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(ChromiumPath); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing in CI: .ci/run must install chromium (%v)", ChromiumPath, err)
		}
		t.Skipf("%s is not installed (apt-get install chromium); in CI this fails", ChromiumPath)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(ChromiumPath),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1600, 1000),
	)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	return bctx
}
