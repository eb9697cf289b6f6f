package sink_test

import (
	"context"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/internal/estest"
	"github.com/crawlspace/crawlspace/internal/fakeclock"
	"github.com/crawlspace/crawlspace/sink"
)

// The sink times its requests by the crawler's clock (UseClock), not the
// machine's: a clock a second on at each reading times a request at one
// second exactly.
func TestTheSinkTimesItsRequestsByTheCrawlersClock(t *testing.T) {
	esURL := estest.URL(t)
	s, err := sink.NewElasticsearch(context.Background(), esConfig(esURL, estest.Index(t)), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	clock := fakeclock.New(time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC))
	s.UseClock(func() time.Time { clock.Advance(time.Second); return clock.Now() })
	bulks := make(bulkTimes, 16)
	s.Observe(bulks)
	if err := s.Index(context.Background(), doc("http://example.test/clock", "Clock")); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	publishAndClose(t, s)
	close(bulks)
	var took []time.Duration
	for d := range bulks {
		took = append(took, d)
	}
	if len(took) != 1 || took[0] != time.Second {
		t.Errorf("the _bulk requests took %v, want one of 1s by the crawler's clock", took)
	}
}

// bulkTimes hears how long each _bulk request took.
type bulkTimes chan time.Duration

func (b bulkTimes) Bulk(took time.Duration, _ int, _ error) { b <- took }

func (b bulkTimes) Retry(string)                          {}
func (b bulkTimes) Unavailable(error)                     {}
func (b bulkTimes) Available(time.Duration, int)          {}
func (b bulkTimes) EmbeddingUnavailable(error)            {}
func (b bulkTimes) EmbeddingAvailable(time.Duration, int) {}
