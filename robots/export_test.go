package robots

import (
	"context"
	"io"
	"net/http"
)

// What only the tests use.

// DisallowAll returns rules that disallow everything but /robots.txt: what an
// unreachable (5xx, network error) robots.txt means.
func DisallowAll() *Rules { return disallowAll("robots.txt unreachable: everything disallowed") }

// HTTPFetcher returns a Fetcher that GETs robots.txt with Client(client),
// sending userAgent. Politeness is the caller's: wrap the Fetcher to apply
// it.
func HTTPFetcher(client *http.Client, userAgent string) Fetcher {
	cl := Client(client)
	return func(ctx context.Context, robotsURL string) (int, io.ReadCloser, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, robotsURL, nil)
		if err != nil {
			return 0, nil, err
		}
		if userAgent != "" {
			req.Header.Set("User-Agent", userAgent)
		}
		resp, err := cl.Do(req)
		if err != nil {
			return 0, nil, err
		}
		return resp.StatusCode, resp.Body, nil
	}
}
