package main

import (
	"bytes"
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/vigil-run/vigil/config"
	"github.com/vigil-run/vigil/plugins/telemetry/otel"
	"github.com/vigil-run/vigil/session"
)

// Formats of vigil trace.
const (
	traceExport   = "otlp"
	traceOTLPJSON = "otlp-json"
)

func newTraceCmd(e *env) *cobra.Command {
	var cfg, format string
	cmd := &cobra.Command{
		Use:   "trace ID|FILE...",
		Short: "Export stored sessions as OpenTelemetry traces",
		Long: `Rebuild the OpenTelemetry GenAI traces of stored sessions from their logs
(times from the events) and export them to the collector the telemetry/otel
entry of -c names (without one, the OTEL_EXPORTER_OTLP_* environment
variables say where). The spans are those the telemetry/otel plugin sends
live, ids included: a session traced live and exported again is one trace.
A turn still open (running, or suspended on an approval) has no spans yet.
Each argument is a log file, or the id of a session in the store of the
composition -c names. --format otlp-json prints the spans instead, as the
protobuf JSON mapping of one ExportTraceServiceRequest.

Exit 0 when every span was exported, 1 when the export failed, 4 when an
argument is neither a file nor a stored session.`,
		Example: `  vigil trace 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A
  vigil trace --format otlp-json .vigil/sessions/*.jsonl`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("trace needs a log file or session id")
			}
			return nil
		},
		ValidArgsFunction: completeSessionIDs(e, true),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			switch format {
			case traceExport, traceOTLPJSON:
			default:
				return usagef("--format %q: want otlp or otlp-json", format)
			}
			return cmdTrace(cmd.Context(), e, cfg, format, args)
		}),
	}
	configFlag(cmd, &cfg)
	cmd.Flags().StringVar(&format, "format", traceExport, "otlp: export to the collector; otlp-json: print the OTLP JSON on stdout")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(
		[]cobra.Completion{traceExport, traceOTLPJSON}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func cmdTrace(ctx context.Context, e *env, cfgPath, format string, args []string) error {
	tcfg, found, err := telemetryConfig(cfgPath)
	if err != nil {
		return err
	}
	if format == traceExport && !found {
		// Said before the logs load: the user learns at once where the
		// spans go, and how to get them without a collector.
		fmt.Fprintf(e.stderr, "no telemetry/otel entry in the composition: exporting to %s (--format otlp-json prints the spans instead)\n", tcfg.Destination())
	}
	var h *host
	defer func() {
		if h != nil {
			_ = h.close()
		}
	}()
	logs := make([]otel.Log, 0, len(args))
	for _, arg := range args {
		log, err := traceLog(ctx, e, cfgPath, &h, arg)
		if err != nil {
			return fmt.Errorf("%s: %w", arg, err)
		}
		logs = append(logs, otel.Log{ID: log.Info.ID, Records: log.Records})
	}
	if format == traceOTLPJSON {
		out, err := otel.OTLPJSON(ctx, tcfg, logs...)
		if err != nil {
			return err
		}
		_, err = e.stdout.Write(out)
		return err
	}
	st := newStatus(e)
	end := st.begin(fmt.Sprintf("exporting %d session(s) to %s", len(logs), tcfg.Destination()))
	n, err := otel.Export(ctx, tcfg, logs...)
	end()
	st.close()
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "%d spans of %d session(s) exported\n", n, len(logs))
	return nil
}

// traceLog reads a log file, or the log of a session id in the store of
// the composition (opened on first need).
func traceLog(ctx context.Context, e *env, cfg string, h **host, arg string) (*session.Log, error) {
	data, err := readLog(ctx, e, cfg, h, arg)
	if err != nil {
		return nil, err
	}
	return session.Decode(bytes.NewReader(data))
}

// telemetryConfig returns the config of the first enabled telemetry/otel
// entry of the composition -c names, and whether there is one.
func telemetryConfig(cfgPath string) (otel.Config, bool, error) {
	path, builtin := resolveConfig(cfgPath)
	if builtin {
		return otel.Config{}, false, nil
	}
	f, err := config.LoadOnly(path, func(name string) bool { return name == otel.Name })
	if err != nil {
		return otel.Config{}, false, &configError{err}
	}
	if c := findTelemetry(f.Entries); c != nil {
		return *c, true, nil
	}
	return otel.Config{}, false, nil
}

func findTelemetry(entries []config.Entry) *otel.Config {
	for _, ent := range entries {
		if ent.Disabled {
			continue
		}
		switch c := ent.Config.(type) {
		case *otel.Config:
			return c
		case []config.Entry:
			if found := findTelemetry(c); found != nil {
				return found
			}
		}
	}
	return nil
}
