package tui

import (
	"testing"

	"github.com/driftwatch/driftwatch/hub"
)

// TestFeedCursorFollowsAFoldedEntry: the feed entry under the cursor stays
// under it when a repeat folds into it and moves it to the top.
func TestFeedCursorFollowsAFoldedEntry(t *testing.T) {
	m, _ := newFixtureModel(t, 160, 48, Options{})
	press(t, m, "tab", "down", "down")
	sel, ok := m.overview.SelectedFeed()
	if !ok {
		t.Fatal("no feed entry selected")
	}
	s := fixture()
	again := sel
	again.At, again.First, again.Count = fixedNow, sel.At, 2
	feed := []hub.FeedEntry{again}
	for _, e := range s.Feed {
		if e.ID != sel.ID || !e.At.Equal(sel.At) {
			feed = append(feed, e)
		}
	}
	s.Feed = feed
	s.Seq++
	m.Update(snapshotMsg{snap: s})
	got, ok := m.overview.SelectedFeed()
	if !ok || got.ID != sel.ID || got.Count != 2 || !got.At.Equal(fixedNow) {
		t.Fatalf("selected %+v after the fold, want %s ×2", got, sel.ID)
	}
	if m.overview.feedCur != 0 {
		t.Errorf("cursor at %d, want 0 (the folded entry's new place)", m.overview.feedCur)
	}
}
