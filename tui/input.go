package tui

import (
	"strings"

	tea "charm.land/bubbletea/v2"
)

// lineInput is a minimal single-line text input for the filter and the
// command line: the cursor stays at the end, there is no blinking (so
// frames are deterministic), and it never wraps.
type lineInput struct {
	prefix string
	value  []rune
}

// inputResult says what a key did to a lineInput.
type inputResult int

const (
	inputEdited inputResult = iota
	inputDone
	inputCancel
	inputIgnored
)

// reset sets the prompt, which may name what the hub shows (it is
// cleaned), and the value.
func (in *lineInput) reset(prefix, value string) {
	in.prefix = clean(prefix)
	in.value = []rune(value)
}

func (in *lineInput) String() string { return string(in.value) }

// update applies one key press.
func (in *lineInput) update(msg tea.KeyPressMsg) inputResult {
	switch msg.String() {
	case "enter":
		return inputDone
	case "esc":
		return inputCancel
	case "backspace", "ctrl+h":
		if len(in.value) > 0 {
			in.value = in.value[:len(in.value)-1]
		}
		return inputEdited
	case "ctrl+u":
		in.value = in.value[:0]
		return inputEdited
	case "ctrl+w", "alt+backspace":
		v := strings.TrimRight(string(in.value), " ")
		if i := strings.LastIndexByte(v, ' '); i >= 0 {
			v = v[:i+1]
		} else {
			v = ""
		}
		in.value = []rune(v)
		return inputEdited
	}
	if msg.Text != "" && msg.Mod&(tea.ModCtrl|tea.ModAlt) == 0 {
		in.insert(msg.Text)
		return inputEdited
	}
	return inputIgnored
}

// insert appends text (typed or pasted) without control characters (C0,
// DEL, C1).
func (in *lineInput) insert(text string) {
	for _, r := range text {
		if r >= 0x20 && (r < 0x7f || r > 0x9f) {
			in.value = append(in.value, r)
		}
	}
}

// view renders prefix, value and cursor in w cells; a long value scrolls so
// its end stays visible.
func (in *lineInput) view(st *styles, w int) string {
	cur := " "
	curText := st.inputCur.render(cur)
	if !st.inputCur.on {
		curText = st.plainCursor
	}
	val := string(in.value)
	room := w - width(in.prefix) - 1
	if room < 1 {
		return truncate(in.prefix, w)
	}
	if vw := width(val); vw > room {
		r := []rune(val)
		for len(r) > 0 && width(string(r))+1 > room {
			r = r[1:]
		}
		val = ellipsis + string(r)
	}
	return st.prompt.render(in.prefix) + val + curText
}
