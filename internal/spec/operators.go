package spec

import (
	"regexp"
	"slices"
	"strings"
)

// MaxOperators bounds the operators: each is in the queue's and the
// bucket's policies, and the list in one template parameter.
const MaxOperators = 20

// maxOperatorsParam is CloudFormation's bound on a parameter's value.
const maxOperatorsParam = 4096

// An operator is an IAM role or user, named by its ARN (a role's with its
// path: aws:PrincipalArn carries it), or the account's root user. A role
// stands for every session of it.
var (
	iamName     = `[A-Za-z0-9_+=,.@-]{1,64}`
	iamPath     = `(/[A-Za-z0-9_+=,.@-]+)*/`
	operatorRE  = regexp.MustCompile(`^arn:aws(-cn|-us-gov|-iso|-iso-b)?:iam::[0-9]{12}:(root|(role|user)` + iamPath + iamName + `)$`)
	stsRoleARN  = regexp.MustCompile(`^arn:aws[a-z-]*:sts::[0-9]{12}:assumed-role/`)
	operatorFmt = "expected an IAM role's or user's ARN, arn:aws:iam::ACCOUNT:role/[PATH/]NAME or arn:aws:iam::ACCOUNT:user/[PATH/]NAME (arn:aws:iam::ACCOUNT:root is the root user only)"
)

// CheckOperator checks one operator's ARN.
func CheckOperator(arn string) error {
	switch {
	case strings.ContainsAny(arn, "*?"):
		return invalid("operators", "invalid operator %q: no wildcards, each operator is one IAM role or user", arn)
	case stsRoleARN.MatchString(arn):
		return invalid("operators", "invalid operator %q: a session's ARN; give its role's, arn:aws:iam::ACCOUNT:role/[PATH/]NAME (a role stands for all its sessions)", arn)
	case !operatorRE.MatchString(arn):
		return invalid("operators", "invalid operator %q: %s", arn, operatorFmt)
	}
	return nil
}

// checkOperators checks the operators given. None given (nil) is left to
// be resolved: the core's deployed operators, or the principal that
// creates it. A list given empty is refused: nobody could steer the swarm.
func checkOperators(path string, ops []string) error {
	if ops == nil {
		return nil
	}
	if len(ops) == 0 || slices.Equal(ops, []string{""}) {
		return invalid(path, "no operator given: at least one IAM role or user must be able to act on the swarm")
	}
	if len(ops) > MaxOperators {
		return invalid(path, "%d operators given, at most %d", len(ops), MaxOperators)
	}
	for i, op := range ops {
		if err := CheckOperator(op); err != nil {
			return err
		}
		if slices.Contains(ops[:i], op) {
			return invalid(path, "operator %q is listed twice", op)
		}
	}
	if n := len(strings.Join(ops, ",")); n > maxOperatorsParam {
		return invalid(path, "the operators take %d characters, over the %d a template parameter holds", n, maxOperatorsParam)
	}
	return nil
}
