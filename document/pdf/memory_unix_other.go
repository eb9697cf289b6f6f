//go:build unix && !linux

package pdf

const mapNoReserve = 0
