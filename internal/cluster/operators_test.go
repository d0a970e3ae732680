package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

type fixedCaller string

func (c fixedCaller) GetCallerIdentity(context.Context, *sts.GetCallerIdentityInput, ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error) {
	return &sts.GetCallerIdentityOutput{Arn: aws.String(string(c))}, nil
}

// roles answers GetRole from its map (role name → ARN); nil refuses.
type roles map[string]string

func (r roles) GetRole(_ context.Context, in *iam.GetRoleInput, _ ...func(*iam.Options)) (*iam.GetRoleOutput, error) {
	if r == nil {
		return nil, errors.New("AccessDenied: iam:GetRole")
	}
	arn, ok := r[aws.ToString(in.RoleName)]
	if !ok {
		return nil, errors.New("NoSuchEntity")
	}
	return &iam.GetRoleOutput{Role: &iamtypes.Role{Arn: aws.String(arn)}}, nil
}

// motoCaller is the IAM user moto's GetCallerIdentity names.
const motoCaller = "arn:aws:iam::123456789012:user/moto"

const ssoRole = "arn:aws:iam::123456789012:role/aws-reserved/sso.amazonaws.com/eu-west-1/AWSReservedSSO_Admin_abc"

// The default operator is the role behind the caller's session (with its
// path, as aws:PrincipalArn has it), or the IAM user; never the session.
func TestDefaultOperator(t *testing.T) {
	for _, tc := range []struct {
		caller string
		iam    IAMAPI
		want   string
		err    string
	}{
		{"arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_Admin_abc/alice@example.com", roles{"AWSReservedSSO_Admin_abc": ssoRole}, ssoRole, ""},
		{"arn:aws:iam::123456789012:user/ops/bob", nil, "arn:aws:iam::123456789012:user/ops/bob", ""},
		{"arn:aws:iam::123456789012:root", nil, "arn:aws:iam::123456789012:root", ""},
		{"arn:aws:sts::123456789012:user/moto", nil, "arn:aws:iam::123456789012:user/moto", ""},
		{"arn:aws:sts::123456789012:assumed-role/Admin/alice", nil, "", "finding the role of arn:aws:sts::123456789012:assumed-role/Admin/alice: AccessDenied"},
		{"arn:aws:sts::123456789012:federated-user/carol", nil, "", "not an IAM role or user"},
	} {
		s := &Clients{STS: fixedCaller(tc.caller)}
		if tc.iam != nil {
			s.IAM = tc.iam
		} else {
			s.IAM = roles(nil)
		}
		core := spec.Core{}
		err := s.run().leases.resolveOperators(context.Background(), &core, nil)
		switch {
		case tc.err == "" && (err != nil || len(core.Operators) != 1 || core.Operators[0] != tc.want):
			t.Errorf("%s: operators %v, %v; want %s", tc.caller, core.Operators, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "--operators")):
			t.Errorf("%s: %v, want %q and a hint", tc.caller, err, tc.err)
		}
	}
	// Given, or deployed: kept.
	s := &Clients{STS: fixedCaller("arn:aws:iam::123456789012:user/x")}
	for _, tc := range []struct{ given, deployed, want []string }{
		{[]string{"arn:aws:iam::123456789012:role/a"}, []string{"arn:aws:iam::123456789012:role/b"}, []string{"arn:aws:iam::123456789012:role/a"}},
		{nil, []string{"arn:aws:iam::123456789012:role/b"}, []string{"arn:aws:iam::123456789012:role/b"}},
		{nil, nil, []string{"arn:aws:iam::123456789012:user/x"}},
	} {
		core := spec.Core{Operators: tc.given}
		if err := s.run().leases.resolveOperators(context.Background(), &core, tc.deployed); err != nil || strings.Join(core.Operators, ",") != strings.Join(tc.want, ",") {
			t.Errorf("given %v, deployed %v: %v, %v", tc.given, tc.deployed, core.Operators, err)
		}
	}
}

// Before anything is sent to the managers, the caller must be one of the
// core's operators; the refusal gives the command that adds it.
func TestCheckOperator(t *testing.T) {
	core := func(ops string, has bool) *stacks.Stack {
		st := &stacks.Stack{Name: "core", Parameters: map[string]string{}}
		if has {
			st.Parameters[names.ParamOperators] = ops
		}
		return st
	}
	session := "arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_Admin_abc/alice"
	for _, tc := range []struct {
		name   string
		caller string
		iam    IAMAPI
		core   *stacks.Stack
		want   string // "" when allowed
	}{
		{"a session of an operator's role", session, roles{"AWSReservedSSO_Admin_abc": ssoRole}, core(ssoRole, true), ""},
		{"an operator user", "arn:aws:iam::123456789012:user/bob", nil, core(ssoRole+",arn:aws:iam::123456789012:user/bob", true), ""},
		{"IAM not readable, the role's name matches", session, nil, core(ssoRole, true), ""},
		{"a core from before operators", "arn:aws:iam::123456789012:user/eve", nil, core("", false), ""},
		{"not an operator", "arn:aws:iam::123456789012:user/eve", nil, core(ssoRole, true),
			"you are not an operator of cluster core: clusterctl update-core core --operators " + ssoRole + ",arn:aws:iam::123456789012:user/eve (run by an operator or an administrator; you are arn:aws:iam::123456789012:user/eve)"},
		{"another role's session", "arn:aws:sts::123456789012:assumed-role/Dev/x", roles{"Dev": "arn:aws:iam::123456789012:role/teams/Dev"}, core(ssoRole, true),
			"clusterctl update-core core --operators " + ssoRole + ",arn:aws:iam::123456789012:role/teams/Dev "},
	} {
		s := &Clients{STS: fixedCaller(tc.caller), IAM: roles(nil)}
		if tc.iam != nil {
			s.IAM = tc.iam
		}
		err := s.run().leases.checkOperator(context.Background(), tc.core)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || errs.ExitCode(err) != 1 || !errors.Is(err, ErrRefused)):
			t.Errorf("%s: %v (exit %d), want %q, exit 1", tc.name, err, errs.ExitCode(err), tc.want)
		}
	}
}
