// Command mkdist builds the node agents for every architecture from the
// module in the current directory (agentbin.BuildAll: reproducible, stamped
// with -version) and writes them compressed, with their hashes, into the
// directory clusterctl embeds them from (`make build`).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/clusterctl/clusterctl/internal/agentbin"
)

func main() {
	version := flag.String("version", "", "the version stamped into the agents (main.version)")
	out := flag.String("o", "internal/agentbin/dist", "the directory written")
	flag.Parse()
	if err := run(*version, *out); err != nil {
		fmt.Fprintln(os.Stderr, "mkdist:", err)
		os.Exit(1)
	}
}

func run(version, out string) error {
	set, err := agentbin.BuildAll(context.Background(), "go", ".", version)
	if err != nil {
		return err
	}
	for _, b := range set.Sorted() {
		fmt.Printf("%s/%s: sha256 %s, %d bytes gzip-compressed\n", out, agentbin.FileName(b.Arch), b.SHA256, len(b.Gzip()))
	}
	return agentbin.WriteCompressed(out, set)
}
