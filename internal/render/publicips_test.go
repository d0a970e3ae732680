package render

import (
	"encoding/json"
	"testing"
)

// TestNoPublicIPUnlessAsked resolves every rendered launch template with
// its parameters, as CloudFormation would: its one network interface
// (device 0, with the node's security groups) associates a public IP
// exactly when the spec asks for public IPs, and no security group is
// given outside it (EC2 refuses both at once).
func TestNoPublicIPUnlessAsked(t *testing.T) {
	asked := 0
	for _, v := range variants() {
		r, err := v.render()
		if err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		launch := Launch
		want := v.group != nil && v.group.PublicIPs
		if v.core != nil {
			launch, want = CoreLaunch, v.core.PublicIPs
		}
		if want {
			asked++
		}
		raw, err := launch(r.Template, r.Parameters)
		if err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		var l struct {
			LaunchTemplateData struct {
				SecurityGroupIds  any
				NetworkInterfaces []struct {
					DeviceIndex              float64
					Groups                   []any
					AssociatePublicIpAddress any
					DeleteOnTermination      bool
				}
			}
		}
		if err := json.Unmarshal([]byte(raw), &l); err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		d := l.LaunchTemplateData
		if d.SecurityGroupIds != nil {
			t.Errorf("%s: security groups outside the network interface: %v", v.name, d.SecurityGroupIds)
		}
		if len(d.NetworkInterfaces) != 1 {
			t.Fatalf("%s: network interfaces %+v, want exactly one", v.name, d.NetworkInterfaces)
		}
		nic := d.NetworkInterfaces[0]
		if nic.DeviceIndex != 0 || len(nic.Groups) == 0 || !nic.DeleteOnTermination {
			t.Errorf("%s: network interface %+v", v.name, nic)
		}
		if nic.AssociatePublicIpAddress != want {
			t.Errorf("%s: AssociatePublicIpAddress = %v, want %v", v.name, nic.AssociatePublicIpAddress, want)
		}
	}
	if asked == 0 {
		t.Fatal("no variant asks for public IPs")
	}
}
