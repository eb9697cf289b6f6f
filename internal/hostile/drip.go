package hostile

import (
	"net/http"
	"time"
)

// Drip serves a body that comes a byte at a time: Head at once, then one
// byte every Every until the client goes away or Total bytes have been
// sent (0: never). A client without an overall deadline waits for it as
// long as it drips. ContentType defaults to "text/html; charset=utf-8".
type Drip struct {
	Head        string
	Every       time.Duration
	Total       int64
	ContentType string
	Meter
}

func (d *Drip) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	cw := d.count(w)
	ct := d.ContentType
	if ct == "" {
		ct = "text/html; charset=utf-8"
	}
	w.Header().Set("Content-Type", ct)
	sent, err := cw.Write([]byte(d.Head))
	if err != nil {
		return
	}
	cw.Flush()
	t := time.NewTicker(d.Every)
	defer t.Stop()
	for n := int64(sent); d.Total == 0 || n < d.Total; n++ {
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
		}
		if _, err := cw.Write([]byte{' '}); err != nil {
			return
		}
		cw.Flush()
	}
}
