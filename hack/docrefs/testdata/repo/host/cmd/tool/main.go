package main

import "flag"

func main() {
	fs := flag.NewFlagSet("tool", flag.ExitOnError)
	fs.String("plugin", "", "")
	var v bool
	fs.BoolVar(&v, "config", false, "")
}
