package node

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/big"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
)

var tokenRE = regexp.MustCompile(`^SWMTKN-(1|2-[01])-[0-9a-z]{50}-[0-9a-z]{25}$`)

// ValidToken tells whether t has the shape of a swarm join token.
func ValidToken(t string) bool { return tokenRE.MatchString(t) }

// TokenCADigest is the SHA-256 digest (hex) of the swarm's CA certificate
// that a join token carries: SWMTKN-1-<digest in base 36>-<secret>, or
// SWMTKN-2-<fips>-<digest>-<secret>.
func TokenCADigest(token string) (string, error) {
	if !ValidToken(token) {
		return "", fmt.Errorf("malformed swarm join token")
	}
	p := strings.Split(token, "-")
	if p[1] == "2" {
		p = append(p[:2], p[3:]...)
	}
	n, ok := new(big.Int).SetString(p[2], 36)
	if !ok {
		return "", fmt.Errorf("malformed swarm join token")
	}
	return fmt.Sprintf("%064x", n), nil
}

// CAMatchesToken tells whether ca (PEM) is the certificate whose digest
// token carries, so that a token and a certificate of different swarms are
// never used together (Docker checks the same digest when it joins).
func CAMatchesToken(token, ca string) bool {
	want, err := TokenCADigest(token)
	return err == nil && want == Digest([]byte(ca))
}

// Digest is the SHA-256 (hex) of b.
func Digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// ValidIPv4 tells whether s is a dotted IPv4 address.
func ValidIPv4(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is4() && a.String() == s
}

// ValidManager tells whether s is ip:port of a manager.
func ValidManager(s string) bool {
	host, port, ok := strings.Cut(s, ":")
	n, err := strconv.Atoi(port)
	return ok && ValidIPv4(host) && err == nil && n > 0 && n < 65536 && strconv.Itoa(n) == port
}

// host is the address of ip:port.
func host(addr string) string {
	if i := strings.LastIndexByte(addr, ':'); i >= 0 {
		return addr[:i]
	}
	return addr
}

var nodeIDRE = regexp.MustCompile(`^[a-z0-9]{25}$`)

// ValidNodeID tells whether id has the shape of a swarm node id.
func ValidNodeID(id string) bool { return nodeIDRE.MatchString(id) }
