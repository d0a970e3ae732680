package render

import (
	"path"
	"strings"
	"testing"
)

// The IAM policy evaluator of these tests: moto enforces no policy, so a
// policy decision is tested by evaluating the rendered document as IAM
// would, for one request. A resource policy (the bucket's, the queue's)
// is read for its explicit denies; an identity policy (a node role's) for
// whether it allows the request and none of its statements denies it. An
// element, value, condition operator or key the evaluator cannot read
// fails the test rather than be skipped, so that a new statement gets
// evaluated rather than ignored.

// request is one request as IAM evaluates it: its action, its resource
// and its condition keys.
type request struct {
	action, resource string
	ctx              map[string]string
}

// policy is the statements of one policy, with how their Resource values
// resolve, and whether it is a resource policy (each statement names its
// principals) or an identity policy (none does).
type policy struct {
	statements []map[string]any
	resources  func(t *testing.T, v any) []string
	ofResource bool
}

// resourcePolicy is a resource policy of the template: its Resource values
// resolve as any other of its values (strs).
func resourcePolicy(statements []any) policy {
	p := policy{resources: strs, ofResource: true}
	for _, s := range statements {
		p.statements = append(p.statements, obj(s))
	}
	return p
}

// read fails the test unless st has only the elements the evaluator
// reads: no Not* element; a principal in a resource policy only, and
// there only every principal ("*": a statement of some principals is
// theirs to evaluate).
func (p policy) read(t *testing.T, st map[string]any) {
	t.Helper()
	for _, k := range []string{"NotAction", "NotResource", "NotPrincipal"} {
		if st[k] != nil {
			t.Fatalf("statement %v: %s not evaluated", st["Sid"], k)
		}
	}
	if p.ofResource && st["Principal"] != "*" || !p.ofResource && st["Principal"] != nil {
		t.Fatalf("statement %v: principal %v not evaluated", st["Sid"], st["Principal"])
	}
}

// applies tells whether st is of the request: its action, its resource
// and its condition.
func (p policy) applies(t *testing.T, st map[string]any, r request) bool {
	t.Helper()
	return anyMatch(strs(t, st["Action"]), r.action) && anyMatch(p.resources(t, st["Resource"]), r.resource) &&
		conditionHolds(t, obj(st["Condition"]), r.ctx)
}

// denies tells whether a statement of the policy explicitly denies r.
func (p policy) denies(t *testing.T, r request) bool {
	t.Helper()
	for _, st := range p.statements {
		if st["Effect"] != "Deny" {
			continue
		}
		p.read(t, st)
		if p.applies(t, st, r) {
			return true
		}
	}
	return false
}

// allows tells whether a statement of the policy allows r and none
// denies it (an explicit deny wins).
func (p policy) allows(t *testing.T, r request) bool {
	t.Helper()
	allowed := false
	for _, st := range p.statements {
		p.read(t, st)
		if !p.applies(t, st, r) {
			continue
		}
		switch st["Effect"] {
		case "Deny":
			return false
		case "Allow":
			allowed = true
		default:
			t.Fatalf("statement %v: effect %v", st["Sid"], st["Effect"])
		}
	}
	return allowed
}

// anyMatch tells whether one of the patterns (with * and ? wildcards, as
// IAM's) matches s.
func anyMatch(patterns []string, s string) bool {
	for _, p := range patterns {
		// path.Match's * stops at a slash, IAM's does not: match with the
		// slashes out of the way.
		if ok, _ := path.Match(strings.ReplaceAll(p, "/", "\x00"), strings.ReplaceAll(s, "/", "\x00")); ok {
			return true
		}
	}
	return false
}

// evaluatedKeys are the condition keys the evaluator knows; a request
// may lack some (a service principal has no aws:PrincipalArn, a user no
// aws:SourceArn).
var evaluatedKeys = map[string]bool{"aws:PrincipalArn": true, "aws:SecureTransport": true, "aws:SourceArn": true, "cloudwatch:namespace": true}

// conditionHolds evaluates a condition block: every operator holds, each
// when the context's value matches one of its values (all keys single
// valued).
func conditionHolds(t *testing.T, cond map[string]any, ctx map[string]string) bool {
	t.Helper()
	for op, block := range cond {
		for key, want := range obj(block) {
			got, ok := ctx[key]
			if !evaluatedKeys[key] {
				t.Fatalf("condition key %s not evaluated", key)
			}
			if !ok {
				// IAM: a key absent from the request matches no value; a
				// negated operator then holds.
				if !strings.Contains(op, "Not") {
					return false
				}
				continue
			}
			match := false
			for _, w := range strs(t, want) {
				switch op {
				case "ArnEquals", "ArnNotEquals", "Bool", "StringEquals", "StringNotEquals":
					match = match || w == got
				case "ArnLike", "ArnNotLike", "StringLike", "StringNotLike":
					match = match || anyMatch([]string{w}, got)
				default:
					t.Fatalf("condition operator %s not evaluated", op)
				}
			}
			if strings.Contains(op, "Not") {
				match = !match
			}
			if !match {
				return false
			}
		}
	}
	return true
}
