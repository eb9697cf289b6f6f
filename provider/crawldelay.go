package provider

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/robots"
	"github.com/crawlspace/crawlspace/rules"
)

// CrawlDelay is what a host's robots.txt Crawl-delay makes of its
// politeness: the delay asked and the pause kept between two requests, the
// larger of the source's politeness.delay and the Crawl-delay cut to
// politeness.max_crawl_delay.
type CrawlDelay struct {
	Host string `json:"host"`
	// Source is the source whose politeness the host keeps.
	Source string `json:"source"`
	// Asked is the Crawl-delay, Delay the pause kept; Capped says
	// max_crawl_delay cut the Crawl-delay.
	Asked  time.Duration `json:"-"`
	Delay  time.Duration `json:"-"`
	Capped bool          `json:"capped,omitempty"`
}

// crawlDelayJSON is CrawlDelay as the report, the state store and status
// write it: durations in seconds.
type crawlDelayJSON struct {
	Host   string  `json:"host"`
	Source string  `json:"source"`
	Asked  float64 `json:"crawl_delay_seconds"`
	Delay  float64 `json:"delay_seconds"`
	Capped bool    `json:"capped,omitempty"`
}

func (d CrawlDelay) MarshalJSON() ([]byte, error) {
	return json.Marshal(crawlDelayJSON{d.Host, d.Source, d.Asked.Seconds(), d.Delay.Seconds(), d.Capped})
}

func (d *CrawlDelay) UnmarshalJSON(b []byte) error {
	var j crawlDelayJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*d = CrawlDelay{Host: j.Host, Source: j.Source, Capped: j.Capped,
		Asked: time.Duration(j.Asked * float64(time.Second)), Delay: time.Duration(j.Delay * float64(time.Second))}
	return nil
}

// String says it in words: "5m0s (robots.txt Crawl-delay 24h0m0s, cut to
// politeness.max_crawl_delay)".
func (d CrawlDelay) String() string {
	switch {
	case d.Asked <= 0:
		return fmt.Sprintf("%s (politeness.delay)", d.Delay)
	case d.Capped:
		return fmt.Sprintf("%s (robots.txt Crawl-delay %s, cut to politeness.max_crawl_delay)", d.Delay, d.Asked)
	case d.Delay > d.Asked:
		return fmt.Sprintf("%s (politeness.delay; robots.txt Crawl-delay %s)", d.Delay, d.Asked)
	}
	return fmt.Sprintf("%s (robots.txt Crawl-delay)", d.Delay)
}

// HostDelay is the pause between two requests to a host that keeps the
// politeness p, when its robots.txt asks for crawlDelay (0 for none, or
// none obeyed). It is the one place the Crawl-delay is capped.
func HostDelay(p config.Politeness, host, source string, crawlDelay time.Duration) CrawlDelay {
	d := CrawlDelay{Host: host, Source: source, Asked: crawlDelay, Delay: p.Delay.D()}
	if crawlDelay > 0 {
		honoured := min(crawlDelay, p.MaxCrawlDelay.D())
		d.Capped = honoured < crawlDelay
		d.Delay = max(d.Delay, honoured)
	}
	return d
}

// PolitenessDelay is the pause the crawler keeps between two requests to
// host, for explain and status: the host keeps the politeness of the
// source whose start URLs are on it, else of the first source
// (rules.Set.HostOwner), and crawlDelay, robots.txt's (0 for none), counts
// only where that source obeys robots.txt and Crawl-delay.
func PolitenessDelay(cfg *config.Config, set *rules.Set, host string, crawlDelay time.Duration) CrawlDelay {
	owner := set.HostOwner(host)
	if owner == nil {
		return CrawlDelay{Host: host}
	}
	sc := cfg.SourceByName(owner.Name)
	if !*sc.Robots.Obey || !*sc.Politeness.ObeyCrawlDelay {
		crawlDelay = 0
	}
	return HostDelay(sc.Politeness, host, sc.Name, crawlDelay)
}

// learnFrom keeps the Crawl-delay of the host's robots.txt r, for the
// host's policy, when sc obeys it, and says so once per host and cycle
// (note).
func (p *politeness) learnFrom(sc *config.Source, hostKey string, r *robots.Rules) {
	if !*sc.Politeness.ObeyCrawlDelay {
		return
	}
	if d := r.CrawlDelay(p.agent); d > 0 && p.learn(hostKey, d) {
		p.note(hostKey, d)
	}
}

// note says, the first time in a cycle a host's robots.txt asks for a
// Crawl-delay d (or asks for another one: learn), what the crawler keeps:
// an INFO line, a WARN line when politeness.max_crawl_delay cuts it, an
// entry of the report, and one in the state store for status.
func (p *politeness) note(host string, d time.Duration) {
	sc := p.owner(host)
	cd := HostDelay(sc.Politeness, host, sc.Name, d)
	if cd.Capped {
		p.log.Warn("robots.txt Crawl-delay capped", "host", host, "source", cd.Source, "crawl_delay", cd.Asked,
			"delay", cd.Delay, "setting", "politeness.max_crawl_delay")
	} else {
		p.log.Info("robots.txt Crawl-delay honoured", "host", host, "source", cd.Source, "crawl_delay", cd.Asked, "delay", cd.Delay)
	}
	p.report().crawlDelay(cd)
	p.keep(cd)
}

// metaCrawlDelays + source name holds the Crawl-delays the current cycle
// learnt of the hosts keeping the source's politeness, for status.
const metaCrawlDelays = "crawl_delays/"

// keep adds cd to its source's list in the state store.
func (p *politeness) keep(cd CrawlDelay) {
	p.listMu.Lock()
	defer p.listMu.Unlock()
	list := p.lists[cd.Source]
	i := slices.IndexFunc(list, func(x CrawlDelay) bool { return x.Host == cd.Host })
	if i < 0 {
		list = append(list, cd)
		slices.SortFunc(list, func(x, y CrawlDelay) int { return strings.Compare(x.Host, y.Host) })
	} else {
		list[i] = cd
	}
	p.lists[cd.Source] = list
	raw, err := json.Marshal(list)
	if err == nil {
		err = p.store.PutMeta(metaCrawlDelays+cd.Source, raw)
	}
	if err != nil {
		p.log.Warn("cannot record a host's Crawl-delay for status", "host", cd.Host, "source", cd.Source, "err", err)
	}
}

// forget starts a cycle's account of Crawl-delays afresh: each host is
// said again, and status shows what this cycle learns.
func (p *politeness) forget() error {
	p.forgetNoted()
	p.listMu.Lock()
	defer p.listMu.Unlock()
	p.lists = map[string][]CrawlDelay{}
	for _, sc := range p.sources {
		old, err := p.store.GetMeta(metaCrawlDelays + sc.Name)
		if err != nil {
			return err
		}
		if old != nil {
			if err := p.store.PutMeta(metaCrawlDelays+sc.Name, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// CrawlDelays are the hosts keeping a source's politeness whose robots.txt
// asked for a Crawl-delay, as the last cycle learnt them, by host.
func CrawlDelays(front frontier.Meta, source string) ([]CrawlDelay, error) {
	raw, err := front.GetMeta(metaCrawlDelays + source)
	if err != nil || raw == nil {
		return nil, err
	}
	var list []CrawlDelay
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("state store: Crawl-delays of source %s: %w", source, err)
	}
	return list, nil
}
