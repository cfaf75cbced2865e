package config

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// ReloadResult is what one reload after a file change did.
type ReloadResult struct {
	Changes Changes
	// Err is a load error (the running composition was kept) or the
	// errors of entries that failed to apply.
	Err error
}

// Watch reloads c whenever the file at path changes, until ctx is done.
// It watches the file's directory, so editors that replace the file on
// save are seen; bursts of events are coalesced for debounce. Every reload
// is reported to report (which may be nil); a file that fails to load is
// reported and the running composition is kept.
func Watch(ctx context.Context, path string, c *Composition, debounce time.Duration, report func(ReloadResult)) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("config: watch: %w", err)
	}
	defer w.Close()
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("config: watch: %w", err)
	}
	if err := w.Add(filepath.Dir(abs)); err != nil {
		return fmt.Errorf("config: watch: %w", err)
	}
	if report == nil {
		report = func(ReloadResult) {}
	}
	var timer <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if filepath.Clean(ev.Name) != abs || ev.Op&(fsnotify.Write|fsnotify.Create|fsnotify.Rename) == 0 {
				continue
			}
			timer = time.After(debounce)
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			report(ReloadResult{Err: fmt.Errorf("config: watch: %w", err)})
		case <-timer:
			timer = nil
			f, err := Load(path)
			if err != nil {
				report(ReloadResult{Err: err})
				continue
			}
			ch, err := c.Reload(f)
			report(ReloadResult{Changes: ch, Err: err})
		}
	}
}
