package esfrontier

import (
	"context"
	"fmt"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/urlnorm"
)

// seenMax bounds the URLs Add remembers as brought up to date in the
// cycle; past it the set starts over.
const seenMax = 1 << 20

// addLine is one Add item's _bulk line.
type addLine struct {
	url  string
	item frontier.Item
	adm  *admitted // its count against the budgets, undone if it is known
}

func checkItem(it *frontier.Item) error {
	switch {
	case urlnorm.Origin(it.URL) == "":
		return fmt.Errorf("esfrontier: %q is not an absolute URL", it.URL)
	case len(it.URL) > urlnorm.MaxLength:
		return fmt.Errorf("esfrontier: URL of %d bytes is longer than the store holds (%d)", len(it.URL), urlnorm.MaxLength)
	case it.Class > frontier.Refresh:
		return fmt.Errorf("esfrontier: %s: unknown class %d", it.URL, it.Class)
	case it.Shift < frontier.MinShift || it.Shift > frontier.MaxShift:
		return fmt.Errorf("esfrontier: %s: priority shift %d out of range", it.URL, it.Shift)
	}
	return nil
}

// addLines appends the _bulk lines creating the records of items (those
// Add saw in this cycle already are skipped) and returns them.
func (s *Store) addLines(b *ndjson, items []frontier.Item) []addLine {
	cycle := s.Cycle()
	base := s.now().UnixNano()
	s.readHostBudgets(items)
	var out []addLine
	line := func(it *frontier.Item, adm *admitted) {
		rec := frontier.Record{Item: *it, State: frontier.Waiting, Cycle: cycle, SeenCycle: cycle}
		d := s.toDoc(&rec, base+int64(len(out)))
		s.addHist(&d, []frontier.Event{{Kind: frontier.EventQueued, Source: it.Source, Class: it.Class, Depth: it.Depth, Via: it.Via}})
		b.line(map[string]any{"create": map[string]any{"_index": s.urls, "_id": docID(it.URL), "routing": d.Host}})
		b.line(d)
		out = append(out, addLine{url: it.URL, item: *it, adm: adm})
	}
	over := s.admitEach(items, true, func(it *frontier.Item) bool {
		return s.seenNow(it.URL, cycle) && it.Class != frontier.Start
	}, line)
	fresh, known := s.splitOver(over)
	for i := range known {
		// Known: its create answers 409 and the precedence rules apply.
		line(&known[i].item, nil)
	}
	s.bud.refused(fresh)
	return out
}

// readHostBudgets reads the counts of the hosts of items when the budgets
// need them; a failed read leaves the last counts.
func (s *Store) readHostBudgets(items []frontier.Item) {
	if !s.bud.urlLimits() {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.ttl)
	defer cancel()
	if err := s.bud.readHosts(ctx, s.bud.staleHosts(items), s.now(), false); err != nil {
		s.log.Warn("cannot read the hosts' budget counts", "err", err)
	}
}

// rejudge reads the counts again after a refresh when a refusal of over
// was decided on counts that may include creations twice, and admits
// (line) those the exact counts leave room for; it returns the others.
func (s *Store) rejudge(over []overItem, queue bool, line func(*frontier.Item, *admitted)) []overItem {
	var unsure []overItem
	for _, o := range over {
		if !o.exact {
			unsure = append(unsure, o)
		}
	}
	if len(unsure) == 0 {
		return over
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.ttl)
	defer cancel()
	read, err := s.bud.recount(ctx, unsure)
	if err != nil {
		s.log.Warn("cannot read the budgets' counts", "err", err)
	}
	if !read {
		return over
	}
	kept := over[:0]
	for _, o := range over {
		adm, limit, exact := s.bud.admit(&o.item, queue)
		if limit == 0 {
			line(&o.item, adm)
			continue
		}
		o.limit, o.exact = limit, exact
		kept = append(kept, o)
	}
	return kept
}

