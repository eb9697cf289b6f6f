package main

import (
	"fmt"
	"os"
)

func init() {
	register("validate", "check a configuration file", runValidate)
}

func runValidate(args []string) int {
	fs := newFlags("validate")
	path := fs.String("config", "", "configuration file")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	cfg, _, ok := loadConfig(*path, os.Stderr)
	if !ok {
		return exitUsage
	}
	fmt.Printf("%s: ok, %d source(s)\n", cfg.File, len(cfg.Sources))
	return exitOK
}
