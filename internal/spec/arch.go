package spec

import (
	"regexp"
	"strings"
)

// Processor architectures, as EC2 names them.
const (
	ArchX86 = "x86_64"
	ArchARM = "arm64"
)

var familyRE = regexp.MustCompile(`^([a-z]+)([0-9]+)([a-z-]*)$`)

// Architecture is the architecture of an instance type as its family's
// name tells it, for what must work offline (validation, render): arm64
// for Graviton families (a1 and every family whose attributes after the
// generation contain "g": m7g, c7gn, r8g, t4g, x2gd, im4gn, is4gen,
// g5g...), x86_64 otherwise. When deploying, what EC2 says of the type
// wins.
func Architecture(instanceType string) string {
	family, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(instanceType)), ".")
	if family == "a1" {
		return ArchARM
	}
	// family = prefix letters, generation, attributes (g4dn: g, 4, dn).
	// The prefix "g" means GPU, not Graviton, so only the attributes count.
	if m := familyRE.FindStringSubmatch(family); m != nil && strings.Contains(m[3], "g") {
		return ArchARM
	}
	return ArchX86
}

// OddArchitecture finds, among instance types that must share one
// architecture, those that do not: common is the architecture most of
// them have (on a tie, the earliest type's), odd the types of any other,
// in order; none when all share one. arch maps a type to its
// architecture: the offline guess, or what EC2 says.
func OddArchitecture(types []string, arch func(string) string) (odd []string, common string) {
	count := map[string]int{}
	for _, t := range types {
		count[arch(t)]++
	}
	for _, t := range types {
		if a := arch(t); common == "" || count[a] > count[common] {
			common = a
		}
	}
	for _, t := range types {
		if arch(t) != common {
			odd = append(odd, t)
		}
	}
	return odd, common
}
