package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"

	"go.yaml.in/yaml/v4"
)

// DecodeFile decodes the YAML file at path into v (a pointer to a
// struct) with the rules plugins.yaml's configs follow: strict keys with
// suggestions, `vigil:"required"`, `enum:"…"`, ${VAR} from the
// environment, path fields resolved against the file's directory, and
// every mistake reported at once with its file:line:col. Other files of
// the project that people write by hand (an eval suite) use it, so they
// read like plugins.yaml.
func DecodeFile(path string, v any) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return decodeData(path, dir, data, v)
}

func decodeData(name, dir string, data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("config: decode %s into %T: not a pointer", name, v)
	}
	if len(data) > MaxFileSize {
		line := 1 + bytes.Count(data[:MaxFileSize], []byte("\n"))
		col := MaxFileSize - bytes.LastIndexByte(data[:MaxFileSize], '\n')
		return &Error{File: name, Line: line, Col: col, Msg: fmt.Sprintf("the file is larger than %d bytes (1 MiB)", MaxFileSize), Err: ErrTooLarge}
	}
	d := &decoder{file: name, dir: dir, lookup: envLookup}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return syntaxError(name, err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return &Error{File: name, Line: 1, Col: 1, Msg: "the file is empty", Err: ErrMissingKey}
	}
	return d.result(d.keep(d.decode(&doc, rv.Elem())))
}

// Suggest is the hint an error about s gives: " (did you mean "x"?)"
// for the candidate nearest to s, or "" when none is near.
func Suggest(s string, candidates []string) string { return suggest(s, candidates) }

// Join is the error of a file with the given problems, as the decoder
// returns them: nil for none, the *Error for one, else [Errors] in the
// file's order. errs are the decoder's own error (an *Error or Errors)
// and problems found after it; any other error is returned as is.
func Join(errs ...error) error {
	var ps []*Error
	for _, err := range errs {
		var es Errors
		var e *Error
		switch {
		case err == nil:
		case errors.As(err, &es):
			ps = append(ps, es...)
		case errors.As(err, &e):
			ps = append(ps, e)
		default:
			return err
		}
	}
	return problems(ps)
}
