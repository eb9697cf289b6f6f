package tikatest

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestProbeReportsAServerThatIsNotListening(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	if err := probe("http://" + addr); err == nil {
		t.Errorf("probe of %s, where nothing listens, reported the server reachable", addr)
	}
}

func TestProbeRefusesAServerThatIsNotTika(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("<html>some other service</html>"))
	}))
	defer s.Close()
	if err := probe(s.URL); err == nil {
		t.Errorf("probe of a server that is not Tika reported it reachable")
	}
}

func TestProbeAcceptsTheRealServer(t *testing.T) {
	if err := probe(URL(t)); err != nil {
		t.Error(err)
	}
}
