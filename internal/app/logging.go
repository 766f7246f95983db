package app

import "log/slog"

// logOptions returns the options of the handlers of driftwatch's logs at
// level (nil: INFO): every record's level is printed by one of the four
// standard names. client-go logs its verbosity levels through klog's slog
// bridge at INFO-1, INFO-2 and so on, which slog alone prints as DEBUG+3,
// DEBUG+2...: they print as DEBUG.
func logOptions(level slog.Leveler) *slog.HandlerOptions {
	return &slog.HandlerOptions{Level: level, ReplaceAttr: nameLevel}
}

// nameLevel names a record's level by the standard level at or below it
// (DEBUG below that).
func nameLevel(groups []string, a slog.Attr) slog.Attr {
	if a.Key != slog.LevelKey || len(groups) > 0 {
		return a
	}
	l, ok := a.Value.Any().(slog.Level)
	if !ok {
		return a
	}
	switch {
	case l < slog.LevelInfo:
		l = slog.LevelDebug
	case l < slog.LevelWarn:
		l = slog.LevelInfo
	case l < slog.LevelError:
		l = slog.LevelWarn
	default:
		l = slog.LevelError
	}
	a.Value = slog.StringValue(l.String())
	return a
}
