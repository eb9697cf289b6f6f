package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/crawlspace/crawlspace/internal/redact"
)

// Transport sends a request to the cluster, with its addresses,
// credentials and TLS: the go-elasticsearch client's Perform.
type Transport interface {
	Perform(*http.Request) (*http.Response, error)
}

// Inference is an Elasticsearch inference endpoint of task type
// text_embedding, on the documents' cluster.
type Inference struct {
	t       Transport
	id      string
	dims    int
	timeout time.Duration
}

// NewInference prepares a client of the endpoint id; it sends nothing.
func NewInference(t Transport, id string, dims int, timeout time.Duration) *Inference {
	return &Inference{t: t, id: id, dims: dims, timeout: timeout}
}

// Describe names the endpoint.
func (c *Inference) Describe() string {
	return "elasticsearch inference endpoint " + c.id
}

// Embed sends the texts in one request.
func (c *Inference) Embed(ctx context.Context, texts []string) (Answer, error) {
	body, err := json.Marshal(map[string]any{"input": texts})
	if err != nil {
		return Answer{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "/_inference/text_embedding/"+url.PathEscape(c.id), bytes.NewReader(body))
	if err != nil {
		return Answer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := c.t.Perform(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within embeddings.request_timeout (%s): %w", c.timeout, err)
		}
		return Answer{}, &Error{Kind: Unreachable, Err: redact.Error(fmt.Errorf("%s: %w", c.Describe(), err))}
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(res.Body, 4<<10))
		return Answer{}, c.refusal(res, msg)
	}
	var a struct {
		TextEmbedding []struct {
			Embedding []float32 `json:"embedding"`
		} `json:"text_embedding"`
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 256<<20)).Decode(&a); err != nil {
		return Answer{}, &Error{Kind: WrongAnswer, Status: res.StatusCode, Err: fmt.Errorf("%s: reading the answer: %w", c.Describe(), err)}
	}
	out := Answer{Vectors: make([][]float32, len(a.TextEmbedding))}
	for i, e := range a.TextEmbedding {
		out.Vectors[i] = e.Embedding
	}
	if err := check(out.Vectors, len(texts), c.dims); err != nil {
		err.(*Error).Err = fmt.Errorf("%s: %w", c.Describe(), err.(*Error).Err)
		return Answer{}, err
	}
	return out, nil
}

// refusal says what an error answer of the cluster means. A cluster
// without the inference API (no machine learning, or older than 8.11)
// answers "no handler found for uri" with 400: that is no input's fault.
func (c *Inference) refusal(res *http.Response, body []byte) error {
	reason := esReason(body)
	kind := byStatus(res.StatusCode)
	switch {
	case strings.Contains(reason, "no handler found for uri"):
		kind = Refused
		reason = "the cluster has no inference API (it needs Elasticsearch 8.11 or newer with machine learning; " + reason + ")"
	case res.StatusCode == http.StatusNotFound:
		reason = "no such inference endpoint on the cluster (create it with PUT _inference/text_embedding/" + c.id + "): " + reason
	}
	return &Error{Kind: kind, Status: res.StatusCode, RetryAfter: retryAfter(res.Header),
		Err: fmt.Errorf("%s: %s: %s", c.Describe(), res.Status, reason)}
}

// esReason is the reason of an Elasticsearch error body, or the body.
func esReason(body []byte) string {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || len(e.Error) == 0 {
		return snippet(body)
	}
	var s string
	if json.Unmarshal(e.Error, &s) == nil {
		return snippet([]byte(s))
	}
	var obj struct {
		Type   string `json:"type"`
		Reason string `json:"reason"`
	}
	if json.Unmarshal(e.Error, &obj) == nil && obj.Reason != "" {
		return snippet([]byte(obj.Type + ": " + obj.Reason))
	}
	return snippet(body)
}
