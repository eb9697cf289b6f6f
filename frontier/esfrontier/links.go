package esfrontier

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/crawlspace/crawlspace/frontier"
)

// Outlinks are documents of the links index, one per page (or list) key:
// id the key's LinkKey in hex, "l" the sorted LinkKeys it leads to, 8
// bytes each, big-endian, in base64. Not indexed: only read by id and
// walked whole by Reach.

type linksDoc struct {
	L string `json:"l"`
}

func linksID(key string) string { return strconv.FormatUint(frontier.LinkKey(key), 16) }

func encodeLinks(links []uint64) string {
	b := make([]byte, 0, 8*len(links))
	for _, l := range links {
		b = binary.BigEndian.AppendUint64(b, l)
	}
	return base64.StdEncoding.EncodeToString(b)
}

func decodeLinks(s string) ([]uint64, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b)%8 != 0 {
		return nil, fmt.Errorf("esfrontier: damaged outlinks")
	}
	out := make([]uint64, 0, len(b)/8)
	for i := 0; i < len(b); i += 8 {
		out = append(out, binary.BigEndian.Uint64(b[i:]))
	}
	return out, nil
}

// linksLine appends the write of key's outlinks (a delete when none).
func (s *Store) linksLine(b *ndjson, key string, links []uint64) {
	if len(links) == 0 {
		b.line(map[string]any{"delete": map[string]any{"_index": s.links, "_id": linksID(key)}})
		return
	}
	b.line(map[string]any{"index": map[string]any{"_index": s.links, "_id": linksID(key)}})
	b.line(linksDoc{L: encodeLinks(links)})
}

// Links returns the outlinks stored under key.
func (s *Store) Links(key string) ([]uint64, bool, error) {
	a, err := s.get(context.Background(), s.links, linksID(key), "")
	if err != nil || !a.Found {
		return nil, false, err
	}
	var d linksDoc
	if err := json.Unmarshal(a.Source, &d); err != nil {
		return nil, false, err
	}
	l, err := decodeLinks(d.L)
	return l, err == nil, err
}

// SetLinks stores links under key.
func (s *Store) SetLinks(key string, links []uint64) error {
	links = slices.Clone(links)
	slices.Sort(links)
	links = slices.Compact(links)
	var b ndjson
	s.linksLine(&b, key, links)
	items, err := s.bulk(context.Background(), b.Bytes(), "")
	if err != nil {
		return &Error{Op: "store outlinks", Err: err}
	}
	if len(items) == 1 && items[0].Status != 404 {
		return itemError(&items[0])
	}
	return nil
}

// Reach reads every page's outlinks (a scroll over the links index) and
// walks them from roots in memory.
func (s *Store) Reach(roots []uint64) (*frontier.Reached, error) {
	ctx := context.Background()
	graph := map[uint64][]uint64{}
	var ans struct {
		ScrollID string `json:"_scroll_id"`
		Hits     struct {
			Hits []struct {
				ID     string   `json:"_id"`
				Source linksDoc `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	// Read at a cycle's end, right after its last pages' outlinks were
	// stored: unrefreshed, the index would still hold the links a page had
	// before, and pages it no longer links would not be orphans.
	err := s.do(ctx, http.MethodPost, "/"+s.links+"/_refresh", nil, nil)
	if err == nil {
		err = s.do(ctx, http.MethodPost, "/"+s.links+"/_search?scroll=1m", map[string]any{"size": 5000, "sort": []string{"_doc"}}, &ans)
	}
	for err == nil && len(ans.Hits.Hits) > 0 {
		for _, h := range ans.Hits.Hits {
			k, perr := strconv.ParseUint(h.ID, 16, 64)
			if perr != nil {
				continue
			}
			if graph[k], err = decodeLinks(h.Source.L); err != nil {
				return nil, err
			}
		}
		id := ans.ScrollID
		ans.Hits.Hits = nil
		err = s.do(ctx, http.MethodPost, "/_search/scroll", map[string]any{"scroll": "1m", "scroll_id": id}, &ans)
	}
	if ans.ScrollID != "" {
		_ = s.do(ctx, http.MethodDelete, "/_search/scroll", map[string]any{"scroll_id": ans.ScrollID}, nil)
	}
	if err != nil {
		return nil, &Error{Op: "read the outlinks", Err: err}
	}
	set := make(map[uint64]struct{}, len(roots))
	var stack []uint64
	for _, k := range roots {
		if _, ok := set[k]; !ok {
			set[k] = struct{}{}
			stack = append(stack, k)
		}
	}
	for len(stack) > 0 {
		k := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, t := range graph[k] {
			if _, ok := set[t]; !ok {
				set[t] = struct{}{}
				stack = append(stack, t)
			}
		}
	}
	return frontier.NewReached(set), nil
}
