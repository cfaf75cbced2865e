package scripted

import (
	"fmt"
	"strings"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/session"
)

// maxListed bounds how many entries the default answer names.
const maxListed = 20

// defaultReply is the default script, derived from the request alone: it
// is deterministic and needs no state, so any number of turns work.
func defaultReply(req *agentloop.Request) reply {
	msgs := req.Messages
	if !req.LoopBuilt() {
		return reply{Reply: Reply{Text: oneShot(msgs)}}
	}
	if n := msgs.Len(); n > 0 && msgs.At(n-1).Role == session.RoleTool {
		// Answer from the tool results of the last step, as they are.
		i := n - 1
		for i > 0 && msgs.At(i-1).Role == session.RoleTool {
			i--
		}
		var parts []string
		for ; i < n; i++ {
			parts = append(parts, describe(msgs.At(i)))
		}
		return reply{Reply: Reply{Text: strings.Join(parts, "\n")}}
	}
	if !offers(req.Header, "list_dir") {
		return reply{Reply: Reply{Text: "I would look at the folder, but no list_dir tool is available."}}
	}
	return reply{
		Reply: Reply{Text: "Let me look at the folder.", ToolCalls: []ToolCall{{Name: "list_dir"}}},
		args:  []string{`{"path":"."}`},
	}
}

func offers(h session.Header, name string) bool {
	for _, t := range h.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// describe answers from one tool message.
func describe(m session.Message) string {
	c := strings.TrimSpace(m.Content)
	switch {
	case m.Name != "list_dir":
		return fmt.Sprintf("The %s tool returned: %s", m.Name, c)
	case strings.HasPrefix(c, "error "):
		return "I could not list the folder: " + c
	case c == "" || c == "(empty directory)":
		return "The folder is empty."
	}
	entries := strings.Split(c, "\n")
	var dirs, files int
	for _, e := range entries {
		if strings.HasSuffix(e, "/") {
			dirs++
		} else {
			files++
		}
	}
	shown := entries
	more := ""
	if len(shown) > maxListed {
		shown = shown[:maxListed]
		more = fmt.Sprintf(", and %d more", len(entries)-maxListed)
	}
	return fmt.Sprintf("The folder has %s (%s, %s): %s%s.",
		count(len(entries), "entry", "entries"), count(dirs, "directory", "directories"), count(files, "file", "files"),
		strings.Join(shown, ", "), more)
}

// maxSummary bounds the default answer to a one-shot request.
const maxSummary = 300

// oneShot answers a request the loop did not build (a summary, a title)
// with the gist of the messages before its instruction (the last
// message): each as "[role] content", white space collapsed, bounded.
func oneShot(msgs session.Messages) string {
	var parts []string
	for i, m := range msgs.All() {
		if i == msgs.Len()-1 {
			break
		}
		c := m.Content
		for _, tc := range m.ToolCalls {
			c += " " + tc.Name + " " + tc.Arguments
		}
		if c = strings.Join(strings.Fields(c), " "); c != "" {
			parts = append(parts, "["+m.Role+"] "+c)
		}
	}
	c := strings.Join(parts, " ")
	if len(c) > maxSummary {
		c = strings.ToValidUTF8(c[:maxSummary], "") + "…"
	}
	if c == "" {
		return "Nothing to summarize."
	}
	return "In short: " + c
}

// count renders n with the noun's singular or plural.
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
