//go:build race

package pdftest

const raceEnabled = true
