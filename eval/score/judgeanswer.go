package score

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
)

// ErrJudgeAnswer is a judge's answer that is not in the asked format.
var ErrJudgeAnswer = errors.New("the judge's answer is not in the asked format")

// ParseJudgeAnswer reads a judge's answer in format ([JudgeScore] or
// [JudgeGrade]) and returns its score in [0, 1] and its reason. The
// answer must be one JSON object with exactly the format's two keys,
// each once, optionally inside one Markdown code fence (models add
// one); anything else is an [ErrJudgeAnswer] error.
func ParseJudgeAnswer(format, answer string) (score float64, reason string, err error) {
	text := unfence(strings.TrimSpace(answer))
	key := "score"
	if format == JudgeGrade {
		key = "grade"
	} else if format != JudgeScore {
		return 0, "", fmt.Errorf("%w: unknown format %q", ErrJudgeAnswer, format)
	}
	fields, err := objectFields(text)
	if err != nil {
		return 0, "", fmt.Errorf("%w: %w", ErrJudgeAnswer, err)
	}
	if len(fields) != 2 || fields[key] == nil || fields["reason"] == nil {
		return 0, "", fmt.Errorf("%w: want exactly the keys %q and \"reason\"", ErrJudgeAnswer, key)
	}
	var v float64
	if err := json.Unmarshal(fields[key], &v); err != nil || string(fields[key]) == "null" {
		return 0, "", fmt.Errorf("%w: %s is not a number", ErrJudgeAnswer, key)
	}
	if err := json.Unmarshal(fields["reason"], &reason); err != nil || string(fields["reason"]) == "null" {
		return 0, "", fmt.Errorf("%w: reason is not a string", ErrJudgeAnswer)
	}
	switch {
	case format == JudgeScore && v >= 0 && v <= 1:
		return v, reason, nil
	case format == JudgeGrade && v >= 1 && v <= 5 && v == math.Trunc(v):
		return (v - 1) / 4, reason, nil
	}
	if format == JudgeGrade {
		return 0, "", fmt.Errorf("%w: grade %v is not an integer from 1 to 5", ErrJudgeAnswer, v)
	}
	return 0, "", fmt.Errorf("%w: score %v is not in [0, 1]", ErrJudgeAnswer, v)
}

// unfence returns the inside of one Markdown code fence around s
// ("```json\n…\n```" or "```\n…\n```"), or s.
func unfence(s string) string {
	inner, ok := strings.CutPrefix(s, "```")
	if !ok {
		return s
	}
	inner, ok = strings.CutSuffix(inner, "```")
	if !ok {
		return s
	}
	inner = strings.TrimPrefix(inner, "json")
	if !strings.HasPrefix(inner, "\n") {
		return s
	}
	return strings.TrimSpace(inner)
}

// objectFields reads text as exactly one JSON object and returns its
// members' values; a key given twice is an error, not the last one's.
func objectFields(text string) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	fields := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, errors.New("not a JSON object")
		}
		k, _ := tok.(string)
		if _, dup := fields[k]; dup {
			return nil, fmt.Errorf("key %q given twice", k)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, errors.New("not a JSON object")
		}
		fields[k] = bytes.Clone(v)
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, errors.New("not a JSON object")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("text after the JSON object")
	}
	return fields, nil
}
