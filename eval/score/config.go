package score

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ErrConfig marks every error about a scorer's config, for callers that
// tell a bad suite from a failed run.
var ErrConfig = errors.New("bad scorer config")

// ConfigError is a scorer config that does not decode or does not hold:
// Key names the key at fault ("max_ratio", "rubric"), empty when the
// config as a whole is (not a mapping).
type ConfigError struct {
	Key string
	Err error
}

func (e *ConfigError) Error() string {
	if e.Key == "" {
		return "config: " + e.Err.Error()
	}
	return fmt.Sprintf("config: %s: %v", e.Key, e.Err)
}

// Unwrap returns the cause and [ErrConfig].
func (e *ConfigError) Unwrap() []error { return []error{e.Err, ErrConfig} }

// keyError returns a ConfigError for key.
func keyError(key, format string, args ...any) error {
	return &ConfigError{Key: key, Err: fmt.Errorf(format, args...)}
}

// DecodeConfig decodes a scorer's config into v strictly: an unknown
// key, a value of the wrong type or anything after the one JSON value is
// a [*ConfigError] naming the key. An empty or null config leaves v as
// it is (the scorer's defaults). Custom scorers use it to decode like
// the built-in ones.
func DecodeConfig(raw json.RawMessage, v any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return configDecodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &ConfigError{Err: errors.New("more than one value")}
	}
	return nil
}

// configDecodeError names the key encoding/json's error is about.
func configDecodeError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return &ConfigError{Err: fmt.Errorf("a %s, not a mapping", te.Value)}
		}
		// encoding/json names an embedded struct by its Go name: the
		// Bar every built-in embeds is not a key of the config.
		key := strings.TrimPrefix(te.Field, "Bar.")
		return &ConfigError{Key: key, Err: fmt.Errorf("a %s, where a %s belongs", te.Value, te.Type)}
	}
	// encoding/json says `json: unknown field "k"` and has no type for it.
	if rest, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if k, uerr := strconv.Unquote(rest); uerr == nil {
			return &ConfigError{Key: k, Err: errors.New("unknown key")}
		}
	}
	return &ConfigError{Err: err}
}
