// Command benchtool is bench/run's helper: everything the shell script
// should not do in shell.
//
//	benchtool mapping                      the index-creation body crawlspace uses (docfields.Mapping)
//	benchtool bulk -es URL -index I -file F   Elasticsearch's own _bulk rate for F's documents
//	benchtool condget -url BASE           the bare conditional-GET client: the re-crawl's physical limit
//	benchtool recheck -config F -url BASE  the same requests made by crawlspace's fetch layer, no store
//	benchtool memwatch -sid PID            peak anonymous memory of a session's largest process
//	benchtool proccpu PID                  CPU seconds a process has used so far
//	benchtool escpu -es URL                CPU seconds the Elasticsearch node has used so far
//	benchtool physical ALIAS               the physical index crawlspace creates behind ALIAS
//	benchtool get FILE KEY[.KEY...]        one value from a JSON file
//	benchtool record ...                   one run's measurements as a JSON line
//	benchtool table -in runs.jsonl ...     the Markdown results table
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/crawlspace/crawlspace/docfields"
)

var commands = map[string]func(args []string) error{
	"mapping":  runMapping,
	"bulk":     runBulk,
	"condget":  runCondGet,
	"recheck":  runRecheck,
	"memwatch": runMemWatch,
	"proccpu":  runProcCPU,
	"escpu":    runESCPU,
	"physical": runPhysical,
	"get":      runGet,
	"record":   runRecord,
	"table":    runTable,
}

func main() {
	if len(os.Args) < 2 || commands[os.Args[1]] == nil {
		names := make([]string, 0, len(commands))
		for n := range commands {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(os.Stderr, "usage: benchtool %v [flags]\n", names)
		os.Exit(2)
	}
	if err := commands[os.Args[1]](os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "benchtool %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func runPhysical(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: benchtool physical ALIAS")
	}
	fmt.Println(docfields.PhysicalIndex(args[0], nil))
	return nil
}

// runGet prints the value at a dotted key path of a JSON file: strings bare,
// anything else as JSON. A missing key prints nothing and fails.
func runGet(args []string) error {
	if len(args) != 2 {
		return errors.New("usage: benchtool get FILE KEY[.KEY...]")
	}
	raw, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	for _, k := range strings.Split(args[1], ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: no %s", args[0], args[1])
		}
		if v, ok = m[k]; !ok {
			return fmt.Errorf("%s: no %s", args[0], args[1])
		}
	}
	if s, ok := v.(string); ok {
		fmt.Println(s)
		return nil
	}
	return printJSON(v)
}