// splitOver tells the URLs a limit kept out that are new (refused) from
// those the index holds; when it cannot tell, neither is stored nor
// counted, and the next link to them is judged again.
func (s *Store) splitOver(over []overItem) (fresh, known []overItem) {
	fresh, known, err := s.newOnes(over)
	if err != nil {
		s.log.Warn("cannot tell URLs over a budget from known ones", "err", err)
		return nil, nil
	}
	return fresh, known
}

// known applies the precedence rules of frontier.Frontier.Add to the URLs
// of lines the index held already (their create answered 409): a known URL
// keeps its state, except a start URL of a cycle later than the one it was
// queued in and a URL excluded as an orphan, which are queued again; a
// sighting records the cycle and a newer sitemap lastmod. It returns how
// many it queued.
func (s *Store) known(lines []addLine) (int, error) {
	if len(lines) == 0 {
		return 0, nil
	}
	cycle := s.Cycle()
	byURL := make(map[string]*frontier.Item, len(lines))
	urls := make([]string, 0, len(lines))
	for i := range lines {
		if byURL[lines[i].url] == nil {
			urls = append(urls, lines[i].url)
		}
		byURL[lines[i].url] = &lines[i].item
	}
	again := map[string]bool{}
	_, changed, _, err := s.changeNoting(urls, func(r *frontier.Record, note func(...frontier.Event)) (bool, error) {
		it := byURL[r.URL]
		delete(again, r.URL)
		if r.State == frontier.Excluded && r.Orphan || it.Class == frontier.Start && r.Cycle < cycle && r.State != frontier.Waiting {
			why := "start"
			if r.Orphan {
				why = "orphan_linked"
			}
			note(frontier.Event{Kind: frontier.EventRequeued, Class: it.Class, Reason: why})
			r.State, r.Reason, r.Orphan, r.Cycle, r.SeenCycle = frontier.Waiting, "", false, cycle, cycle
			r.Class, r.Shift, r.FoundAs = it.Class, it.Shift, it.FoundAs
			again[r.URL] = true
			return true, nil
		}
		ch := false
		if it.Class == frontier.Start && r.Cycle < cycle {
			r.Cycle, ch = cycle, true // waiting already: in this cycle now
		}
		if r.SeenCycle < cycle {
			r.SeenCycle, ch = cycle, true
		}
		if it.Lastmod.After(r.Lastmod) {
			r.Lastmod, ch = it.Lastmod, true
		}
		return ch, nil
	})
	n := 0
	for i, u := range urls {
		if changed[i] && again[u] {
			n++
		}
	}
	return n, err
}

// answer counts the created records of lines and settles the known ones.
func (s *Store) answer(items []bulkItem, lines []addLine) (int, error) {
	n := 0
	var known []addLine
	for i := range items {
		switch it := &items[i]; {
		case it.Status == 201:
			s.bud.answered(lines[i].adm, true)
			n++
		case it.Status == 409:
			s.bud.answered(lines[i].adm, false)
			known = append(known, lines[i])
		default:
			for _, l := range lines[i:] {
				s.bud.answered(l.adm, false)
			}
			return n, &Error{Op: "queue " + lines[i].url, Err: itemError(it)}
		}
	}
	k, err := s.known(known)
	return n + k, err
}

// admitEach gives line every valid item skip leaves that the budgets
// admit (queue: for queueing, else for recording a refusal), and returns
// those over a limit even when judged again on fresh counts.
func (s *Store) admitEach(items []frontier.Item, queue bool, skip func(*frontier.Item) bool, line func(*frontier.Item, *admitted)) []overItem {
	var over []overItem
	for i := range items {
		it := &items[i]
		if checkItem(it) != nil || skip(it) {
			continue
		}
		adm, limit, exact := s.bud.admit(it, queue)
		if limit != 0 {
			over = append(over, overItem{item: *it, limit: limit, exact: exact})
			continue
		}
		line(it, adm)
	}
	return s.rejudge(over, queue, line)
}

