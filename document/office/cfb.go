package office

import (
	"bytes"
	"unicode/utf16"
)

var cfbMagic = []byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}

func isCFB(data []byte) bool { return bytes.HasPrefix(data, cfbMagic) }

// cfbEncryptedPackage says a compound file holds the EncryptionInfo and
// EncryptedPackage streams of a password-protected OOXML package (MS-OFFCRYPTO).
// Directory entries are 128 bytes long, start with the UTF-16LE name and lie
// on 128-byte boundaries of the file (sectors are 512 or 4096 bytes after a
// 512-byte header, or 4096 with the header padded), so looking for the
// names there is enough without following the FAT chains.
func cfbEncryptedPackage(data []byte) bool {
	return cfbHasEntry(data, "EncryptedPackage") && cfbHasEntry(data, "EncryptionInfo")
}

func cfbHasEntry(data []byte, name string) bool {
	u := utf16.Encode([]rune(name))
	want := make([]byte, 0, 2*len(u)+2)
	for _, c := range u {
		want = append(want, byte(c), byte(c>>8))
	}
	want = append(want, 0, 0)
	for off := 512; off+128 <= len(data); off += 128 {
		if bytes.HasPrefix(data[off:], want) {
			// The name length field at 0x40 counts the terminator.
			if l := int(data[off+0x40]) | int(data[off+0x41])<<8; l == len(want) {
				return true
			}
		}
	}
	return false
}
