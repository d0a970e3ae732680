package cluster

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/iostreams"
	"github.com/clusterctl/clusterctl/internal/render"
	"github.com/clusterctl/clusterctl/internal/stacks"
	"github.com/clusterctl/clusterctl/internal/validate"
)

func TestSplitList(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"subnet-1,subnet-2", []string{"subnet-1", "subnet-2"}},
		{"['subnet-1', 'subnet-2']", []string{"subnet-1", "subnet-2"}},
		{"subnet-1", []string{"subnet-1"}},
		{"", nil},
	}
	for _, tt := range tests {
		if got := splitList(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("splitList(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if !equalList("a,b", "['a', 'b']") || equalList("a,b", "b,a") {
		t.Error("equalList")
	}
}

func intp(n int) *int { return &n }

func TestMergeGroupSpec(t *testing.T) {
	prev := &stacks.Stack{Parameters: map[string]string{
		"InstanceType": "r3.large", "DesiredCapacity": "3", "MinSize": "1", "MaxSize": "5", "VolumeSize": "30",
		"SubnetIds": "['subnet-0aaa1111', 'subnet-0bbb2222']", "MaxBatchSize": "1", "MinInstancesInService": "3",
	}}
	base := render.Intent{Labels: "role=worker", Image: render.ImageDefault, Subnets: render.SubnetsCore}
	tests := []struct {
		name    string
		intent  render.Intent
		opts    UpdateOptions
		check   func(t *testing.T, s render.GroupSpec)
		wantErr string
	}{
		{"nothing given keeps everything", base, UpdateOptions{}, func(t *testing.T, s render.GroupSpec) {
			if s.InstanceType != "r3.large" || s.Desired != 3 || s.Min != 1 || s.Max != 5 || s.VolumeSize != 30 || s.ImageID != "" || s.SubnetIDs != nil {
				t.Errorf("spec = %+v", s)
			}
			if validate.FormatLabels(s.Labels) != "role=worker" {
				t.Errorf("labels = %v", s.Labels)
			}
			// The computed rolling-update values are not frozen into the group.
			if s.MaxBatch != 0 || s.MinInService != 0 {
				t.Errorf("rolling update = %d/%d, want defaults", s.MaxBatch, s.MinInService)
			}
		}, ""},
		{"type and labels replace", base, UpdateOptions{InstanceType: "r5.large", Labels: []string{"tier=memory"}}, func(t *testing.T, s render.GroupSpec) {
			if s.InstanceType != "r5.large" || len(s.Labels) != 1 || s.Labels[0].Key != "tier" {
				t.Errorf("spec = %+v", s)
			}
		}, ""},
		{"count above max moves max", base, UpdateOptions{Count: intp(8)}, func(t *testing.T, s render.GroupSpec) {
			if s.Desired != 8 || s.Max != 9 || s.Min != 1 {
				t.Errorf("sizes = %d/%d/%d", s.Min, s.Desired, s.Max)
			}
		}, ""},
		{"count below min moves min", base, UpdateOptions{Count: intp(0)}, func(t *testing.T, s render.GroupSpec) {
			if s.Desired != 0 || s.Min != 0 || s.Max != 5 {
				t.Errorf("sizes = %d/%d/%d", s.Min, s.Desired, s.Max)
			}
		}, ""},
		{"own subnets kept", render.Intent{Labels: render.NoLabels, Image: "ami-12345678", Subnets: render.SubnetsOwn, MaxBatch: 2}, UpdateOptions{}, func(t *testing.T, s render.GroupSpec) {
			if !slices.Equal(s.SubnetIDs, []string{"subnet-0aaa1111", "subnet-0bbb2222"}) || s.ImageID != "ami-12345678" || len(s.Labels) != 0 || s.MaxBatch != 2 {
				t.Errorf("spec = %+v", s)
			}
		}, ""},
		{"explicit bounds checked", base, UpdateOptions{Max: intp(2)}, nil, "count 3 is above max 2"},
		{"min above count", base, UpdateOptions{Min: intp(4)}, nil, "min 4 is above count 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Cluster, tt.opts.Group = "core", "g"
			s, err := mergeGroupSpec(prev, tt.intent, tt.opts, "test")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || errs.ExitCode(err) != errs.ExitUsage {
					t.Fatalf("err = %v, want usage error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, s)
		})
	}
}

func TestUsable(t *testing.T) {
	for status, ok := range map[string]bool{
		"CREATE_COMPLETE": true, "UPDATE_COMPLETE": true, "UPDATE_ROLLBACK_COMPLETE": true,
		"ROLLBACK_COMPLETE": false, "CREATE_FAILED": false, "UPDATE_ROLLBACK_FAILED": false, "DELETE_FAILED": false,
		"UPDATE_IN_PROGRESS": false, "CREATE_IN_PROGRESS": false,
	} {
		st := &stacks.Stack{Name: "core-g", Status: status, Tags: map[string]string{render.TagCluster: "core", render.TagRole: render.RoleAgents, render.TagGroup: "g"}}
		err := usable(st, "group")
		if (err == nil) != ok {
			t.Errorf("%s: usable = %v, want ok=%v", status, err, ok)
		}
		if err != nil && (!errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), status) || !strings.Contains(err.Error(), "clusterctl ")) {
			t.Errorf("%s: error %q should name the status and a command", status, err)
		}
	}
}

