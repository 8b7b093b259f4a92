// Package logging builds pacer's one zap logger and the bridge that lets
// Temporal (the SDK and workflow code, through its replay-safe logger) write
// into the same core, so there is no second sink for failures to vanish into.
package logging

import (
	"fmt"
	"log/slog"
	"os"

	"go.temporal.io/sdk/log"
	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"
	"go.uber.org/zap/zapcore"
)

// Options choose the level and the encoding.
type Options struct {
	Level  string // debug, info, warn, error
	Format string // json (default) or console
}

// New builds the process logger, writing to stderr.
func New(o Options) (*zap.Logger, error) {
	level := zapcore.InfoLevel
	if o.Level != "" {
		if err := level.UnmarshalText([]byte(o.Level)); err != nil {
			return nil, fmt.Errorf("log level %q: want debug, info, warn or error", o.Level)
		}
	}
	enc := zap.NewProductionEncoderConfig()
	enc.TimeKey = "ts"
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	var encoder zapcore.Encoder
	switch o.Format {
	case "", "json":
		encoder = zapcore.NewJSONEncoder(enc)
	case "console":
		enc.EncodeLevel = zapcore.CapitalColorLevelEncoder
		encoder = zapcore.NewConsoleEncoder(enc)
	default:
		return nil, fmt.Errorf("log format %q: want json or console", o.Format)
	}
	core := zapcore.NewCore(encoder, zapcore.Lock(os.Stderr), level)
	return zap.New(core, zap.AddCaller()), nil
}

// Temporal adapts a zap logger to Temporal's logger interface. Workflow code
// reaches it through workflow.GetLogger, which drops lines during replay.
func Temporal(l *zap.Logger) log.Logger {
	return log.NewStructuredLogger(slog.New(zapslog.NewHandler(l.Core(), zapslog.WithName("temporal"))))
}
