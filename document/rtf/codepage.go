package rtf

import (
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
	"golang.org/x/text/transform"
)

// codePages are the Windows code pages RTF writers name in \ansicpg, with \mac's and \pc's.
var codePages = map[int]encoding.Encoding{
	437: charmap.CodePage437, 850: charmap.CodePage850, 852: charmap.CodePage852,
	855: charmap.CodePage855, 858: charmap.CodePage858, 860: charmap.CodePage860,
	862: charmap.CodePage862, 863: charmap.CodePage863, 865: charmap.CodePage865,
	866: charmap.CodePage866, 874: charmap.Windows874,
	932: japanese.ShiftJIS, 936: simplifiedchinese.GBK, 949: korean.EUCKR, 950: traditionalchinese.Big5,
	1250: charmap.Windows1250, 1251: charmap.Windows1251, 1252: charmap.Windows1252,
	1253: charmap.Windows1253, 1254: charmap.Windows1254, 1255: charmap.Windows1255,
	1256: charmap.Windows1256, 1257: charmap.Windows1257, 1258: charmap.Windows1258,
	10000: charmap.Macintosh, 10007: charmap.MacintoshCyrillic,
	20866: charmap.KOI8R, 21866: charmap.KOI8U,
	28591: charmap.ISO8859_1, 28592: charmap.ISO8859_2, 28595: charmap.ISO8859_5,
	28597: charmap.ISO8859_7, 28605: charmap.ISO8859_15,
}

// charsetCodePage maps a font's \fcharset to the code page its 8-bit text is in. ANSI (0),
// default (1) and symbol (2) fonts are left to the document's \ansicpg: writers put \fcharset0
// on every font of documents in other code pages too.
var charsetCodePage = map[int]int{
	77: 10000, 128: 932, 129: 949, 134: 936, 136: 950, 161: 1253, 162: 1254, 163: 1258,
	177: 1255, 178: 1256, 186: 1257, 204: 1251, 222: 874, 238: 1250, 255: 437,
}

// decode turns 8-bit text in a code page into UTF-8; an unknown code page reads as Windows-1252,
// RTF's default.
func decode(b []byte, cp int) string {
	out, err := encodingOf(cp).NewDecoder().Bytes(b)
	if err != nil {
		return string(b) // the text builder turns what is not UTF-8 into U+FFFD
	}
	return string(out)
}

// decodeSome decodes, as decode does, the longest start of b that ends on a character, and
// says how many bytes that was: the rest begins a double-byte character whose second byte is
// still to come.
func decodeSome(b []byte, cp int) (string, int) {
	// A byte becomes at most three bytes of UTF-8, two bytes at most four.
	out := make([]byte, 3*len(b))
	nOut, n, err := encodingOf(cp).NewDecoder().Transform(out, b, false)
	if err != nil && err != transform.ErrShortSrc {
		return string(b), len(b)
	}
	return string(out[:nOut]), n
}

func encodingOf(cp int) encoding.Encoding {
	if enc, ok := codePages[cp]; ok {
		return enc
	}
	return charmap.Windows1252
}

// lcid maps the Windows language identifiers of \deflang to language tags, for the languages
// documents are most often written in.
var lcid = map[int]string{
	1025: "ar-SA", 1026: "bg-BG", 1027: "ca-ES", 1028: "zh-TW", 1029: "cs-CZ", 1030: "da-DK",
	1031: "de-DE", 1032: "el-GR", 1033: "en-US", 1034: "es-ES", 1035: "fi-FI", 1036: "fr-FR",
	1037: "he-IL", 1038: "hu-HU", 1039: "is-IS", 1040: "it-IT", 1041: "ja-JP", 1042: "ko-KR",
	1043: "nl-NL", 1044: "nb-NO", 1045: "pl-PL", 1046: "pt-BR", 1048: "ro-RO", 1049: "ru-RU",
	1050: "hr-HR", 1051: "sk-SK", 1053: "sv-SE", 1055: "tr-TR", 1058: "uk-UA", 1060: "sl-SI",
	1061: "et-EE", 1062: "lv-LV", 1063: "lt-LT", 1066: "vi-VN", 2052: "zh-CN", 2055: "de-CH",
	2057: "en-GB", 2058: "es-MX", 2060: "fr-BE", 2070: "pt-PT", 3079: "de-AT", 3081: "en-AU",
	3084: "fr-CA", 4105: "en-CA", 5129: "en-NZ", 6153: "en-IE",
}