func TestHealth(t *testing.T) {
	tests := []struct {
		status string
		joined bool
		want   string
	}{
		{"CREATE_COMPLETE", true, "healthy"},
		{"UPDATE_COMPLETE", false, "stale"},
		{"UPDATE_IN_PROGRESS", true, "busy"},
		{"UPDATE_ROLLBACK_COMPLETE", true, "degraded"},
		{"ROLLBACK_COMPLETE", true, "dead"},
		{"DELETE_FAILED", true, "stuck"},
	}
	for _, tt := range tests {
		if got := Health(tt.status, tt.joined); got != tt.want {
			t.Errorf("Health(%s, %v) = %s, want %s", tt.status, tt.joined, got, tt.want)
		}
	}
}

func TestConfirm(t *testing.T) {
	ios, in, _, errOut := iostreams.Test()
	s := &Service{IO: ios}
	if err := s.confirm(t.Context(), false, "delete everything"); errs.ExitCode(err) != errs.ExitUsage || !strings.Contains(err.Error(), "--yes") {
		t.Errorf("without a terminal: %v", err)
	}
	if err := s.confirm(t.Context(), true, "x"); err != nil {
		t.Errorf("--yes: %v", err)
	}
	ios.InTTY = true
	in.WriteString("n\n")
	if err := s.confirm(t.Context(), false, "x"); !errors.Is(err, ErrRefused) {
		t.Errorf("answer no: %v", err)
	}
	in.WriteString("yes\n")
	if err := s.confirm(t.Context(), false, "x"); err != nil {
		t.Errorf("answer yes: %v", err)
	}
	// End of input: refused, and the prompt's line is ended so that the
	// message starts on its own.
	errOut.Reset()
	if err := s.confirm(t.Context(), false, "x"); !errors.Is(err, ErrRefused) || err.Error() != "not confirmed" {
		t.Errorf("end of input: %v", err)
	}
	if errOut.String() != "Really x? [y/N]: \n" {
		t.Errorf("prompt at end of input = %q", errOut.String())
	}
}

// Ctrl-C (a cancelled context) ends the prompt at once, without waiting
// for a line that never comes, and exits as interrupted.
func TestConfirmInterrupted(t *testing.T) {
	ios, _, _, errOut := iostreams.Test()
	r, w := io.Pipe() // nothing is ever typed
	defer w.Close()
	ios.In, ios.InTTY = r, true
	s := &Service{IO: ios}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := s.confirm(ctx, false, "x")
	if !errors.Is(err, context.Canceled) || errs.ExitCode(err) != errs.ExitInterrupted || !strings.Contains(err.Error(), "not confirmed") {
		t.Errorf("interrupted prompt: %v (exit %d)", err, errs.ExitCode(err))
	}
	if !strings.HasSuffix(errOut.String(), "[y/N]: \n") {
		t.Errorf("prompt line not ended: %q", errOut.String())
	}
}
