package hostile

import (
	"net/http"
	"strconv"
)

// Redirects answers its path with a chain of Hops redirects through the
// same path with ?hop=1, ?hop=2 and so on, the last one to To. With Loop
// the last hop leads back to the path itself instead, and the chain never
// ends. Status defaults to 302 Found.
type Redirects struct {
	Hops   int
	To     string
	Loop   bool
	Status int
	Meter
}

func (rd *Redirects) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rd.count(w)
	hop, _ := strconv.Atoi(r.URL.Query().Get("hop"))
	next := r.URL.Path + "?hop=" + strconv.Itoa(hop+1)
	switch {
	case hop+1 < rd.Hops:
	case rd.Loop:
		next = r.URL.Path
	default:
		next = rd.To
	}
	status := rd.Status
	if status == 0 {
		status = http.StatusFound
	}
	w.Header().Set("Location", next)
	w.WriteHeader(status)
}
