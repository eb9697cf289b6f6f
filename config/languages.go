package config

// DetectableLanguages are the ISO 639-1 codes language detection can give
// (mapping's detector, whatlanggo, knows 84 languages; these are those
// with a two-letter code). extraction.languages chooses among them; a test
// in mapping keeps the list equal to the detector's.
var DetectableLanguages = []string{
	"af", "ak", "am", "ar", "az", "be", "bg", "bh", "bn", "cs", "da", "de", "el", "en", "eo", "es",
	"et", "fi", "fr", "gu", "ha", "he", "hi", "hr", "ht", "hu", "id", "ig", "it", "ja", "jv", "ka",
	"km", "kn", "ko", "ku", "lt", "lv", "mg", "mk", "ml", "mr", "my", "nb", "ne", "nl", "nn", "ny",
	"om", "or", "pa", "pl", "pt", "rn", "ro", "ru", "rw", "si", "sl", "sn", "so", "sr", "sv", "ta",
	"te", "th", "ti", "tk", "tl", "tr", "ug", "uk", "ur", "uz", "vi", "yo", "zh", "zu",
}
