package validate

import (
	"strings"
	"testing"
)

func TestClusterAndGroupNames(t *testing.T) {
	long := "a" + strings.Repeat("b", 127)
	tests := []struct {
		cluster, group string
		wantErr        string
	}{
		{"core", "r3-agents", ""},
		{"Core9", "g", ""},
		{"9core", "g", "invalid cluster name"},
		{"-core", "g", "invalid cluster name"},
		{"core_1", "g", "invalid cluster name"},
		{"", "g", "invalid cluster name"},
		{"co re", "g", "invalid cluster name"},
		{long, "g", "stack name"},
		{long[:128], "", "invalid group name"},
		{"core", "r3.agents", "invalid group name"},
		{"core", "g$(rm)", "invalid group name"},
		{"core", strings.Repeat("g", 123), ""},
		{"core", strings.Repeat("g", 124), "129 characters"},
	}
	for _, tt := range tests {
		err := ClusterName(tt.cluster)
		if err == nil {
			err = GroupName(tt.cluster, tt.group)
		}
		checkErr(t, tt.cluster+"/"+tt.group, err, tt.wantErr)
	}
}

func TestInstanceType(t *testing.T) {
	for _, ok := range []string{"r3.large", "c5.xlarge", "m7gd.2xlarge", "t4g.nano", "u-6tb1.metal", "x2iedn.32xlarge", "mac2-m2pro.metal"} {
		if err := InstanceType(ok); err != nil {
			t.Errorf("InstanceType(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "large", "r3", "r3.", ".large", "R3.large", "r.large", "r3.large;id", "r3 .large"} {
		if err := InstanceType(bad); err == nil {
			t.Errorf("InstanceType(%q) = nil, want error", bad)
		}
	}
}

func TestImageID(t *testing.T) {
	for _, ok := range []string{"", "ami-12345678", "ami-0123456789abcdef0", "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-arm64"} {
		if err := ImageID(ok); err != nil {
			t.Errorf("ImageID(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"ami-xyz", "al2023", "/path with space", "ami-123"} {
		if err := ImageID(bad); err == nil {
			t.Errorf("ImageID(%q) = nil, want error", bad)
		}
	}
}

func TestCIDR(t *testing.T) {
	tests := []struct{ in, wantErr string }{
		{"203.0.113.0/24", ""},
		{"198.51.100.7/32", ""},
		{"2001:db8::/32", ""},
		{"10.0.0.1/8", "host bits set, did you mean 10.0.0.0/8"},
		{"10.0.0.0", "expected address/prefix"},
		{"10.0.0.0/33", "expected address/prefix"},
		{"300.0.0.0/8", "expected address/prefix"},
		{" 10.0.0.0/8", "expected address/prefix"},
	}
	for _, tt := range tests {
		checkErr(t, tt.in, CIDR(tt.in), tt.wantErr)
	}
}

func TestCapacity(t *testing.T) {
	tests := []struct {
		d, min, max int
		wantErr     string
	}{
		{1, 1, 1, ""},
		{0, 0, 0, ""},
		{3, 0, 10, ""},
		{-1, 0, 1, "negative"},
		{1, 2, 3, "min 2 is above count 1"},
		{4, 0, 3, "count 4 is above max 3"},
	}
	for _, tt := range tests {
		checkErr(t, "capacity", Capacity(tt.d, tt.min, tt.max), tt.wantErr)
	}
}

func TestLabels(t *testing.T) {
	tests := []struct {
		in      []string
		want    string
		wantErr string
	}{
		{nil, "", ""},
		{[]string{"role=worker,instancetype=r3"}, "instancetype=r3,role=worker", ""},
		{[]string{"a=1", "b=2"}, "a=1,b=2", ""},
		{[]string{"example.com/tier=gold_1"}, "example.com/tier=gold_1", ""},
		{[]string{"a"}, "", "expected key=value"},
		{[]string{"a=1,"}, "", "empty entry"},
		{[]string{"a=1,a=2"}, "", "given twice"},
		{[]string{"a=$(reboot)"}, "", "invalid label value"},
		{[]string{"a='x'"}, "", "invalid label value"},
		{[]string{"a b=1"}, "", "invalid label key"},
		{[]string{"=1"}, "", "invalid label key"},
		{[]string{"a="}, "", "invalid label value"},
		{[]string{"a=1=2"}, "", "invalid label value"},
		{[]string{"k=" + strings.Repeat("v", 64)}, "", "63 characters"},
	}
	for _, tt := range tests {
		got, err := Labels(tt.in)
		checkErr(t, strings.Join(tt.in, " "), err, tt.wantErr)
		if err == nil && FormatLabels(got) != tt.want {
			t.Errorf("Labels(%q) = %q, want %q", tt.in, FormatLabels(got), tt.want)
		}
	}
	var many []string
	for i := 0; i < MaxLabels+1; i++ {
		many = append(many, "k"+strings.Repeat("x", i%3)+string(rune('a'+i))+"=v")
	}
	if _, err := Labels(many); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("too many labels: err = %v", err)
	}
}

func TestOutputFormat(t *testing.T) {
	for _, ok := range []string{"table", "wide", "json", "yaml"} {
		if err := OutputFormat(ok); err != nil {
			t.Errorf("OutputFormat(%q) = %v", ok, err)
		}
	}
	if err := OutputFormat("xml"); err == nil {
		t.Error("OutputFormat(xml) = nil, want error")
	}
}

func TestIDs(t *testing.T) {
	if err := SubnetIDs([]string{"subnet-0123abcd", "subnet-0123456789abcdef0"}); err != nil {
		t.Error(err)
	}
	if err := SubnetIDs([]string{"subnet-0123abcd", "sn-1"}); err == nil {
		t.Error("SubnetIDs accepted sn-1")
	}
	if err := VpcID("vpc-0123abcd"); err != nil {
		t.Error(err)
	}
	if err := VpcID("vpc"); err == nil {
		t.Error("VpcID accepted vpc")
	}
	if err := VolumeSize(4); err == nil {
		t.Error("VolumeSize accepted 4")
	}
}

func checkErr(t *testing.T, what string, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: unexpected error %v", what, err)
	case want != "" && err == nil:
		t.Errorf("%s: no error, want one containing %q", what, want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Errorf("%s: error %q does not contain %q", what, err, want)
	case err != nil && strings.Contains(err.Error(), "\n"):
		t.Errorf("%s: error is not one line: %q", what, err)
	}
}
