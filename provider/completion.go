package provider

import "github.com/crawlspace/crawlspace/frontier"

// completion is an outcome to record for a lease, with what comes of it.
type completion struct {
	lease   frontier.Lease
	outcome frontier.Outcome
	// write is the sink write made once the outcome is stored; nil for none.
	write *write
	// after is called once the outcome is stored or refused; nil for none.
	after func()
	// in is the group the URL was in when the caller knows it, else nil.
	in *knownGroup
}

// complete records an outcome and, once it is stored, performs its sink
// write, so the acknowledgement always finds the write recorded as pending.
// The worker does not wait for the store: the frontier calls back after the
// commit. An outcome that cannot be stored is logged and counted
// (record_failed), its sink write is not made, and the frontier holds its
// URL back until the next cycle: fetching it again at once would only fail
// again. A store that cannot write at all stops the crawl (Next reports it).
// It is the one way an outcome reaches the store.
func (c *Crawler) complete(k completion) {
	lease, o, w, after, in := k.lease, k.outcome, k.write, k.after, k.in
	if after != nil {
		defer func() {
			if after != nil {
				after() // the outcome never reached the store
			}
		}()
	}
	linksGone(&o, lease.Record())
	if w != nil {
		c.holdDelete(w, lease.Record())
		w.pend(&o)
	}
	it := lease.Item()
	// The group of duplicates the URL was in, to settle it once the outcome
	// has moved the URL out (a temporary failure moves nothing).
	var (
		groups   frontier.Duplicates
		oldGroup string
	)
	if o.State != frontier.Waiting {
		if groups = c.groups(c.sources[it.Source]); groups != nil {
			if in != nil {
				oldGroup = in.content
			} else {
				oldGroup, _, _ = groups.ContentOf(it.URL)
			}
		}
	}
	notRecorded := func(err error) {
		c.log.Error("cannot record outcome", "url", it.URL, "source", it.Source,
			"state", o.State.String(), "reason", reasonRecordFailed, "outcome", o.Reason, "status", o.Status, "err", err)
		c.reportNow().Failure(it.Source, it.URL, reasonRecordFailed, err.Error())
	}
	then := after
	after = nil
	err := lease.CompleteAsync(o, func(err error) {
		if then != nil {
			defer then()
		}
		if err != nil {
			notRecorded(err)
			return
		}
		if o.Found != nil {
			c.reportRefused(o.Found)
		}
		if w != nil && !w.hold {
			c.writes.send(w)
		}
		if groups != nil {
			if oldGroup != "" && oldGroup != o.Content {
				c.settleGroup(groups, it.Source, oldGroup)
			}
			switch {
			case o.Content == "":
			case in != nil && in.members != nil && in.content == o.Content:
				c.settleMembers(it.Source, in.content, in.members)
			default:
				c.settleGroup(groups, it.Source, o.Content)
			}
		}
	})
	if err != nil {
		// CompleteAsync refused the outcome: done is never called.
		after = then
		notRecorded(err)
	}
}

// reasonRecordFailed counts the URLs whose outcome the state store did not take.
const reasonRecordFailed = "record_failed"

// knownGroup is the group of duplicates a job read for its URL before
// completing it: a 304, whose outcome keeps the URL where it was, need
// not read it again. members is nil unless the store read them at once
// (frontier.GroupReader): they are the group as the outcome leaves it,
// since it changes nothing of it but the URL's own state, and any other
// change is settled by the outcome that made it.
type knownGroup struct {
	content string
	members []frontier.Member
}