// excludeLines appends the _bulk lines recording refused items unless
// known, and returns their counts against the budgets, one per line.
func (s *Store) excludeLines(b *ndjson, reason string, items []frontier.Item) []*admitted {
	cycle := s.Cycle()
	s.readHostBudgets(items)
	var out []*admitted
	line := func(it *frontier.Item, adm *admitted) {
		rec := frontier.Record{Item: *it, State: frontier.Excluded, Reason: reason, Cycle: cycle, SeenCycle: cycle}
		d := s.toDoc(&rec, 0)
		s.addHist(&d, []frontier.Event{{Kind: frontier.EventRefused, Reason: reason, Source: it.Source, Depth: it.Depth, Via: it.Via}})
		b.line(map[string]any{"create": map[string]any{"_index": s.urls, "_id": docID(it.URL), "routing": d.Host}})
		b.line(d)
		out = append(out, adm)
	}
	over := s.admitEach(items, false, func(*frontier.Item) bool { return false }, line)
	// A known URL needs no record: only the new ones are refused.
	fresh, _ := s.splitOver(over)
	s.bud.refused(fresh)
	return out
}

// countCreatedUndo counts the created records of items and takes the
// others back from the budgets' counts.
func (s *Store) countCreatedUndo(items []bulkItem, adms []*admitted) int {
	n := 0
	for i := range items {
		if i < len(adms) {
			s.bud.answered(adms[i], items[i].Status == 201)
		}
		if items[i].Status == 201 {
			n++
		}
	}
	return n
}

// Add queues the items the store does not know, in one _bulk request, and
// returns how many it queued.
func (s *Store) Add(items ...frontier.Item) (int, error) {
	for i := range items {
		if err := checkItem(&items[i]); err != nil {
			return 0, err
		}
	}
	var b ndjson
	lines := s.addLines(&b, items)
	if len(lines) == 0 {
		return 0, nil
	}
	res, err := s.bulk(context.Background(), b.Bytes(), "")
	if err != nil {
		for _, l := range lines {
			s.bud.answered(l.adm, false)
		}
		return 0, &Error{Op: "queue URLs", Err: err}
	}
	n, err := s.answer(res, lines)
	if err != nil {
		return n, err
	}
	s.remember(lines)
	s.sched.askLoad()
	return n, nil
}

// Exclude records refused URLs the store does not know, with reason.
func (s *Store) Exclude(reason string, items ...frontier.Item) (int, error) {
	if reason == "" {
		return 0, fmt.Errorf("esfrontier: exclusion without a reason")
	}
	for i := range items {
		if err := checkItem(&items[i]); err != nil {
			return 0, err
		}
	}
	var b ndjson
	adms := s.excludeLines(&b, reason, items)
	if len(adms) == 0 {
		return 0, nil
	}
	res, err := s.bulk(context.Background(), b.Bytes(), "")
	if err != nil {
		for _, a := range adms {
			s.bud.answered(a, false)
		}
		return 0, &Error{Op: "record refused URLs", Err: err}
	}
	n := s.countCreatedUndo(res, adms)
	for i := range res {
		if res[i].Status != 409 {
			if err := itemError(&res[i]); err != nil {
				return 0, &Error{Op: "record refused URLs", Err: err}
			}
		}
	}
	return n, nil
}

// seenNow says whether Add brought url up to date in cycle already.
func (s *Store) seenNow(url string, cycle uint64) bool {
	s.seenMu.Lock()
	defer s.seenMu.Unlock()
	if s.seenCycle != cycle {
		return false
	}
	_, ok := s.seen[frontier.LinkKey(url)]
	return ok
}

func (s *Store) remember(lines []addLine) {
	cycle := s.Cycle()
	s.seenMu.Lock()
	defer s.seenMu.Unlock()
	if s.seenCycle != cycle || len(s.seen)+len(lines) > seenMax {
		s.seen, s.seenCycle = make(map[uint64]struct{}, len(lines)), cycle
	}
	for _, l := range lines {
		s.seen[frontier.LinkKey(l.url)] = struct{}{}
	}
}

func (s *Store) markSeen(batch []*completion) {
	for _, c := range batch {
		if len(c.addLines) > 0 {
			s.remember(c.addLines)
		}
	}
}

func (s *Store) forgetSeen() {
	s.seenMu.Lock()
	s.seen = map[uint64]struct{}{}
	s.seenMu.Unlock()
}
