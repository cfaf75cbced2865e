package session

import (
	"bytes"
	"encoding/json"
	"errors"
)

// TaskParameters is the JSON Schema of a sub-agent's arguments when its
// as_tool config gives none: {"task": string}, required. A delegation
// call of a tool with exactly these parameters passes its task as the
// child's user message; any other parameters pass the arguments' JSON.
var TaskParameters = json.RawMessage(`{"type":"object","properties":{"task":{"type":"string","description":"the task, in full: the sub-agent sees nothing else"}},"required":["task"]}`)

// ErrNoTask is the error of a delegation call whose arguments pass no
// task: with [TaskParameters], they must be {"task": "<the task>"} with a
// non-empty task.
var ErrNoTask = errors.New(`arguments must be {"task": "<the task>"} with a non-empty task`)

// DelegatedTask is the user message of the child session a delegation
// call starts: the arguments' task when the tool's parameters (as the
// request header logs them) are [TaskParameters], else the arguments
// verbatim. The loop starts the child with it, and verify --tree checks
// the child's first user message against it.
func DelegatedTask(parameters json.RawMessage, arguments string) (string, error) {
	if !bytes.Equal(parameters, TaskParameters) {
		return arguments, nil
	}
	var args struct {
		Task *string `json:"task"`
	}
	if err := json.Unmarshal([]byte(arguments), &args); err != nil || args.Task == nil || *args.Task == "" {
		return "", ErrNoTask
	}
	return *args.Task, nil
}
