package sink

import (
	"net/http"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/internal/esclient"
)

// Client is a client of the cluster cfg names, with the sink's TLS,
// credentials and timeouts, for the state store that lives there too.
func Client(cfg *config.Elasticsearch) (*esclient.Client, error) {
	return newClient(cfg, func(rt http.RoundTripper) http.RoundTripper { return rt })
}
