package monitor

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/crawlspace/crawlspace/frontier/esfrontier"
)

type fixedView esfrontier.View

func (v fixedView) Cluster() esfrontier.View { return esfrontier.View(v) }

func TestClusterGaugesCountPartitionsPerHolderAndWhoIsAlive(t *testing.T) {
	m := NewMetrics("test", nil)
	m.WatchCluster(fixedView{At: time.Unix(100, 0), Holders: []string{"a", "a", "", "b"},
		Members: []esfrontier.Member{{Node: "a", Alive: true, InFlight: 3, Hosts: 7}, {Node: "b", Alive: true}, {Node: "c"}}})
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, metric := range f.Metric {
			key := f.GetName()
			for _, l := range metric.Label {
				key += "," + l.GetValue()
			}
			got[key] = gauge(metric)
		}
	}
	want := map[string]float64{
		"crawlspace_cluster_partitions,a": 2, "crawlspace_cluster_partitions,b": 1, "crawlspace_cluster_partitions,": 1,
		"crawlspace_cluster_partitions,c": 0, "crawlspace_cluster_member_up,a": 1, "crawlspace_cluster_member_up,c": 0,
		"crawlspace_cluster_member_in_flight,a": 3, "crawlspace_cluster_member_hosts,a": 7,
		"crawlspace_cluster_read_timestamp_seconds": 100,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
}

func gauge(m *dto.Metric) float64 {
	if g := m.GetGauge(); g != nil {
		return g.GetValue()
	}
	return m.GetCounter().GetValue()
}
