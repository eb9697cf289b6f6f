package frontier

import (
	"context"
	"errors"
	"testing"
)

// A worker that releases its lease when its context ends must not be handed
// the same URL back by Next: the crawl would spin instead of stopping.
func TestNextAfterCancelReturnsTheContextErrorEvenWithAURLReady(t *testing.T) {
	f := openTest(t, "", Options{})
	mustAdd(t, f, Item{URL: "http://a.test/"})
	ctx, cancel := context.WithCancel(context.Background())
	l, err := f.next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	l.Release()
	if l, err := f.next(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Next after cancel = %v, %v; want context.Canceled", l, err)
	}
	if got := fetchAll(t, f); len(got) != 1 {
		t.Errorf("the released URL was lost: %v", got)
	}
}
