//go:build !race

package pdftest

const raceEnabled = false
