package tui

import (
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/termtext"
)

const ellipsis = "…"

// age formats how long ago t was, compactly: "12s", "5m", "3h", "2d"; "-"
// for the zero time.
func age(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + "h"
	}
	return strconv.Itoa(int(d/(24*time.Hour))) + "d"
}

// dur formats a latency: "0.8ms", "14ms", "1.25s", "12.5s", "2m3s".
func dur(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + dur(-d)
	case d == 0:
		return "0ms"
	case d < 10*time.Millisecond:
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + "ms"
	case d < time.Second:
		return strconv.Itoa(int(d/time.Millisecond)) + "ms"
	case d < 10*time.Second:
		return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + "s"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	}
	return d.Round(time.Second).String()
}

// optDur is dur with "-" for zero (not measured).
func optDur(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return dur(d)
}

// rate formats events per second.
func rate(r float64) string {
	if r >= 100 {
		return strconv.FormatFloat(r, 'f', 0, 64)
	}
	return strconv.FormatFloat(r, 'f', 1, 64)
}

// width is the display width of s, escape sequences excluded. ASCII text
// with SGR sequences (what styles produce) is measured without the grapheme
// machinery; anything else goes through it.
func width(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == 0x1b && i+1 < len(s) && s[i+1] == '[':
			// CSI: parameters and intermediates, then a final byte.
			i += 2
			for i < len(s) && (s[i] < 0x40 || s[i] > 0x7e) {
				i++
			}
		case c >= 0x20 && c < 0x7f:
			n++
		default:
			return ansi.StringWidth(s)
		}
	}
	return n
}

// truncate cuts s to at most w cells, ending with an ellipsis when cut.
func truncate(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if width(s) <= w {
		return s
	}
	return ansi.Truncate(s, w, ellipsis)
}

// pad truncates s to w cells and pads it with spaces to exactly w cells.
func pad(s string, w int, right bool) string {
	s = truncate(s, w)
	n := w - width(s)
	if n <= 0 {
		return s
	}
	if right {
		return strings.Repeat(" ", n) + s
	}
	return s + strings.Repeat(" ", n)
}

// oneLine replaces line breaks and tabs so that pasted text stays on the
// input's line (the input drops other control characters).
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\n\r\t") {
		return s
	}
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "\t", " ").Replace(s)
}

// clean is termtext.Clean, the one sanitiser of text from the hub: every
// string a hub or a cluster supplies (names, values, field managers,
// errors, reasons, commit subjects, hold reasons, alerts) goes through it
// before a view lays it out or measures it.
func clean(s string) string { return termtext.Clean(s) }

// spread lays out left and right on one line of w cells. When both do not
// fit, right is cut first, down to a third of the line, then left.
func spread(left, right string, w int) string {
	lw, rw := width(left), width(right)
	if lw+1+rw > w {
		rw = max(w-lw-1, min(rw, w/3))
		right = truncate(right, rw)
		rw = width(right)
	}
	if rw >= w {
		return truncate(right, w)
	}
	left = truncate(left, w-rw-1)
	return left + strings.Repeat(" ", w-width(left)-rw) + right
}

// clampOffset returns the scroll offset that keeps cur visible in a window
// of h rows over n rows, moving off as little as possible.
func clampOffset(off, cur, h, n int) int {
	if h <= 0 {
		return 0
	}
	if cur < off {
		off = cur
	}
	if cur >= off+h {
		off = cur - h + 1
	}
	if maxOff := n - h; off > maxOff {
		off = maxOff
	}
	if off < 0 {
		off = 0
	}
	return off
}

// clamp bounds v to [lo, hi].
func clamp(v, lo, hi int) int {
	if v > hi {
		v = hi
	}
	if v < lo {
		v = lo
	}
	return v
}

// shortDuration formats a duration a person typed or reads: "30m", "2h",
// "1h30m", "45s" (time.Duration's form without zero units).
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// plural formats a count and its noun: "1 hold", "2 holds".
func plural(n int, noun string) string {
	return pluralOf(n, noun, noun+"s")
}

// pluralOf formats a count with the noun's singular or plural form: "1
// entry", "2 entries".
func pluralOf(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// pauseText says a paused cluster's pause as people read it: "paused 12m
// ago by alice: INC-4211: failover", with what is known of it (raw: the
// caller cleans it).
func pauseText(c hub.ClusterStatus, now time.Time) string {
	return noteText("paused", c.PausedAt, c.PausedBy, c.PauseReason, now)
}

// noteText says a switch set with its note: "set 12m ago by alice: why",
// with what is known of it (raw: the caller cleans it).
func noteText(verb string, at time.Time, by, reason string, now time.Time) string {
	s := verb
	if !at.IsZero() {
		s += " " + age(now, at) + " ago"
	}
	return s + hub.SwitchNote{By: by, Reason: reason}.Suffix()
}
