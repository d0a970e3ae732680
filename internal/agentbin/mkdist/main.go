// Command mkdist builds the node agents for every architecture from the
// module in the current directory (agentbin.Build: reproducible, stamped
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
	tmp, err := os.MkdirTemp("", "clusterctl-node-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	set := agentbin.Set{}
	for _, arch := range agentbin.Archs {
		b, err := agentbin.Build(context.Background(), "go", ".", tmp, arch, version)
		if err != nil {
			return err
		}
		set[arch] = b
		fmt.Printf("%s/%s: sha256 %s, %d bytes gzip-compressed\n", out, agentbin.FileName(arch), b.SHA256, len(b.Gzip()))
	}
	return agentbin.WriteCompressed(out, set)
}
