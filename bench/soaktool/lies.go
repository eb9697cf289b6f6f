package main

import (
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"

	"github.com/crawlspace/crawlspace/internal/hostile"
)

// lieTitle is the title of the lying pages in a Latin script; lieJapanese that of the
// Japanese one.
const (
	lieTitle    = "Déjà vu à l'école"
	lieJapanese = "日本語のページ"
)

// lies are pages whose Content-Type charset or Content-Encoding the bytes contradict, with the
// title each must be indexed with once read as what its bytes are, and pages that must not be
// indexed at all (an encoding that is not what it says).
func lies() map[string]lie {
	html := func(title, text string) string {
		return "<!doctype html><html><head><title>" + title + "</title></head><body><p>" + text + "</p></body></html>"
	}
	french := html(lieTitle, lieTitle+". Les élèves sont allés à la forêt, où ils ont vu des cerfs. Ça va très bien, merci.")
	latin1, _ := charmap.Windows1252.NewEncoder().String(french)
	sjis, _ := japanese.ShiftJIS.NewEncoder().String(html(lieJapanese, "これは日本語のテキストです。東京都の天気は晴れです。明日も晴れるでしょう。"))
	page := func(contentType, encoding string, body []byte, title string) lie {
		return lie{Lie: &hostile.Lie{ContentType: contentType, ContentEncoding: encoding, Body: body}, title: title}
	}
	return map[string]lie{
		"/utf8-says-utf16.html":        page("text/html; charset=utf-16", "", []byte(french), lieTitle),
		"/utf16.html":                  page("text/html; charset=utf-16", "", hostile.UTF16(french, false, false), lieTitle),
		"/utf16be-says-utf16le.html":   page("text/html; charset=utf-16le", "", hostile.UTF16(french, true, false), lieTitle),
		"/bom-says-utf16be.html":       page("text/html; charset=iso-8859-1", "", hostile.UTF16(french, true, true), lieTitle),
		"/bom-says-windows1252.html":   page("text/html; charset=windows-1252", "", append([]byte("\xef\xbb\xbf"), french...), lieTitle),
		"/latin1-says-utf8.html":       page("text/html; charset=utf-8", "", []byte(latin1), lieTitle),
		"/shiftjis-says-euc-jp.html":   page("text/html; charset=euc-jp", "", []byte(sjis), lieJapanese),
		"/plain-says-gzip.html":        page("text/html", "gzip", []byte(french), ""),
		"/binary-says-brotli.html":     page("text/html", "br", []byte("\x1b\x03\x00\x00"), ""),
		"/latin1-no-charset.html":      page("text/html", "", []byte(latin1), lieTitle),
		"/utf16le-bom-undeclared.html": page("text/html", "", hostile.UTF16(french, false, true), lieTitle),
	}
}
