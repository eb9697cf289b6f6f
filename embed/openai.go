package embed

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/crawlspace/crawlspace/internal/redact"
)

// OpenAI is an OpenAI-compatible embeddings API.
type OpenAI struct {
	endpoint string // the base URL + /embeddings
	model    string
	key      string
	dims     int
	hc       *http.Client
}

// OpenAIOptions reach an OpenAI-compatible API.
type OpenAIOptions struct {
	// URL is the API's base, ending in /v1.
	URL   string
	Model string
	// Key is sent as "Authorization: Bearer Key" when set.
	Key        string
	Dimensions int
	// Timeout bounds each request, whole.
	Timeout time.Duration
	// CAFile is added to the system's roots.
	CAFile string
}

// NewOpenAI prepares a client; it sends nothing.
func NewOpenAI(o OpenAIOptions) (*OpenAI, error) {
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("embeddings.ca_file: %w", err)
		}
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("embeddings.ca_file %s holds no PEM certificate", o.CAFile)
		}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	tr.DialContext = (&net.Dialer{Timeout: min(o.Timeout, 10*time.Second), KeepAlive: 30 * time.Second}).DialContext
	tr.MaxIdleConnsPerHost = 16
	return &OpenAI{
		endpoint: strings.TrimRight(o.URL, "/") + "/embeddings",
		model:    o.Model, key: o.Key, dims: o.Dimensions,
		hc: &http.Client{Transport: tr, Timeout: o.Timeout},
	}, nil
}

// Describe names the endpoint and the model.
func (c *OpenAI) Describe() string {
	return redact.URLs(c.endpoint) + " (model " + c.model + ")"
}

type openAIAnswer struct {
	Data []struct {
		Embedding []float32 `json:"embedding"`
		Index     int       `json:"index"`
	} `json:"data"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
	} `json:"usage"`
}

// Embed sends the texts in one request.
func (c *OpenAI) Embed(ctx context.Context, texts []string) (Answer, error) {
	body, err := json.Marshal(map[string]any{"model": c.model, "input": texts, "encoding_format": "float"})
	if err != nil {
		return Answer{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return Answer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return Answer{}, c.unreachable(ctx, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(res.Body, 4<<10))
		return Answer{}, &Error{Kind: byStatus(res.StatusCode), Status: res.StatusCode, RetryAfter: retryAfter(res.Header),
			Err: fmt.Errorf("%s: %s: %s", c.Describe(), res.Status, openAIMessage(msg))}
	}
	var a openAIAnswer
	if err := json.NewDecoder(io.LimitReader(res.Body, 256<<20)).Decode(&a); err != nil {
		return Answer{}, &Error{Kind: WrongAnswer, Status: res.StatusCode, Err: fmt.Errorf("%s: reading the answer: %w", c.Describe(), err)}
	}
	// The API gives each vector its input's index; most keep the order,
	// none has to.
	sort.SliceStable(a.Data, func(i, j int) bool { return a.Data[i].Index < a.Data[j].Index })
	out := Answer{Vectors: make([][]float32, len(a.Data)), Tokens: a.Usage.PromptTokens}
	for i, d := range a.Data {
		if d.Index != i {
			return Answer{}, &Error{Kind: WrongAnswer, Status: res.StatusCode, Err: fmt.Errorf("%s: the answer's indexes do not run from 0 to %d", c.Describe(), len(texts)-1)}
		}
		out.Vectors[i] = d.Embedding
	}
	if err := check(out.Vectors, len(texts), c.dims); err != nil {
		err.(*Error).Err = fmt.Errorf("%s: %w", c.Describe(), err.(*Error).Err)
		return Answer{}, err
	}
	return out, nil
}

// unreachable is the error of a request that got no answer.
func (c *OpenAI) unreachable(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return err
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		err = fmt.Errorf("no answer within embeddings.request_timeout (%s): %w", c.hc.Timeout, err)
	}
	return &Error{Kind: Unreachable, Err: redact.Error(fmt.Errorf("%s: %w", c.Describe(), err))}
}

// openAIMessage is the message of an OpenAI error body, or the body.
func openAIMessage(body []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		return snippet([]byte(e.Error.Message))
	}
	return snippet(body)
}
