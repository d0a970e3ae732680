package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// IAMAPI reads a role: the ARN of an assumed role's session lacks the
// role's path, which aws:PrincipalArn (and so the core's policies) has.
type IAMAPI interface {
	GetRole(ctx context.Context, in *iam.GetRoleInput, opts ...func(*iam.Options)) (*iam.GetRoleOutput, error)
}

// callerARN is an STS caller identity's ARN taken apart.
type callerARN struct {
	partition, service, account, resource string
}

func parseCaller(arn string) (callerARN, bool) {
	p := strings.SplitN(arn, ":", 6)
	if len(p) != 6 || p[0] != "arn" || p[3] != "" {
		return callerARN{}, false
	}
	return callerARN{partition: p[1], service: p[2], account: p[4], resource: p[5]}, true
}

func (c callerARN) iam(resource string) string {
	return "arn:" + c.partition + ":iam::" + c.account + ":" + resource
}

// errNotIAM: the caller is no IAM role or user (a federated user), so it
// cannot be an operator by default.
var errNotIAM = errors.New("not an IAM role or user")

// principalOf is the principal the caller's requests carry as
// aws:PrincipalArn: an assumed role's session is its role (with its path,
// read from IAM), an IAM user or the root user itself. roleGuess is the
// role's ARN without its path when IAM could not be asked.
func principalOf(ctx context.Context, api IAMAPI, caller string) (principal, roleGuess string, err error) {
	c, ok := parseCaller(caller)
	if !ok {
		return "", "", fmt.Errorf("caller %q: %w", caller, errNotIAM)
	}
	switch {
	case c.service == "iam" && (c.resource == "root" || strings.HasPrefix(c.resource, "user/")):
		return caller, "", nil
	case c.service == "sts" && strings.HasPrefix(c.resource, "user/"):
		// moto's form of an IAM user's identity.
		return c.iam(c.resource), "", nil
	case c.service == "sts" && strings.HasPrefix(c.resource, "assumed-role/"):
		role, _, _ := strings.Cut(strings.TrimPrefix(c.resource, "assumed-role/"), "/")
		guess := c.iam("role/" + role)
		if api == nil {
			return "", guess, fmt.Errorf("finding the role of %s: no IAM client", caller)
		}
		out, err := api.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(role)})
		if err != nil {
			return "", guess, fmt.Errorf("finding the role of %s: %w", caller, err)
		}
		if out.Role == nil || aws.ToString(out.Role.Arn) == "" {
			return "", guess, fmt.Errorf("finding the role of %s: IAM named no ARN", caller)
		}
		return aws.ToString(out.Role.Arn), "", nil
	}
	return "", "", fmt.Errorf("caller %s: %w", caller, errNotIAM)
}

// resolveOperators fills in the operators left unset: the deployed
// core's (nil when creating), else the role or user running clusterctl.
// Without an STS client (tests) there is no caller to take: they stay
// unset, and the core has no operator but its managers.
func (s *Leases) resolveOperators(ctx context.Context, core *spec.Core, deployed []string) error {
	if core.Operators != nil {
		return nil
	}
	if deployed != nil {
		core.Operators = slices.Clone(deployed)
		return nil
	}
	caller, err := s.caller(ctx)
	if err != nil || caller == "" {
		return err
	}
	p, _, err := principalOf(ctx, s.IAM, caller)
	if err == nil {
		err = spec.CheckOperator(p)
	}
	if err != nil {
		return refusedFor(err, "the default operator, the role or user running clusterctl: %v; name the operators with --operators ARN,...", err)
	}
	core.Operators = []string{p}
	return nil
}

// checkOperator refuses, before a request is sent to the managers' queue
// or a command run through the bucket's commands/, a caller the core does
// not list as an operator: the queue and the bucket would refuse it
// anyway, with less to go on. A core deployed before operators lists none
// and checks nobody.
func (s *Leases) checkOperator(ctx context.Context, core *stacks.Stack) error {
	raw, ok := core.Parameters[names.ParamOperators]
	if !ok {
		return nil
	}
	ops := spec.SplitList(raw)
	caller, err := s.caller(ctx)
	if err != nil || caller == "" {
		return err
	}
	p, guess, err := principalOf(ctx, s.IAM, caller)
	switch {
	case err == nil && slices.Contains(ops, p):
		return nil
	case err != nil && guess != "" && slices.ContainsFunc(ops, func(op string) bool { return sameRole(op, guess) }):
		// IAM could not be asked for the role's path: the name and
		// account match, and the policies decide.
		return nil
	case err != nil && guess == "":
		return refusedFor(err, "you are not an operator of cluster %s: %v; its operators are IAM roles and users (%s)", core.Name, err, strings.Join(ops, ", "))
	}
	if p == "" {
		p = guess
	}
	return refused("you are not an operator of cluster %s: clusterctl update-core %s --operators %s (run by an operator or an administrator; you are %s)",
		core.Name, core.Name, strings.Join(append(slices.Clone(ops), p), ","), p)
}

// sameRole says whether operator is the role guess names, path aside.
func sameRole(operator, guess string) bool {
	i, j := strings.Index(operator, ":role/"), strings.Index(guess, ":role/")
	if i < 0 || j < 0 || operator[:i] != guess[:j] {
		return false
	}
	name := operator[strings.LastIndex(operator, "/")+1:]
	return name == guess[j+len(":role/"):]
}
