package rules

import (
	"mime"
	"strings"
)

// DefaultIgnoredExtensions is Smartsite's hard-coded default list, what
// "default" stands for in ignored_extensions.
var DefaultIgnoredExtensions = []string{
	"7z", "asf", "avi", "bat", "bmp", "cmd", "com", "cpl", "css", "dll", "eot", "exe", "flv", "gif",
	"hta", "ico", "inf", "iso", "jar", "jpeg", "jpg", "js", "json", "mp3", "mp4", "mpeg", "mpg", "msi",
	"msp", "ogg", "pif", "png", "ps1", "qt", "rar", "reg", "scr", "svg", "tiff", "ttf", "vb", "vbe",
	"vbs", "vob", "wav", "wmv", "woff", "woff2", "xml", "zip",
}

// extensionTypes associates extensions with the MIME types servers send for
// them, so an extensionless URL answering video/mp4 is skipped when mp4 is
// ignored (Smartsite's extension-MIME association). It is built in, not read
// from the system's mime.types, so the decision is the same on every machine;
// extensions it lacks fall back to Go's mime package.
var extensionTypes = map[string][]string{
	"7z":    {"application/x-7z-compressed"},
	"asf":   {"video/x-ms-asf", "application/vnd.ms-asf"},
	"avi":   {"video/x-msvideo", "video/avi", "video/msvideo"},
	"bat":   {"application/x-bat", "application/x-msdos-program"},
	"bmp":   {"image/bmp", "image/x-bmp", "image/x-ms-bmp"},
	"cmd":   {"application/x-cmd"},
	"com":   {"application/x-msdos-program"},
	"cpl":   {"application/cpl+xml"},
	"css":   {"text/css"},
	"dll":   {"application/x-msdownload", "application/x-msdos-program"},
	"eot":   {"application/vnd.ms-fontobject"},
	"exe":   {"application/x-msdownload", "application/x-msdos-program", "application/x-dosexec", "application/vnd.microsoft.portable-executable"},
	"flv":   {"video/x-flv"},
	"gif":   {"image/gif"},
	"hta":   {"application/hta"},
	"ico":   {"image/x-icon", "image/vnd.microsoft.icon"},
	"inf":   {"application/x-setupscript"},
	"iso":   {"application/x-iso9660-image"},
	"jar":   {"application/java-archive", "application/x-java-archive"},
	"jpeg":  {"image/jpeg", "image/pjpeg"},
	"jpg":   {"image/jpeg", "image/pjpeg"},
	"js":    {"text/javascript", "application/javascript", "application/x-javascript", "application/ecmascript"},
	"json":  {"application/json"},
	"mp3":   {"audio/mpeg", "audio/mp3"},
	"mp4":   {"video/mp4", "audio/mp4", "application/mp4"},
	"mpeg":  {"video/mpeg"},
	"mpg":   {"video/mpeg"},
	"msi":   {"application/x-msi", "application/x-ms-installer"},
	"msp":   {"application/x-ms-patch"},
	"ogg":   {"audio/ogg", "video/ogg", "application/ogg"},
	"png":   {"image/png"},
	"ps1":   {"application/x-powershell"},
	"qt":    {"video/quicktime"},
	"rar":   {"application/vnd.rar", "application/x-rar-compressed"},
	"scr":   {"application/x-msdownload"},
	"svg":   {"image/svg+xml"},
	"tiff":  {"image/tiff"},
	"tif":   {"image/tiff"},
	"ttf":   {"font/ttf", "application/x-font-ttf"},
	"vbs":   {"text/vbscript", "application/x-vbscript"},
	"vb":    {"text/vbscript"},
	"vob":   {"video/dvd", "video/x-ms-vob"},
	"wav":   {"audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave"},
	"wmv":   {"video/x-ms-wmv"},
	"woff":  {"font/woff", "application/font-woff"},
	"woff2": {"font/woff2"},
	"xml":   {"application/xml", "text/xml"},
	"zip":   {"application/zip", "application/x-zip-compressed"},
	"pdf":   {"application/pdf"},
	"doc":   {"application/msword"},
	"docx":  {"application/vnd.openxmlformats-officedocument.wordprocessingml.document"},
	"xls":   {"application/vnd.ms-excel"},
	"xlsx":  {"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
	"ppt":   {"application/vnd.ms-powerpoint"},
	"pptx":  {"application/vnd.openxmlformats-officedocument.presentationml.presentation"},
	"txt":   {"text/plain"},
	"csv":   {"text/csv"},
	"rss":   {"application/rss+xml"},
	"atom":  {"application/atom+xml"},
	"gz":    {"application/gzip", "application/x-gzip"},
	"tar":   {"application/x-tar"},
	"webp":  {"image/webp"},
	"webm":  {"video/webm"},
	"avif":  {"image/avif"},
	"mov":   {"video/quicktime"},
	"m4a":   {"audio/mp4", "audio/x-m4a"},
	"flac":  {"audio/flac"},
	"wasm":  {"application/wasm"},
	"apk":   {"application/vnd.android.package-archive"},
	"dmg":   {"application/x-apple-diskimage"},
	"html":  {"text/html"},
	"htm":   {"text/html"},
}

// typesOf returns the MIME types associated with ext (lower-case, no dot).
func typesOf(ext string) []string {
	if t, ok := extensionTypes[ext]; ok {
		return t
	}
	if t := mime.TypeByExtension("." + ext); t != "" {
		mt, _, _ := strings.Cut(t, ";")
		return []string{strings.ToLower(strings.TrimSpace(mt))}
	}
	return nil
}

// normExtension lower-cases an extension and strips its leading dot.
func normExtension(e string) string {
	return strings.ToLower(strings.TrimPrefix(strings.TrimSpace(e), "."))
}

// urlExtension returns the extension of the last path segment ("" when it
// has none), ignoring ";params" as in "/a.mp4;jsessionid=1".
func urlExtension(path string) string {
	seg := path[strings.LastIndexByte(path, '/')+1:]
	if i := strings.IndexByte(seg, ';'); i >= 0 {
		seg = seg[:i]
	}
	i := strings.LastIndexByte(seg, '.')
	if i < 0 {
		return ""
	}
	return seg[i+1:]
}
