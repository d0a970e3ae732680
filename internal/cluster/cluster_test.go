package cluster

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/names"

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
	base := render.Intent{Labels: "role=worker", Image: names.ImageDefault, Subnets: names.SubnetsCore}
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
		{"own subnets kept", render.Intent{Labels: names.NoLabels, Image: "ami-12345678", Subnets: names.SubnetsOwn, MaxBatch: 2}, UpdateOptions{}, func(t *testing.T, s render.GroupSpec) {
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
		st := &stacks.Stack{Name: "core-g", Status: status, Tags: map[string]string{names.TagCluster: "core", names.TagRole: names.RoleAgents, names.TagGroup: "g"}}
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
	ios, in, _, _ := iostreams.Test()
	s := &Service{IO: ios}
	if err := s.confirm(false, "delete everything"); errs.ExitCode(err) != errs.ExitUsage || !strings.Contains(err.Error(), "--yes") {
		t.Errorf("without a terminal: %v", err)
	}
	if err := s.confirm(true, "x"); err != nil {
		t.Errorf("--yes: %v", err)
	}
	ios.InTTY = true
	in.WriteString("n\n")
	if err := s.confirm(false, "x"); !errors.Is(err, ErrRefused) {
		t.Errorf("answer no: %v", err)
	}
	in.WriteString("yes\n")
	if err := s.confirm(false, "x"); err != nil {
		t.Errorf("answer yes: %v", err)
	}
}
