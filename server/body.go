package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
)

// decodeBody decodes r's JSON body into v, strictly (unknown fields are
// errors). An empty body leaves v as it is when emptyOK. A syntax error
// is a 400 with its position, a body over the bound a 413.
func decodeBody(r *http.Request, v any, emptyOK bool) error {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		var late *Error // the body timeout's (see requestBody)
		if errors.As(err, &late) {
			return late
		}
		if errors.As(err, &tooBig) {
			return apiError(http.StatusRequestEntityTooLarge, CodeTooLarge, "the request body is larger than %d bytes", tooBig.Limit)
		}
		return apiError(http.StatusBadRequest, CodeBadRequest, "reading the request body: %v", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		if emptyOK {
			return nil
		}
		return apiError(http.StatusBadRequest, CodeBadRequest, "the request needs a JSON body")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err = dec.Decode(v)
	if err == nil && dec.More() {
		return malformed(data, dec.InputOffset(), "more than one JSON value in the body")
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &syn):
		// Offset is just past the offending byte.
		return malformed(data, syn.Offset-1, syn.Error())
	case errors.As(err, &typ):
		return malformed(data, typ.Offset, typ.Error())
	case errors.Is(err, io.ErrUnexpectedEOF):
		return malformed(data, int64(len(data)), "the JSON body ends early")
	}
	return apiError(http.StatusBadRequest, CodeMalformedJSON, "%v", err)
}

// malformed is a malformed_json error at offset of data.
func malformed(data []byte, offset int64, msg string) *Error {
	offset = min(max(offset, 0), int64(len(data)))
	before := data[:offset]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(offset) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	e := apiError(http.StatusBadRequest, CodeMalformedJSON, "%s (line %d, column %d)", msg, line, col)
	e.Position = &Position{Offset: offset, Line: line, Column: col}
	return e
}
