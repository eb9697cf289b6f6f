// Package embed asks an embedding service for the vectors of texts: an
// OpenAI-compatible POST /v1/embeddings (OpenAI, Ollama, vLLM,
// text-embeddings-inference, LocalAI) or an Elasticsearch inference
// endpoint (POST _inference/text_embedding/<id>). It checks every answer
// (one vector per text, each of the configured length, every component a
// finite number) and sorts every failure into a Kind, which tells the
// sink whether to wait for the service or to give up on one text.
package embed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/crawlspace/crawlspace/config"
)

// New is the client of the service cfg names; an inference endpoint is
// reached through t, the documents' cluster.
func New(cfg *config.Embeddings, t Transport) (Client, error) {
	if cfg.Service == config.EmbedElasticsearch {
		return NewInference(t, cfg.InferenceID, cfg.Dimensions, cfg.RequestTimeout.D()), nil
	}
	return NewOpenAI(OpenAIOptions{URL: cfg.URL, Model: cfg.Model, Key: cfg.APIKey,
		Dimensions: cfg.Dimensions, Timeout: cfg.RequestTimeout.D(), CAFile: cfg.CAFile})
}

// Client embeds texts. It is safe for concurrent use.
type Client interface {
	// Embed returns one vector per text, in order.
	Embed(ctx context.Context, texts []string) (Answer, error)
	// Describe names the service and the model for messages, never a
	// secret.
	Describe() string
}

// Answer is the vectors of one request.
type Answer struct {
	Vectors [][]float32
	// Tokens is what the service counted, 0 when it does not say.
	Tokens int
}

// Kind sorts failures by what can be done about them.
type Kind int

const (
	// Unreachable: no answer (refused, dropped, past request_timeout).
	Unreachable Kind = iota + 1
	// Overloaded: 429 or a 5xx; the service may answer later.
	Overloaded
	// Refused: the service refused the request as a whole, not for what
	// it held: credentials (401, 403), a model or endpoint it does not
	// have (404), a service that is not one (405, no inference API).
	Refused
	// Input: the service refused what the texts hold (400, 413, 422): a
	// text too long, say. Sent alone, a text refused so is refused for
	// good.
	Input
	// WrongAnswer: an answer that does not fit: another number of
	// vectors, vectors of another length, not a number.
	WrongAnswer
)

func (k Kind) String() string {
	switch k {
	case Unreachable:
		return "unreachable"
	case Overloaded:
		return "overloaded"
	case Refused:
		return "refused"
	case Input:
		return "input refused"
	case WrongAnswer:
		return "wrong answer"
	}
	return "failed"
}

// Error is a failed request.
type Error struct {
	Kind Kind
	// Status is the HTTP status, 0 when no answer came.
	Status int
	// RetryAfter is the wait a 429 or 503 asked for, 0 when none.
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// KindOf is the kind of err, 0 when it is no *Error.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return 0
}

// Misconfigured says err will not pass by itself: credentials, a model or
// endpoint that is not there, vectors of another length than configured.
// A crawl starting against such a service stops at once rather than hold
// every document back.
func Misconfigured(err error) bool {
	k := KindOf(err)
	return k == Refused || k == WrongAnswer
}

// byStatus sorts an error status.
func byStatus(status int) Kind {
	switch {
	case status == http.StatusTooManyRequests || status >= 500 || status == http.StatusRequestTimeout:
		return Overloaded
	case status == http.StatusBadRequest || status == http.StatusRequestEntityTooLarge || status == http.StatusUnprocessableEntity:
		return Input
	}
	return Refused
}

// retryAfter reads a Retry-After of seconds; dates and nonsense give 0.
func retryAfter(h http.Header) time.Duration {
	s, err := strconv.Atoi(strings.TrimSpace(h.Get("Retry-After")))
	if err != nil || s < 0 {
		return 0
	}
	return min(time.Duration(s)*time.Second, 10*time.Minute)
}

// check makes sure an answer has one vector of dims finite numbers per
// text.
func check(vectors [][]float32, texts, dims int) error {
	if len(vectors) != texts {
		return &Error{Kind: WrongAnswer, Err: fmt.Errorf("%d vectors answered for %d texts", len(vectors), texts)}
	}
	for i, v := range vectors {
		if len(v) != dims {
			return &Error{Kind: WrongAnswer, Err: fmt.Errorf("vectors of %d dimensions answered, embeddings.dimensions says %d", len(v), dims)}
		}
		for _, f := range v {
			if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
				return &Error{Kind: WrongAnswer, Err: fmt.Errorf("vector %d holds %v", i, f)}
			}
		}
	}
	return nil
}

// snippet is the start of an error body, on one line, for a message.
func snippet(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}
