package wordmatch

import (
	"slices"
	"testing"
)

func TestWordsSplitsHanAndKanaIntoCharacters(t *testing.T) {
	got := Words("Auto Multiple-Choice 2.0: 自動採点と評定, ﬁle")
	want := []string{"auto", "multiple", "choice", "2", "0", "自", "動", "採", "点", "と", "評", "定", "ﬁle"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestRecallAndOrderCountRepeats(t *testing.T) {
	ref := Words("a b a b c")
	if r := Recall(ref, Words("a b c")); r != 0.6 {
		t.Errorf("recall %v, want 0.6", r)
	}
	if o := Order(ref, Words("c a b")); o != 0.25 {
		t.Errorf("order %v, want 0.25 (one of four bigrams)", o)
	}
}
