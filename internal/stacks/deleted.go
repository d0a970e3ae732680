package stacks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
)

// LastDeleted finds the most recent deleted stack of that name (or ID)
// among the deleted stacks CloudFormation remembers (90 days). It is how
// an interrupted deletion that has since finished is told apart from a
// stack that never existed: errors.Is(err, ErrNotFound) for the latter.
func (m *Manager) LastDeleted(ctx context.Context, name string) (*Stack, error) {
	var found *types.StackSummary
	var foundAt time.Time
	p := cloudformation.NewListStacksPaginator(m.api, &cloudformation.ListStacksInput{
		StackStatusFilter: []types.StackStatus{types.StackStatusDeleteComplete},
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing deleted stacks: %w", err)
		}
		for i := range page.StackSummaries {
			s := page.StackSummaries[i]
			if aws.ToString(s.StackName) != name && aws.ToString(s.StackId) != name {
				continue
			}
			// Not every implementation records DeletionTime; then the
			// newest creation, and the later entry on a tie, wins.
			at := aws.ToTime(s.CreationTime)
			if s.DeletionTime != nil {
				at = *s.DeletionTime
			}
			if found == nil || !at.Before(foundAt) {
				found, foundAt = &s, at
			}
		}
	}
	if found == nil {
		return nil, newNotFound(name, nil)
	}
	return &Stack{
		Name: aws.ToString(found.StackName), ID: aws.ToString(found.StackId),
		Status: string(found.StackStatus), StatusReason: aws.ToString(found.StackStatusReason),
		Parameters: map[string]string{}, Outputs: map[string]string{}, Tags: map[string]string{}, Resolved: map[string]string{},
		Created: aws.ToTime(found.CreationTime), Updated: foundAt,
	}, nil
}

// WaitMany is Wait on several stacks at once, with progress for all of
// them. It returns each stack's outcome in the order of names (nil where
// there is none) and every failure, joined.
func (m *Manager) WaitMany(ctx context.Context, names []string) ([]*Stack, error) {
	out := make([]*Stack, len(names))
	errList := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errList[i] = m.Wait(ctx, name)
		}()
	}
	wg.Wait()
	return out, errors.Join(errList...)
}
