package charset

import (
	"testing"

	"github.com/saintfish/chardet"
)

func TestCharsetGuessTiesGoToLatin1ThenToTheFirstNameWhateverTheOrder(t *testing.T) {
	r := func(cs string, conf int) chardet.Result { return chardet.Result{Charset: cs, Confidence: conf} }
	cases := []struct {
		all  []chardet.Result
		want string
	}{
		{[]chardet.Result{r("windows-1254", 40), r("ISO-8859-1", 40), r("ISO-8859-9", 40)}, "ISO-8859-1"},
		{[]chardet.Result{r("ISO-8859-1", 40), r("windows-1254", 40)}, "ISO-8859-1"},
		{[]chardet.Result{r("ISO-8859-9", 40), r("ISO-8859-2", 40)}, "ISO-8859-2"},
		{[]chardet.Result{r("Shift_JIS", 90), r("ISO-8859-1", 40)}, "Shift_JIS"},
		{[]chardet.Result{r("windows-1254", 50), r("ISO-8859-1", 40)}, "windows-1254"},
	}
	for _, c := range cases {
		if got := bestGuess(c.all).Charset; got != c.want {
			t.Errorf("bestGuess(%v) = %s, want %s", c.all, got, c.want)
		}
	}
}
