package embed

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/internal/embedtest"
	"github.com/crawlspace/crawlspace/internal/esclient"
	"github.com/crawlspace/crawlspace/internal/estest"
	"github.com/crawlspace/crawlspace/internal/faultproxy"
)

func openAI(t *testing.T, base, key string, dims int, timeout time.Duration) *OpenAI {
	t.Helper()
	c, err := NewOpenAI(OpenAIOptions{URL: base, Model: embedtest.Model, Key: key, Dimensions: dims, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return dot / math.Sqrt(na*nb)
}

// The real model gives one vector per text, in order, of its length, and
// texts that mean the same thing in other words lie closer than texts
// about something else. The server counts the request under the key.
func TestTheRealModelEmbedsTextsInOrderAndMeaningIsNear(t *testing.T) {
	base := embedtest.URL(t)
	key := embedtest.Key(t)
	c := openAI(t, base, key, embedtest.Dimensions, time.Minute)
	texts := []string{
		"How do I remove a package from my computer?",
		"To uninstall software, run apt remove followed by its name.",
		"The weather in Lisbon is sunny in July.",
	}
	a, err := c.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Vectors) != 3 || len(a.Vectors[0]) != embedtest.Dimensions {
		t.Fatalf("%d vectors of %d", len(a.Vectors), len(a.Vectors[0]))
	}
	if near, far := cosine(a.Vectors[0], a.Vectors[1]), cosine(a.Vectors[0], a.Vectors[2]); near <= far+0.2 {
		t.Errorf("question-answer similarity %.3f, unrelated %.3f", near, far)
	}
	if a.Tokens <= 0 {
		t.Errorf("tokens %d", a.Tokens)
	}
	one, err := c.Embed(context.Background(), texts[2:])
	if err != nil {
		t.Fatal(err)
	}
	if cosine(one.Vectors[0], a.Vectors[2]) < 0.9999 {
		t.Error("the same text alone and in a batch embeds differently")
	}
	if s := embedtest.Stats(t, key); s.Requests != 2 || s.Inputs != 4 {
		t.Errorf("server counted %+v for this test's key, want 2 requests of 4 inputs", s)
	}
}

// A passage of the default size is embedded whole: its last words, past
// the 128 word pieces langchain4j's copy of the tokenizer stops at, still
// move its vector, and the server counts every word piece it read.
func TestTheServerEmbedsAPassageOfTheDefaultSizeWhole(t *testing.T) {
	c := openAI(t, embedtest.URL(t), embedtest.Key(t), embedtest.Dimensions, time.Minute)
	head := strings.Repeat("The maintainer uploads the package to the archive. ", 15) // 180 word pieces
	a, err := c.Embed(context.Background(), []string{head, head + "Penguins swim in the cold southern ocean."})
	if err != nil {
		t.Fatal(err)
	}
	if sim := cosine(a.Vectors[0], a.Vectors[1]); sim > 0.999 {
		t.Errorf("the words after the 128th word piece changed nothing (cosine %.5f)", sim)
	}
	if a.Tokens < 2*180 {
		t.Errorf("the server read %d word pieces of two texts of 180 and more", a.Tokens)
	}
}

// What a crawl cannot get past by waiting is told apart from an outage:
// vectors of another length than configured, a model the service does
// not have.
func TestWrongDimensionsAndAnUnknownModelAreMisconfigurations(t *testing.T) {
	base := embedtest.URL(t)
	_, err := openAI(t, base, "", 512, time.Minute).Embed(context.Background(), []string{"x"})
	if KindOf(err) != WrongAnswer || !Misconfigured(err) || !strings.Contains(err.Error(), "vectors of 384 dimensions answered, embeddings.dimensions says 512") {
		t.Errorf("wrong dimensions: %v (kind %v)", err, KindOf(err))
	}
	c, err := NewOpenAI(OpenAIOptions{URL: base, Model: "no-such-model", Dimensions: 384, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Embed(context.Background(), []string{"x"})
	var e *Error
	if !errors.As(err, &e) || e.Kind != Refused || e.Status != 404 || !Misconfigured(err) || !strings.Contains(err.Error(), "no-such-model") {
		t.Errorf("unknown model: %v", err)
	}
	_, err = openAI(t, base, "", 384, time.Minute).Embed(context.Background(), []string{"fine", ""})
	if KindOf(err) != Input || Misconfigured(err) {
		t.Errorf("an empty text: %v (kind %v), want the input refused", err, KindOf(err))
	}
}

// A service down, overloaded or stalled is an outage, never a
// misconfiguration: the sink waits for it.
func TestAnOutageOfTheServiceIsToldApartFromRefusals(t *testing.T) {
	base := embedtest.URL(t)
	p, err := faultproxy.New(strings.TrimSuffix(base, "/v1"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := openAI(t, p.URL+"/v1", "", 384, 2*time.Second)
	for _, f := range []struct {
		fault  faultproxy.Fault
		kind   Kind
		status int
		say    string
	}{
		{faultproxy.Fault{Mode: faultproxy.Status, Status: 429}, Overloaded, 429, "429 Too Many Requests"},
		{faultproxy.Fault{Mode: faultproxy.Status, Status: 503}, Overloaded, 503, "503 Service Unavailable"},
		{faultproxy.Fault{Mode: faultproxy.Drop}, Unreachable, 0, "EOF"},
		{faultproxy.Fault{Mode: faultproxy.Stall}, Unreachable, 0, "no answer within embeddings.request_timeout (2s)"},
		{faultproxy.Fault{Mode: faultproxy.Refuse}, Unreachable, 0, "connection refused"},
	} {
		if err := p.Set(f.fault); err != nil {
			t.Fatal(err)
		}
		_, err := c.Embed(context.Background(), []string{"x"})
		var e *Error
		if !errors.As(err, &e) || e.Kind != f.kind || e.Status != f.status || Misconfigured(err) || !strings.Contains(err.Error(), f.say) {
			t.Errorf("%+v: %v, want %v with %q", f.fault, err, f.kind, f.say)
		}
	}
	if err := p.Set(faultproxy.Fault{Mode: faultproxy.Pass}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Embed(context.Background(), []string{"x"}); err != nil {
		t.Errorf("after the outage: %v", err)
	}
}

// The integration-test build of Elasticsearch has no machine learning, so
// no inference API: a crawl configured with an inference endpoint is told
// so, as a misconfiguration, naming the endpoint. (That a cluster with
// machine learning answers is not tested here: docs/semantic.md.)
func TestAnInferenceEndpointOnAClusterWithoutTheInferenceAPIIsAClearMisconfiguration(t *testing.T) {
	es, err := esclient.New(esclient.Config{Addresses: []string{estest.URL(t)}})
	if err != nil {
		t.Fatal(err)
	}
	c := NewInference(es, "my-e5", 384, time.Minute)
	_, err = c.Embed(context.Background(), []string{"x"})
	if !Misconfigured(err) || !strings.Contains(err.Error(), "elasticsearch inference endpoint my-e5: 400 Bad Request: the cluster has no inference API") {
		t.Errorf("got %v (kind %v)", err, KindOf(err))
	}
}
