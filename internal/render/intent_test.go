package render

import (
	"testing"

	"github.com/clusterctl/clusterctl/internal/names"
)

func TestIntentRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		spec GroupSpec
		want Intent
	}{
		{"defaults", GroupSpec{}, Intent{Labels: names.NoLabels, Image: names.ImageDefault, Subnets: names.SubnetsCore}},
		{"given", GroupSpec{Labels: []Label{{Key: "a", Value: "1"}, {Key: "b", Value: "2"}}, ImageID: "ami-12345678", SubnetIDs: []string{"subnet-0123abcd"}, MaxBatch: 2, MinInService: 1},
			Intent{Labels: "a=1,b=2", Image: "ami-12345678", Subnets: names.SubnetsOwn, MaxBatch: 2, MinInService: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := tt.spec
			spec.Cluster, spec.Group, spec.InstanceType, spec.Version = "core", "g", "r3.large", "test"
			spec.Desired, spec.Max, spec.VolumeSize = 2, 3, 30
			r, err := Group(spec)
			if err != nil {
				t.Fatal(err)
			}
			got, err := IntentFromTemplate(r.Template)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("intent = %+v, want %+v", got, tt.want)
			}
		})
	}
	if _, err := IntentFromTemplate([]byte(`{"Resources":{}}`)); err == nil {
		t.Error("a template without metadata gave an intent")
	}
}
