package tui

import (
	"strings"
)

// column describes one column of a table.
type column struct {
	title string
	// width is the column's width; for a flex column its minimum.
	width int
	// flex is the share of spare width a flex column takes (0: fixed).
	flex int
	// max caps a flex column (0: no cap).
	max int
	// want is the width a flex column should have before other columns
	// are shown: columns are hidden (by drop) until every flex column can
	// get its want. 0 means its minimum width.
	want  int
	right bool
	// drop orders columns for hiding on narrow screens: 0 is never hidden,
	// higher values are hidden first.
	drop int
}

// cell is one table cell: plain text and the style of its text.
type cell struct {
	text string
	st   style
}

// gutter is the width of the cursor marker in front of each row.
const gutter = 2

// table is a small windowed table renderer: it lays out columns for a width
// and renders one row at a time, so callers render only the visible rows.
type table struct {
	st     *styles
	cols   []column
	widths []int // laid out by fit; 0 hides a column
	total  int
}

func newTable(st *styles, cols []column) *table {
	return &table{st: st, cols: cols, widths: make([]int, len(cols))}
}

// setWidth sets a column's width (before fit), e.g. from its content.
func (t *table) setWidth(i, w int) {
	if w < width(t.cols[i].title) {
		w = width(t.cols[i].title)
	}
	t.cols[i].width = w
}

// fit lays the columns out for a total width: columns are hidden in
// decreasing drop order until the rest fits, then flex columns share what
// is left.
func (t *table) fit(total int) {
	t.total = total
	avail := total - gutter
	shown := make([]bool, len(t.cols))
	need, wantNeed := -1, -1
	for i, c := range t.cols {
		if c.width > 0 || c.flex > 0 {
			shown[i] = true
			need += c.width + 1
			wantNeed += max(c.width, c.want) + 1
		}
	}
	for wantNeed > avail {
		worst := -1
		for i, c := range t.cols {
			if shown[i] && c.drop > 0 && (worst < 0 || c.drop > t.cols[worst].drop) {
				worst = i
			}
		}
		if worst < 0 {
			break
		}
		shown[worst] = false
		need -= t.cols[worst].width + 1
		wantNeed -= max(t.cols[worst].width, t.cols[worst].want) + 1
	}
	// Without a preferred layout, still hide what does not fit at minimum.
	for need > avail {
		worst := -1
		for i, c := range t.cols {
			if shown[i] && c.drop > 0 && (worst < 0 || c.drop > t.cols[worst].drop) {
				worst = i
			}
		}
		if worst < 0 {
			break
		}
		shown[worst] = false
		need -= t.cols[worst].width + 1
	}
	for i, c := range t.cols {
		t.widths[i] = 0
		if shown[i] {
			t.widths[i] = c.width
		}
	}
	spare := avail - need
	// First bring flex columns to their preferred width, then share.
	for i, c := range t.cols {
		if shown[i] && c.flex > 0 && c.want > t.widths[i] && spare > 0 {
			n := min(c.want-t.widths[i], spare)
			if c.max > 0 {
				n = max(min(n, c.max-t.widths[i]), 0)
			}
			t.widths[i] += n
			spare -= n
		}
	}
	for spare > 0 {
		grew := false
		for i, c := range t.cols {
			if !shown[i] || c.flex == 0 || (c.max > 0 && t.widths[i] >= c.max) {
				continue
			}
			n := min(c.flex, spare)
			if c.max > 0 {
				n = min(n, c.max-t.widths[i])
			}
			t.widths[i] += n
			spare -= n
			grew = true
			if spare == 0 {
				break
			}
		}
		if !grew {
			break
		}
	}
	// Still too wide (nothing left to hide): shrink flex columns, then the
	// widest columns, down to one cell.
	for spare < 0 {
		widest := -1
		for i := range t.cols {
			if t.widths[i] > 1 && (widest < 0 || t.widths[i] > t.widths[widest]) {
				widest = i
			}
		}
		if widest < 0 {
			break
		}
		t.widths[widest]--
		spare++
	}
}

// header renders the header row.
func (t *table) header() string {
	var b strings.Builder
	b.WriteString(strings.Repeat(" ", gutter))
	first := true
	for i, c := range t.cols {
		if t.widths[i] == 0 {
			continue
		}
		if !first {
			b.WriteByte(' ')
		}
		first = false
		b.WriteString(pad(c.title, t.widths[i], c.right))
	}
	return t.st.header.render(strings.TrimRight(b.String(), " "))
}

// row renders one row; cells align with cols. The selected row gets a cursor
// marker and is styled as a whole.
func (t *table) row(cells []cell, selected bool) string {
	var b strings.Builder
	if selected {
		b.WriteString("> ")
	} else {
		b.WriteString("  ")
	}
	first := true
	for i, c := range t.cols {
		w := t.widths[i]
		if w == 0 {
			continue
		}
		if !first {
			b.WriteByte(' ')
		}
		first = false
		var text string
		var st style
		if i < len(cells) {
			text, st = clean(cells[i].text), cells[i].st
		}
		text = truncate(text, w)
		n := w - width(text)
		if selected {
			st = style{}
		}
		if c.right {
			b.WriteString(strings.Repeat(" ", n))
			b.WriteString(st.render(text))
		} else {
			b.WriteString(st.render(text))
			b.WriteString(strings.Repeat(" ", n))
		}
	}
	if selected && t.st.selected.on {
		line := b.String()
		if n := t.total - width(line); n > 0 {
			line += strings.Repeat(" ", n)
		}
		return t.st.selected.render(line)
	}
	return strings.TrimRight(b.String(), " ")
}
