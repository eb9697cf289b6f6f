package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"time"

	"github.com/crawlspace/crawlspace/docfields"
)

// The two layouts measured for the passages of a crawl:
//
//   - nested: each document holds its passages with their vectors as
//     nested objects (doc_passages); a kNN search finds documents, each
//     with its best passages as inner hits;
//   - passage index: the passages are documents of an index of their own
//     (the document's id beside each), the documents keep none; a kNN
//     search finds passages.
type layoutResult struct {
	name                   string
	docs, passages         int
	recall                 float64 // of what the search returns: documents (nested), passages (passage index)
	p50, p95               time.Duration
	sizeBytes              int64
	indexTook              time.Duration
	deleteTook, updateTook time.Duration // 20 documents, one at a time
	deleteBytes            int
	deleteActions          int
	updateBytes            int
}

// scaleCorpus repeats the corpus n times, each copy's vectors moved a
// little off the original (and normalised again), so a larger index holds
// distinct neighbours instead of exact duplicates.
func scaleCorpus(docs []corpusDoc, n int) []corpusDoc {
	rng := rand.New(rand.NewPCG(1, 2))
	out := append([]corpusDoc(nil), docs...)
	for k := 1; k < n; k++ {
		for _, d := range docs {
			c := d
			doc := *d.Doc
			doc.URL = d.Doc.URL + "?copy=" + strconv.Itoa(k)
			c.Doc = &doc
			c.ID = docfields.ID(doc.URL)
			c.Passages = make([]docfields.Passage, len(d.Passages))
			for i, p := range d.Passages {
				v := make([]float32, len(p.Vector))
				var norm float64
				for j, f := range p.Vector {
					v[j] = f + float32(rng.NormFloat64()*0.03)
					norm += float64(v[j]) * float64(v[j])
				}
				for j := range v {
					v[j] /= float32(math.Sqrt(norm))
				}
				p.Vector = v
				p.URL = doc.URL
				c.Passages[i] = p
			}
			out = append(out, c)
		}
	}
	return out
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

// exact finds the k nearest passages and documents by brute force.
func exact(docs []corpusDoc, q []float32, k int) (passages, documents map[string]bool) {
	type scored struct {
		id    string
		score float64
	}
	var ps []scored
	best := map[string]float64{}
	for _, d := range docs {
		for i, p := range d.Passages {
			s := cosine(q, p.Vector)
			ps = append(ps, scored{d.ID + "-" + strconv.Itoa(i), s})
			if b, ok := best[d.ID]; !ok || s > b {
				best[d.ID] = s
			}
		}
	}
	top := func(list []scored) map[string]bool {
		sort.Slice(list, func(i, j int) bool { return list[i].score > list[j].score })
		out := map[string]bool{}
		for _, s := range list[:min(k, len(list))] {
			out[s.id] = true
		}
		return out
	}
	var ds []scored
	for id, s := range best {
		ds = append(ds, scored{id, s})
	}
	return top(ps), top(ds)
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

func vectorsOpts(dims int, indexType string) *docfields.Vectors {
	return &docfields.Vectors{Dims: dims, Similarity: "cosine", IndexType: indexType, Fingerprint: "bench"}
}

func createIndex(n *node, name string, body map[string]any) error {
	_ = n.do("DELETE", "/"+name, nil, nil)
	body["settings"].(map[string]any)["number_of_replicas"] = 0
	body["settings"].(map[string]any)["number_of_shards"] = 1
	return n.do("PUT", "/"+name, body, nil)
}

// passageIndexMapping is the passage index's mapping: the passage fields
// of doc_passages, the document's id and URL beside them.
func passageIndexMapping(dims int, indexType string) map[string]any {
	nested := docfields.MappingWith(nil, docfields.IndexOptions{Vectors: vectorsOpts(dims, indexType)})
	props := nested["mappings"].(map[string]any)["properties"].(map[string]any)[docfields.PassagesField].(map[string]any)["properties"].(map[string]any)
	props["doc_id"] = map[string]any{"type": "keyword"}
	return map[string]any{"settings": map[string]any{}, "mappings": map[string]any{"dynamic": "strict", "properties": props}}
}

func appendAction(b []byte, action, id string) []byte {
	return append(b, `{"`+action+`":{"_id":"`+id+`"}}`+"\n"...)
}

func passageSource(d corpusDoc, i int) []byte {
	p := d.Passages[i]
	raw, _ := json.Marshal(map[string]any{"doc_id": d.ID, "text": p.Text, "headings": p.Headings, "url": p.URL, "hash": p.Hash})
	raw = raw[:len(raw)-1]
	raw = append(raw, `,"vector":`...)
	raw = docfields.AppendVector(raw, p.Vector)
	return append(raw, '}')
}

// runLayouts builds both layouts of docs and measures them with queries.
func runLayouts(w io.Writer, n *node, docs []corpusDoc, queries [][]float32, dims int, indexType string, reps int) ([]layoutResult, error) {
	const k, candidates = 10, 100
	nested := layoutResult{name: "nested (doc_passages)"}
	sep := layoutResult{name: "passage index"}
	for _, d := range docs {
		nested.passages += len(d.Passages)
	}
	nested.docs, sep.docs, sep.passages = len(docs), len(docs), nested.passages

	// Nested.
	nIdx, dIdx, pIdx := "crawlspace-bench-nested", "crawlspace-bench-docs", "crawlspace-bench-passages"
	if err := createIndex(n, nIdx, docfields.MappingWith(nil, docfields.IndexOptions{Vectors: vectorsOpts(dims, indexType)})); err != nil {
		return nil, err
	}
	if err := createIndex(n, dIdx, docfields.MappingWith(nil, docfields.IndexOptions{})); err != nil {
		return nil, err
	}
	if err := createIndex(n, pIdx, passageIndexMapping(dims, indexType)); err != nil {
		return nil, err
	}
	defer func() {
		for _, i := range []string{nIdx, dIdx, pIdx} {
			_ = n.do("DELETE", "/"+i, nil, nil)
		}
	}()
	nestedDoc := func(d corpusDoc) []byte {
		doc := *d.Doc
		doc.Passages = d.Passages
		return doc.AppendJSON(nil)
	}
	var nb, db, pb []byte
	flush := func(index string, b *[]byte, took *time.Duration) error {
		if len(*b) == 0 {
			return nil
		}
		t, err := n.bulk(index, *b)
		*took += t
		*b = (*b)[:0]
		return err
	}
	for _, d := range docs {
		nb = appendAction(nb, "index", d.ID)
		nb = append(append(nb, nestedDoc(d)...), '\n')
		db = appendAction(db, "index", d.ID)
		db = append(append(db, d.Doc.AppendJSON(nil)...), '\n')
		for i := range d.Passages {
			pb = appendAction(pb, "index", d.ID+"-"+strconv.Itoa(i))
			pb = append(append(pb, passageSource(d, i)...), '\n')
		}
		if len(nb) > 4<<20 {
			if err := flush(nIdx, &nb, &nested.indexTook); err != nil {
				return nil, err
			}
		}
		if len(pb) > 4<<20 {
			if err := flush(pIdx, &pb, &sep.indexTook); err != nil {
				return nil, err
			}
			if err := flush(dIdx, &db, &sep.indexTook); err != nil {
				return nil, err
			}
		}
	}
	for _, f := range []struct {
		index string
		b     *[]byte
		took  *time.Duration
	}{{nIdx, &nb, &nested.indexTook}, {pIdx, &pb, &sep.indexTook}, {dIdx, &db, &sep.indexTook}} {
		if err := flush(f.index, f.b, f.took); err != nil {
			return nil, err
		}
	}
	var err error
	if nested.sizeBytes, err = n.storeBytes(nIdx); err != nil {
		return nil, err
	}
	ds, err := n.storeBytes(dIdx)
	if err != nil {
		return nil, err
	}
	ps, err := n.storeBytes(pIdx)
	if err != nil {
		return nil, err
	}
	sep.sizeBytes = ds + ps

	// Recall and latency: the first round warms the caches up and is not timed.
	var nLat, pLat, bareLat []time.Duration
	var nHits, pHits, total int
	for rep := 0; rep <= reps; rep++ {
		for _, q := range queries {
			// Documents alone, then documents with their best passage's
			// text and URL, as a search page shows them.
			start := time.Now()
			if _, _, err := n.search(nIdx, map[string]any{"size": k, "_source": false,
				"knn": map[string]any{"field": docfields.VectorField, "query_vector": q, "k": k, "num_candidates": candidates}}); err != nil {
				return nil, err
			}
			bareTook := time.Since(start)
			start = time.Now()
			hits, _, err := n.search(nIdx, map[string]any{"size": k, "_source": false,
				"knn": map[string]any{"field": docfields.VectorField, "query_vector": q, "k": k, "num_candidates": candidates,
					"inner_hits": map[string]any{"size": 1, "_source": false,
						"stored_fields": []string{docfields.PassagesField + ".text"}, "docvalue_fields": []string{docfields.PassagesField + ".url"}}}})
			if err != nil {
				return nil, err
			}
			nTook := time.Since(start)
			start = time.Now()
			phits, _, err := n.search(pIdx, map[string]any{"size": k, "_source": false,
				"knn": map[string]any{"field": "vector", "query_vector": q, "k": k, "num_candidates": candidates}})
			if err != nil {
				return nil, err
			}
			pTook := time.Since(start)
			if rep == 0 {
				exactP, exactD := exact(docs, q, k)
				for _, h := range hits {
					if exactD[h.ID] {
						nHits++
					}
				}
				for _, h := range phits {
					if exactP[h.ID] {
						pHits++
					}
				}
				total += k
				continue
			}
			nLat, pLat, bareLat = append(nLat, nTook), append(pLat, pTook), append(bareLat, bareTook)
		}
	}
	nested.recall, sep.recall = float64(nHits)/float64(total), float64(pHits)/float64(total)
	nested.p50, nested.p95 = percentile(nLat, 0.5), percentile(nLat, 0.95)
	bare := nested
	bare.name = "nested, documents only"
	bare.p50, bare.p95 = percentile(bareLat, 0.5), percentile(bareLat, 0.95)
	sep.p50, sep.p95 = percentile(pLat, 0.5), percentile(pLat, 0.95)

	// Deleting and updating 20 documents, one request each, as a crawl
	// does when pages go or change. In the passage index a document's
	// passages are deleted by id (a passage count kept with the
	// document): this build has no _delete_by_query.
	for i := 0; i < 20 && i < len(docs); i++ {
		d := docs[(i*7919)%len(docs)]
		b := appendAction(nil, "delete", d.ID)
		t, err := n.bulk(nIdx, b)
		if err != nil {
			return nil, err
		}
		nested.deleteTook += t
		nested.deleteBytes += len(b)
		nested.deleteActions++
		b = appendAction(nil, "delete", d.ID)
		for j := range d.Passages {
			b = appendAction(b, "delete", d.ID+"-"+strconv.Itoa(j))
		}
		t1, err := n.bulk(dIdx, b[:len(appendAction(nil, "delete", d.ID))])
		if err != nil {
			return nil, err
		}
		t2, err := n.bulk(pIdx, b[len(appendAction(nil, "delete", d.ID)):])
		if err != nil {
			return nil, err
		}
		sep.deleteTook += t1 + t2
		sep.deleteBytes += len(b)
		sep.deleteActions += 1 + len(d.Passages)

		// An update changing one passage: the nested document is sent
		// whole, with every vector; the passage index gets the document
		// and the one passage.
		b = appendAction(nil, "index", d.ID)
		b = append(append(b, nestedDoc(d)...), '\n')
		t, err = n.bulk(nIdx, b)
		if err != nil {
			return nil, err
		}
		nested.updateTook += t
		nested.updateBytes += len(b)
		b = appendAction(nil, "index", d.ID)
		b = append(append(b, d.Doc.AppendJSON(nil)...), '\n')
		t1, err = n.bulk(dIdx, b)
		if err != nil {
			return nil, err
		}
		pb := appendAction(nil, "index", d.ID+"-0")
		pb = append(append(pb, passageSource(d, 0)...), '\n')
		t2, err = n.bulk(pIdx, pb)
		if err != nil {
			return nil, err
		}
		sep.updateTook += t1 + t2
		sep.updateBytes += len(b) + len(pb)
	}
	nested.name += ", with the best passage"
	bare.deleteTook, bare.updateTook, bare.deleteActions, bare.updateBytes = nested.deleteTook, nested.updateTook, nested.deleteActions, nested.updateBytes
	results := []layoutResult{bare, nested, sep}
	fmt.Fprintf(w, "\n%d documents, %d passages, %d queries × %d, k %d of %d candidates, %s\n\n", nested.docs, nested.passages, len(queries), reps, k, candidates, indexType)
	fmt.Fprintln(w, "| layout | recall@10 against exact | latency p50 | p95 | index size | indexing (node's took) | delete 20 documents | their actions | update 20 documents (one passage changed) | bytes sent |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		fmt.Fprintf(w, "| %s | %.3f | %.1f ms | %.1f ms | %.1f MB | %.1f s | %d ms | %d | %d ms | %.0f KB |\n", r.name, r.recall,
			float64(r.p50.Microseconds())/1000, float64(r.p95.Microseconds())/1000, float64(r.sizeBytes)/1e6,
			r.indexTook.Seconds(), r.deleteTook.Milliseconds(), r.deleteActions, r.updateTook.Milliseconds(), float64(r.updateBytes)/1e3)
	}
	return results, nil
}
