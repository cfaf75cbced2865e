package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
)

// chatOptions are the flags of `vigil chat`.
type chatOptions struct {
	cfg     string // -c: the plugins.yaml (see resolveConfig)
	sid     string // resume this session; "" starts one at the first prompt
	noWatch bool
}

func newChatCmd(e *env) *cobra.Command {
	var o chatOptions
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "Talk with an agent, one turn per line",
		Long: `An interactive session: each line read from stdin is a turn, its answer
streamed to stdout. On a terminal lines are edited with history, Ctrl-C
cancels the running turn and returns to the prompt, and Ctrl-C on an empty
line or Ctrl-D quits; /exit or the end of input quits too. -s resumes a
session; a new one is created at the first prompt.
plugins.yaml is watched: an edit re-applies only the entries that changed,
and a broken edit is reported while the running plugins are kept.`,
		Example: `  vigil chat
  vigil chat -s 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A
  vigil chat -c agents/dev.yaml --no-watch`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("chat takes no arguments; type prompts on stdin")
			}
			return nil
		},
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			return cmdChat(cmd.Context(), e, o)
		}),
	}
	configFlag(cmd, &o.cfg)
	sessionFlag(e, cmd, &o.sid, "resume this session")
	cmd.Flags().BoolVar(&o.noWatch, "no-watch", false, "do not reload plugins.yaml when it changes")
	return cmd
}

// cmdChat is an interactive session: each line is a turn (see chat).
func cmdChat(ctx context.Context, e *env, o chatOptions) error {
	return chat(ctx, e, o)
}
