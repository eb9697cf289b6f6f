package monitor

import (
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/crawlspace/crawlspace/frontier/esfrontier"
)

// ClusterViewer is a state store shared by several processes.
type ClusterViewer interface {
	Cluster() esfrontier.View
}

type clusterCollector struct {
	c                              ClusterViewer
	parts, up, inFlight, hosts, at *prometheus.Desc
}

// WatchCluster adds the cluster's gauges, as the store last read them
// (every third of cluster.lease_ttl): the partitions each process holds
// (holder "" for the free ones), and each process's liveness, hosts and
// requests in flight as it last said.
func (m *Metrics) WatchCluster(c ClusterViewer) {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "cluster", name), help, labels, nil)
	}
	m.reg.MustRegister(&clusterCollector{c: c,
		parts:    d("partitions", "Partitions of the hosts held by each process (holder \"\": free).", "holder"),
		up:       d("member_up", "1 for a process whose heartbeat is younger than cluster.lease_ttl, 0 for one gone.", "node"),
		inFlight: d("member_in_flight", "Requests under way in each process, as it last said.", "node"),
		hosts:    d("member_hosts", "Hosts each process schedules, as it last said.", "node"),
		at:       d("read_timestamp_seconds", "When the cluster was last read, in Unix seconds."),
	})
}

func (c *clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.parts, c.up, c.inFlight, c.hosts, c.at} {
		ch <- d
	}
}

func (c *clusterCollector) Collect(ch chan<- prometheus.Metric) {
	v := c.c.Cluster()
	if v.At.IsZero() {
		return
	}
	held := map[string]int{"": 0}
	for _, h := range v.Holders {
		held[h]++
	}
	for _, m := range v.Members {
		if _, ok := held[m.Node]; !ok {
			held[m.Node] = 0
		}
		up := 0.0
		if m.Alive {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up, m.Node)
		ch <- prometheus.MustNewConstMetric(c.inFlight, prometheus.GaugeValue, float64(m.InFlight), m.Node)
		ch <- prometheus.MustNewConstMetric(c.hosts, prometheus.GaugeValue, float64(m.Hosts), m.Node)
	}
	for h, n := range held {
		ch <- prometheus.MustNewConstMetric(c.parts, prometheus.GaugeValue, float64(n), h)
	}
	ch <- prometheus.MustNewConstMetric(c.at, prometheus.GaugeValue, float64(v.At.UnixNano())/1e9)
}

// ClusterView is the cluster on the status page and in /status.json, as
// `crawlspace status` prints it: the processes sharing the crawl and the
// partitions of the hosts, as this process last read them.
type ClusterView struct {
	StateIndex string          `json:"state_index"`
	Read       time.Time       `json:"read"`
	Partitions int             `json:"partitions"`
	Free       []int           `json:"free_partitions"`
	Members    []ClusterMember `json:"members"`
}

// ClusterMember is one process of the cluster.
type ClusterMember struct {
	Node      string    `json:"node"`
	Alive     bool      `json:"alive"`
	Heartbeat time.Time `json:"heartbeat"`
	Hosts     int       `json:"hosts"`
	InFlight  int       `json:"in_flight"`
	// Partitions are those it holds now; a process gone holds none once
	// its leases have expired.
	Partitions []int `json:"partitions"`
}

// ShowCluster adds the cluster to the status page.
func (s *Server) ShowCluster(c ClusterViewer) {
	s.mu.Lock()
	s.cluster = c
	s.mu.Unlock()
}

func clusterView(stateIndex string, v esfrontier.View) *ClusterView {
	if v.At.IsZero() {
		return nil
	}
	cv := &ClusterView{StateIndex: stateIndex, Read: v.At.UTC(), Partitions: len(v.Holders), Free: []int{}}
	held := map[string][]int{}
	for p, h := range v.Holders {
		if h == "" {
			cv.Free = append(cv.Free, p)
			continue
		}
		held[h] = append(held[h], p)
	}
	for _, m := range v.Members {
		parts := held[m.Node]
		if parts == nil {
			parts = []int{}
		}
		cv.Members = append(cv.Members, ClusterMember{Node: m.Node, Alive: m.Alive, Heartbeat: m.Heartbeat.UTC(),
			Hosts: m.Hosts, InFlight: m.InFlight, Partitions: parts})
	}
	return cv
}

// ranges writes partition numbers as people read them: 0-3,7,9-10.
func ranges(ps []int) string {
	var b strings.Builder
	for i := 0; i < len(ps); {
		j := i
		for j+1 < len(ps) && ps[j+1] == ps[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j > i {
			fmt.Fprintf(&b, "%d-%d", ps[i], ps[j])
		} else {
			fmt.Fprintf(&b, "%d", ps[i])
		}
		i = j + 1
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}
