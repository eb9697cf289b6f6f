package xmlguard

import (
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
)

var errLong = errors.New("token too long")

// tokens decodes s through a Reader that allows max bytes a token, and is
// the lengths of the character data it gave, with the error that ended it.
func tokens(s string, max int64) ([]int, error) {
	g := New(strings.NewReader(s), max, errLong)
	d := xml.NewDecoder(g)
	var text []int
	for {
		g.Mark()
		t, err := d.Token()
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return text, err
		}
		if c, ok := t.(xml.CharData); ok {
			text = append(text, len(c))
		}
	}
}

func TestTokensWithinTheBoundPassHoweverLongTheStream(t *testing.T) {
	const max = 64 << 10
	run := "<p>" + strings.Repeat("a", max) + "</p>"
	text, err := tokens("<doc>"+strings.Repeat(run, 50)+"</doc>", max)
	if err != nil || len(text) != 50 {
		t.Fatalf("%d runs of %d bytes, then %v; want 50 and no error", len(text), max, err)
	}
}

func TestALongTextRunOrTagFailsWithTheErrorGiven(t *testing.T) {
	const max = 64 << 10
	long := strings.Repeat("a", max+2*4096)
	for _, doc := range []string{
		"<doc><p>short</p><p>" + long + "</p></doc>",
		`<doc><p>short</p><p x="` + long + `">text</p></doc>`,
		"<doc><p>short</p><!--" + long + "--></doc>",
	} {
		text, err := tokens(doc, max)
		if !errors.Is(err, errLong) {
			t.Errorf("%.30q…: %v, want the guard's error", doc, err)
		}
		// The decoder gives what it read of a long text run before the
		// error: no more than the bound and twice the buffer.
		if len(text) < 1 || text[0] != 5 || len(text) > 2 || len(text) == 2 && text[1] > max+8192 {
			t.Errorf("%.30q…: text runs %v, want the short one and at most %d bytes of the long one", doc, text, max+8192)
		}
	}
}
