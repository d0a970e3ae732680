package preflight

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// SNSAPI checks the topic the alarms notify.
type SNSAPI interface {
	GetTopicAttributes(ctx context.Context, in *sns.GetTopicAttributesInput, opts ...func(*sns.Options)) (*sns.GetTopicAttributesOutput, error)
}

// SecretsManagerAPI checks a secret declared as a source.
type SecretsManagerAPI interface {
	DescribeSecret(ctx context.Context, in *secretsmanager.DescribeSecretInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.DescribeSecretOutput, error)
}

// ParametersAPI checks a parameter declared as a source. DescribeParameters
// answers with a parameter's name and type, never its value (GetParameter
// without decryption would still return a String parameter's value).
type ParametersAPI interface {
	DescribeParameters(ctx context.Context, in *ssm.DescribeParametersInput, opts ...func(*ssm.Options)) (*ssm.DescribeParametersOutput, error)
}

// Sources checks what a core's settings point at outside the stack: the
// SNS topic its alarms notify and the sources of its secrets. A mistake
// there would otherwise show only later (an alarm notifying nothing, a
// secret's problem in `secrets`), after the update was applied.
type Sources struct {
	SNS            SNSAPI
	SecretsManager SecretsManagerAPI
	SSM            ParametersAPI
	// Region is the cluster's: alarms notify topics of their own region,
	// and the managers read secrets in theirs.
	Region string
}

// CheckCore checks the notification target and the secret sources that
// desired adds or changes compared to deployed (nil: a core to create).
// What is deployed already was checked when it was added; a source lost
// since shows in `secrets`. It returns notes for the operator (an e-mail
// subscription to confirm), or a usage error naming everything wrong on
// one line. The value of a secret is never read, so a --key is not
// checked here: the leader reports a key the JSON lacks (`secrets`).
func (s Sources) CheckCore(ctx context.Context, deployed *spec.Core, desired spec.Core) ([]string, error) {
	var notes []string
	var notifyBad problems
	notify := desired.Notify
	if deployed != nil && deployed.Notify == notify {
		notify = ""
	}
	var fresh spec.Secrets
	for _, x := range desired.Secrets {
		if deployed == nil || !slices.Contains(deployed.Secrets, x) {
			fresh = append(fresh, x)
		}
	}
	secretsBad := make([]problems, len(fresh))
	fns := []func() error{func() error { return s.checkTopic(ctx, notify, &notifyBad) }}
	for i, x := range fresh {
		fns = append(fns, func() error { return s.checkSecret(ctx, x, &secretsBad[i]) })
	}
	if err := parallel(fns...); err != nil {
		return nil, err
	}
	all := notifyBad.list
	for _, p := range secretsBad {
		all = append(all, p.list...)
	}
	if len(all) > 0 {
		return nil, errs.Usage("pre-flight: %s", strings.Join(all, "; "))
	}
	if notify != "" && !strings.HasPrefix(notify, "arn:") {
		notes = append(notes, EmailNote(notify))
	}
	return notes, nil
}

// EmailNote says what an e-mail address given to --notify must do.
func EmailNote(email string) string {
	return fmt.Sprintf("AWS e-mails %s a link to confirm the subscription: alarms reach that address only once the link is clicked (describe shows the subscription pending until then).", email)
}

// arnRegion is the region field of an ARN ("" when it is not one).
func arnRegion(arn string) string {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) < 6 {
		return ""
	}
	return parts[3]
}

// checkTopic checks an SNS topic the alarms are to notify ("" or an
// e-mail address: nothing to check).
func (s Sources) checkTopic(ctx context.Context, topic string, bad *problems) error {
	if !strings.HasPrefix(topic, "arn:") {
		return nil
	}
	if r := arnRegion(topic); r != s.Region {
		bad.add("SNS topic %s is in %s, not in the cluster's region %s: CloudWatch alarms notify topics of their own region", topic, r, s.Region)
		return nil
	}
	_, err := s.SNS.GetTopicAttributes(ctx, &sns.GetTopicAttributesInput{TopicArn: aws.String(topic)})
	var nf *snstypes.NotFoundException
	if errors.As(err, &nf) || errorCode(err) == "NotFound" {
		bad.add("SNS topic %s does not exist (create it first, or give --notify an e-mail address)", topic)
		return nil
	}
	if err != nil {
		return fmt.Errorf("checking SNS topic %s: %w", topic, err)
	}
	return nil
}

// checkSecret checks that a secret's source exists in the cluster's
// region and is of a kind the managers can read.
func (s Sources) checkSecret(ctx context.Context, x spec.Secret, bad *problems) error {
	if name := x.Parameter(); name != "" {
		return s.checkParameter(ctx, x, name, bad)
	}
	if r := arnRegion(x.From); r != s.Region {
		bad.add("secret %s: %s is in %s, not in the cluster's region %s, where the managers read it", x.Name, x.From, r, s.Region)
		return nil
	}
	out, err := s.SecretsManager.DescribeSecret(ctx, &secretsmanager.DescribeSecretInput{SecretId: aws.String(x.From)})
	var nf *smtypes.ResourceNotFoundException
	if errors.As(err, &nf) {
		bad.add("secret %s: Secrets Manager has no secret %s", x.Name, x.From)
		return nil
	}
	if err != nil {
		return fmt.Errorf("checking secret %s: %w", x.From, err)
	}
	if out.DeletedDate != nil {
		bad.add("secret %s: %s is scheduled for deletion (restore it first)", x.Name, x.From)
	}
	return nil
}

func (s Sources) checkParameter(ctx context.Context, x spec.Secret, name string, bad *problems) error {
	// The filter is applied page by page: a page may be empty and still
	// have a next one.
	p := ssm.NewDescribeParametersPaginator(s.SSM, &ssm.DescribeParametersInput{
		ParameterFilters: []ssmtypes.ParameterStringFilter{{Key: aws.String("Name"), Option: aws.String("Equals"), Values: []string{name}}},
	})
	var found *ssmtypes.ParameterMetadata
	for found == nil && p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("checking parameter %s: %w", name, err)
		}
		if i := slices.IndexFunc(page.Parameters, func(m ssmtypes.ParameterMetadata) bool { return aws.ToString(m.Name) == name }); i >= 0 {
			found = &page.Parameters[i]
		}
	}
	switch {
	case found == nil:
		bad.add("secret %s: parameter %s does not exist in %s", x.Name, x.From, s.Region)
	case found.Type == ssmtypes.ParameterTypeStringList:
		bad.add("secret %s: parameter %s is a StringList; a secret's parameter is a SecureString or a String", x.Name, x.From)
	}
	return nil
}

// errorCode is the API error code of err ("" when it is none).
func errorCode(err error) string {
	var ae interface{ ErrorCode() string }
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}
