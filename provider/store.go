package provider

import (
	"context"
	"fmt"
	"io"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/frontier/esfrontier"
	"github.com/crawlspace/crawlspace/sink"
)

// openStore opens the state store cfg names: the embedded one under
// state_dir, or, with cluster.state_index, the one in Elasticsearch that
// several processes share, on the documents' cluster or on
// cluster.elasticsearch.
func (c *Crawler) openStore(cfg *config.Config) (frontier.Store, io.Closer, error) {
	if cl := &cfg.Cluster; cl.StateIndex != "" {
		conn := cfg.StateCluster()
		es, err := sink.Client(conn)
		if err != nil {
			return nil, nil, fmt.Errorf("state store: %w", err)
		}
		s, err := esfrontier.Open(context.Background(), esfrontier.Options{Client: es, Prefix: cl.StateIndex,
			Node: cl.NodeName, Partitions: cl.Partitions, LeaseTTL: cl.LeaseTTL.D(), Policy: c.polite.policy,
			Shards: conn.Shards, Replicas: conn.Replicas, Log: c.log, Maintain: c.maintain,
			History: frontier.DefaultHistory, Budgets: budgetsOf(cfg), OnBudget: c.overBudget, Now: c.now})
		if err != nil {
			return nil, nil, err
		}
		c.cluster = s
		return s, s, nil
	}
	f, err := frontier.Open(cfg.StateDir, frontier.Options{Policy: c.polite.policy, History: frontier.DefaultHistory,
		Budgets: budgetsOf(cfg), OnBudget: c.overBudget, Now: c.now})
	if err != nil {
		return nil, nil, err
	}
	c.bolt = f
	return f, f, nil
}

// Target names where documents go: the physical index, or the file.
func (c *Crawler) Target() string { return c.sink.Target() }

// Store is the state store as the crawl uses it.
func (c *Crawler) Store() frontier.Store { return c.front }

// Cluster is the state store shared with other processes, nil when the
// state is embedded.
func (c *Crawler) Cluster() *esfrontier.Store { return c.cluster }

// CycleBegun returns a channel closed once another process sharing the
// crawl has begun a cycle past the last one this crawler ran (it learns of
// it at its next lease round); nil, never ready, with the embedded store,
// which no other process changes.
func (c *Crawler) CycleBegun() <-chan struct{} {
	if c.cluster == nil {
		return nil
	}
	ran := c.cycles.ran.Load()
	if ran == 0 {
		ran = c.cluster.Cycle()
	}
	return c.cluster.CycleAfter(ran)
}

// clusterWarnings are what a cluster's store does not do yet.
func (c *Crawler) clusterWarnings(report *Report) {
	if c.cluster == nil {
		return
	}
	if es := c.cfg.Cluster.Elasticsearch; es != nil && es.InsecureSkipVerify {
		report.Warn("TLS certificates of the state's cluster are not verified (cluster.elasticsearch.insecure_skip_verify)")
		c.log.Warn("TLS certificates are not verified", "setting", "cluster.elasticsearch.insecure_skip_verify")
	}
}
