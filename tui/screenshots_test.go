package tui

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
)

// The README's screenshots are rendered from the real views by this file:
// scripts/screenshots.sh runs TestScreenshots with -screenshots DIR, which
// writes each view's ANSI text to DIR/NAME.ansi and the hash file, then
// turns the text into SVG images with freeze. Without the flag the test
// renders the same views and compares them with the hashes in
// docs/screenshots.sha256, so the images cannot silently go stale.

// screenshotDir, when set, is where TestScreenshots writes the views' ANSI
// text and the hash file, instead of checking the hashes.
var screenshotDir = flag.String("screenshots", "", "write the README screenshots' ANSI text and "+screenshotHashFile+" to this folder")

// screenshotHashFile lists each screenshot view's SHA-256 (sha256sum
// format), relative to the repository root.
const screenshotHashFile = "docs/screenshots.sha256"

// screenshotWidth and screenshotHeight are the terminal size of the
// screenshots.
const screenshotWidth, screenshotHeight = 120, 32

// screenshotViews are the README's screenshots: a name and the keys that
// lead from the overview to the view.
var screenshotViews = []struct {
	name string
	keys []string
}{
	{"overview", nil},
	{"cluster", []string{"enter"}},
	{"node", []string{":", "node prod-eu:casehub/inventory:deployment", "enter"}},
	{"help", []string{"?"}},
}

// renderScreenshot renders one view of the fixture in true colour at the
// screenshot size.
func renderScreenshot(t *testing.T, keys []string) string {
	t.Helper()
	m := New(newFakeSource(), Options{Now: fixedClock})
	m.Update(tea.WindowSizeMsg{Width: screenshotWidth, Height: screenshotHeight})
	m.Update(snapshotMsg{snap: fixture()})
	for _, k := range keys {
		if len([]rune(k)) > 1 && k != "enter" {
			typeText(t, m, k)
			continue
		}
		press(t, m, k)
	}
	out := m.View().Content
	checkScreen(t, out, screenshotWidth, screenshotHeight)
	// The views use the terminal's 16 colours; through a true-colour
	// profile every style is kept as it is (an image has no terminal to
	// ask what it supports).
	var buf bytes.Buffer
	w := &colorprofile.Writer{Forward: &buf, Profile: colorprofile.TrueColor}
	if _, err := w.WriteString(out); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// screenshotHashes returns the views' hash file text: one "HASH  NAME.ansi"
// line per view, in order.
func screenshotHashes(texts map[string]string) string {
	var sb strings.Builder
	for _, v := range screenshotViews {
		sum := sha256.Sum256([]byte(texts[v.name]))
		fmt.Fprintf(&sb, "%s  %s.ansi\n", hex.EncodeToString(sum[:]), v.name)
	}
	return sb.String()
}

func TestScreenshots(t *testing.T) {
	texts := make(map[string]string, len(screenshotViews))
	for _, v := range screenshotViews {
		out := renderScreenshot(t, v.keys)
		if !strings.Contains(out, "\x1b[3") {
			t.Errorf("%s: no colour in the rendered view", v.name)
		}
		texts[v.name] = out
	}
	hashes := screenshotHashes(texts)
	if dir := *screenshotDir; dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, text := range texts {
			if err := os.WriteFile(filepath.Join(dir, name+".ansi"), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(screenshotHashFile)), []byte(hashes), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	path := filepath.Join("..", screenshotHashFile)
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v (run scripts/screenshots.sh)", path, err)
	}
	if string(want) != hashes {
		t.Fatalf("views changed: run scripts/screenshots.sh (the README's images in docs/ were rendered from other views)\n%s has:\n%s\nthe views now hash to:\n%s", path, want, hashes)
	}
}
