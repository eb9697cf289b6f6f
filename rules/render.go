package rules

import (
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/urlnorm"
)

// Render is how a page is rendered in the browser before it is read.
type Render struct {
	// Wait is load, network_idle or element; Selector is the element's.
	Wait     string
	Selector string
	Timeout  time.Duration
	// Rule names the config entry that decided: a crawl rule, or the
	// source's render key.
	Rule string
}

// compileRender is the rendering a render block asks for, nil when it
// renders nothing.
func compileRender(r *config.Render, ref string) *Render {
	if r == nil || r.Enabled == nil || !*r.Enabled {
		return nil
	}
	return &Render{Wait: r.Wait, Selector: r.Selector, Timeout: r.Timeout.D(), Rule: ref}
}

// Render says how the page at u (normalised, in the crawl space) is
// rendered, nil when it is read as fetched. The first crawl rule that
// matches u and has a render block decides, as for the other actions;
// else the source's render key. Shared by every caller: read it, never
// change it.
func (s *Source) Render(u string) *Render {
	if !s.renders {
		return nil
	}
	if s.anyRuleRenders {
		p, ok := urlnorm.Split(u)
		if !ok {
			return nil
		}
		if cr := s.crawlRule(u, p); cr != nil && cr.renderSet {
			return cr.render
		}
	}
	return s.render
}
