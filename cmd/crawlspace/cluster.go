package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/frontier/esfrontier"
	"github.com/crawlspace/crawlspace/sink"
)

// openClusterStatus opens, read-only, the state a cluster of processes
// shares; nil when no crawl has stored any yet.
func openClusterStatus(cfg *config.Config) (*esfrontier.Store, error) {
	es, err := sink.Client(cfg.StateCluster())
	if err != nil {
		return nil, err
	}
	cl := &cfg.Cluster
	s, err := esfrontier.Open(context.Background(), esfrontier.Options{Client: es, Prefix: cl.StateIndex,
		Node: cl.NodeName, Partitions: cl.Partitions, LeaseTTL: cl.LeaseTTL.D(), ReadOnly: true})
	if errors.Is(err, esfrontier.ErrNoCrawl) {
		return nil, nil
	}
	return s, err
}

// printCluster says who holds which partitions and who is alive.
func printCluster(w io.Writer, prefix string, v esfrontier.View) {
	free := 0
	held := map[string][]string{}
	for p, h := range v.Holders {
		if h == "" {
			free++
			continue
		}
		held[h] = append(held[h], fmt.Sprint(p))
	}
	fmt.Fprintf(w, "cluster %s: %d partitions, %d free\n", prefix, len(v.Holders), free)
	for _, m := range v.Members {
		state := "alive"
		if !m.Alive {
			state = "gone"
		}
		fmt.Fprintf(w, "  %-20s %-5s heartbeat %s, %d hosts, %d in flight, partitions %s\n", m.Node, state,
			m.Heartbeat.Format("2006-01-02T15:04:05Z"), m.Hosts, m.InFlight, strings.Join(held[m.Node], ","))
	}
}
