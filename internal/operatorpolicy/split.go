package operatorpolicy

import "encoding/json"

// ManagedPolicyMax is IAM's bound on the size of a customer managed
// policy: its characters, whitespace not counted. The inline policies of
// a role may hold InlineRolePolicyMax together.
const (
	ManagedPolicyMax    = 6144
	InlineRolePolicyMax = 10240
)

// Size is the size of d as IAM counts it: its JSON without whitespace
// (none of the policy's strings holds any).
func Size(d Document) int {
	b, err := json.Marshal(d)
	if err != nil {
		return 0 // a Document always encodes
	}
	return len(b)
}

// Split divides d into documents of at most max characters each, its
// statements in order, so that each can be a managed policy of its own;
// a statement larger than max on its own is a document on its own.
func Split(d Document, max int) []Document {
	var parts []Document
	cur := Document{Version: d.Version}
	for _, st := range d.Statement {
		next := cur
		next.Statement = append(append([]Statement(nil), cur.Statement...), st)
		if len(cur.Statement) > 0 && Size(next) > max {
			parts = append(parts, cur)
			next = Document{Version: d.Version, Statement: []Statement{st}}
		}
		cur = next
	}
	if len(cur.Statement) > 0 || len(parts) == 0 {
		parts = append(parts, cur)
	}
	return parts
}
