package pdf

import (
	"bytes"
	"encoding/xml"
	"strings"
	"time"

	"github.com/crawlspace/crawlspace/document"
)

// PDFium gives the Info dictionary but not the catalog's XMP metadata
// stream. PDF/A requires that stream and keeps it uncompressed, and most
// producers that write one write it so: fillFromXMP reads the packet from
// the file's bytes and fills what Info left empty. A file may hold other
// packets (those of embedded images); the document's is the one naming a
// PDF producer or, failing that, the last.

var (
	xmpStart = []byte("<x:xmpmeta")
	xmpEnd   = []byte("</x:xmpmeta>")
)

// maxXMP bounds the packets looked at and the bytes of one.
const (
	maxXMPPackets = 64
	maxXMPBytes   = 1 << 20
)

// xmpPacket matches local names only: the rdf: and dc: namespaces are
// not in doubt where these names occur.
type xmpPacket struct {
	Descriptions []struct {
		Title       []string `xml:"title>Alt>li"`
		Creators    []string `xml:"creator>Seq>li"`
		Description []string `xml:"description>Alt>li"`
		Subjects    []string `xml:"subject>Bag>li"`
		Language    []string `xml:"language>Bag>li"`
		// Simple properties come as elements or as attributes.
		Keywords     string `xml:"Keywords"`
		KeywordsAttr string `xml:"Keywords,attr"`
		Modify       string `xml:"ModifyDate"`
		ModifyAttr   string `xml:"ModifyDate,attr"`
		Create       string `xml:"CreateDate"`
		CreateAttr   string `xml:"CreateDate,attr"`
	} `xml:"RDF>Description"`
}

func fillFromXMP(data []byte, c *document.Content) {
	var best []byte
	for n := 0; n < maxXMPPackets; n++ {
		i := bytes.Index(data, xmpStart)
		if i < 0 {
			break
		}
		j := bytes.Index(data[i:], xmpEnd)
		if j < 0 {
			break
		}
		p := data[i : i+j+len(xmpEnd)]
		data = data[i+j+len(xmpEnd):]
		if len(p) > maxXMPBytes {
			continue
		}
		if best == nil || !bytes.Contains(best, []byte("Producer")) {
			best = p
		}
	}
	if best == nil {
		return
	}
	var x xmpPacket
	if xml.Unmarshal(best, &x) != nil {
		return
	}
	for _, d := range x.Descriptions {
		if c.Title == "" && len(d.Title) > 0 {
			c.Title = clean(d.Title[0])
		}
		if len(c.Authors) == 0 {
			for _, a := range d.Creators {
				if a = clean(a); a != "" {
					c.Authors = append(c.Authors, a)
				}
			}
		}
		if c.Subject == "" && len(d.Description) > 0 {
			c.Subject = clean(d.Description[0])
		}
		if len(c.Keywords) == 0 {
			c.Keywords = split(clean(d.Keywords+","+d.KeywordsAttr), ",;")
			if len(c.Keywords) == 0 {
				for _, s := range d.Subjects {
					c.Keywords = append(c.Keywords, split(clean(s), ",;")...)
				}
			}
		}
		if c.Language == "" && len(d.Language) > 0 {
			c.Language = clean(d.Language[0])
		}
		if c.Modified.IsZero() {
			c.Modified = parseXMPDate(d.Modify + d.ModifyAttr)
		}
		if c.Created.IsZero() {
			c.Created = parseXMPDate(d.Create + d.CreateAttr)
		}
	}
}

// parseXMPDate reads an XMP date (ISO 8601, as precise as the writer
// chose); an unreadable one is the zero time.
func parseXMPDate(s string) time.Time {
	s = strings.TrimSpace(s)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04Z07:00", "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02", "2006-01", "2006"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t
		}
	}
	return time.Time{}
}
