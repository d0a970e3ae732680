package clusterfile

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/spec"
)

func intp(n int) *int { return &n }

const valid = `apiVersion: clusterctl/v1
kind: Cluster
name: prod
core:
  instanceType: m5.large
  sshCidr: 203.0.113.0/24
groups:
  - name: web
    instanceType: c5.large
    count: 3
    labels:
      role: web
      tier: front
    rollingUpdate:
      maxBatch: 2
  - name: db
    instanceType: r5.large
    subnetIds: [subnet-0aaa1111, subnet-0bbb2222]
`

func TestReadValid(t *testing.T) {
	got, err := Read("prod.yaml", []byte(valid))
	if err != nil {
		t.Fatal(err)
	}
	want := spec.Cluster{APIVersion: spec.APIVersion, Kind: spec.Kind, Name: "prod",
		Core: spec.Core{InstanceType: "m5.large", SSHCIDR: "203.0.113.0/24"},
		Groups: []spec.Group{
			{Name: "web", InstanceType: spec.InstanceTypes{"c5.large"}, Count: intp(3), Labels: spec.Labels{"role": "web", "tier": "front"}, RollingUpdate: spec.RollingUpdate{MaxBatch: intp(2)}},
			{Name: "db", InstanceType: spec.InstanceTypes{"r5.large"}, SubnetIDs: []string{"subnet-0aaa1111", "subnet-0bbb2222"}},
		}}
	want.Default()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read\n%+v\nwant\n%+v", got, want)
	}

	// The same cluster as JSON (tabs and all) reads the same.
	b, err := json.MarshalIndent(want, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := Read("prod.json", b)
	if err != nil || !reflect.DeepEqual(fromJSON, want) {
		t.Errorf("from JSON: %+v, %v", fromJSON, err)
	}

	// Empty values leave settings out; an empty group list is no group.
	got, err = Read("x.yaml", []byte("apiVersion: clusterctl/v1\nkind: Cluster\nname: x\ncore:\ngroups: []\n"))
	if err != nil || len(got.Groups) != 0 || got.Core.InstanceType != spec.DefaultCoreInstanceType {
		t.Errorf("defaults: %+v, %v", got, err)
	}
}

// Every error names the file, the line and the setting, and is bad input
// (exit 2).
func TestReadErrors(t *testing.T) {
	head := "apiVersion: clusterctl/v1\nkind: Cluster\nname: prod\n"
	group := head + "groups:\n  - name: web\n    instanceType: c5.large\n" // the group's settings start at line 7
	tests := []struct {
		name, file string
		want       string // the whole message
	}{
		{"empty", "", "f.yaml: empty file: expected a cluster (apiVersion: clusterctl/v1, kind: Cluster)"},
		{"syntax", head + "groups: [\n", "f.yaml:4: invalid YAML or JSON: did not find expected node content"},
		{"not a mapping", "- a\n- b\n", `f.yaml:1: expected a cluster (apiVersion: clusterctl/v1, kind: Cluster, name, core, groups), found a list`},
		{"two documents", head + "---\n" + head, "f.yaml:4: a second document: a file holds one cluster"},
		{"JSON syntax", "{\n  \"apiVersion\": \"clusterctl/v1\",\n  \"kind\": \"Cluster\"\n  \"name\": \"x\"\n}\n", "f.yaml:3: invalid YAML or JSON: did not find expected ',' or '}'"},
		{"wrong apiVersion", "apiVersion: v2\nkind: Cluster\nname: prod\n", `f.yaml:1: apiVersion: "v2": want clusterctl/v1`},
		{"missing apiVersion", "kind: Cluster\nname: prod\n", `f.yaml:1: apiVersion: "": want clusterctl/v1`},
		{"wrong kind", "apiVersion: clusterctl/v1\nkind: Group\nname: prod\n", `f.yaml:2: kind: "Group": want Cluster`},
		{"bad cluster name", "apiVersion: clusterctl/v1\nkind: Cluster\nname: 9lives\n", `f.yaml:3: name: invalid cluster name "9lives": must start with a letter and contain only letters, digits and hyphens`},
		{"unknown top-level key", head + "group:\n  - name: x\n", "f.yaml:4: group: unknown setting; did you mean groups?"},
		{"flag spelling", group + "    instance-type: c5.large\n", "f.yaml:7: groups[0].instance-type: unknown setting; did you mean instanceType?"},
		{"typo", group + "    cout: 3\n", "f.yaml:7: groups[0].cout: unknown setting; did you mean count?"},
		{"part of a key", group + "    type: c5.large\n", "f.yaml:7: groups[0].type: unknown setting; did you mean instanceType?"},
		{"start of a key", group + "    volume: 50\n", "f.yaml:7: groups[0].volume: unknown setting; did you mean volumeSize?"},
		{"nothing close", group + "    flavour: spicy\n", "f.yaml:7: groups[0].flavour: unknown setting (expected one of name, instanceType, spot, onDemandBase, onDemandPercent, spotAllocation, count, min, max, labels, imageId, volumeSize, subnetIds, sshCidr, keyName, publicIps, allowSshFromAnywhere, publish, loadBalancer, allowFrom, certificate, deregistrationDelay, accessLogs, rollingUpdate, autoscale, tags)"},
		{"nested unknown", group + "    rollingUpdate:\n      batch: 2\n", "f.yaml:8: groups[0].rollingUpdate.batch: unknown setting; did you mean maxBatch?"},
		{"nested, nothing close", group + "    rollingUpdate:\n      speed: 2\n", "f.yaml:8: groups[0].rollingUpdate.speed: unknown setting (expected one of maxBatch, minInService)"},
		{"nested typo", group + "    rollingUpdate:\n      maxbatch: 2\n", "f.yaml:8: groups[0].rollingUpdate.maxbatch: unknown setting; did you mean maxBatch?"},
		{"core unknown", head + "core:\n  flavour: m5.large\n", "f.yaml:5: core.flavour: unknown setting (expected one of instanceType, imageId, keyName, sshCidr, allowSshFromAnywhere, vpcId, subnetIds, network, publicSubnetIds, volumeSize, publicIps, managers, tags, logRetentionDays, logKmsKey, logDriver, engineVersion, alarms, notify, backupKeep, operators)"},
		{"secret key typo", head + "secrets:\n  - name: db\n    form: ssm:/db\n", "f.yaml:6: secrets[0].form: unknown setting; did you mean from?"},
		{"secrets not a list", head + "secrets: db\n", "f.yaml:4: secrets: expected a list, found \"db\""},
		{"secrets under core", head + "core:\n  secrets:\n    - name: db\n      from: ssm:/db\n", "f.yaml:5: core.secrets: unknown setting (expected one of instanceType, imageId, keyName, sshCidr, allowSshFromAnywhere, vpcId, subnetIds, network, publicSubnetIds, volumeSize, publicIps, managers, tags, logRetentionDays, logKmsKey, logDriver, engineVersion, alarms, notify, backupKeep, operators)"},
		{"duplicate key", group + "    count: 2\n    count: 3\n", "f.yaml:8: groups[0].count: given twice (first at line 7)"},
		{"not a number", group + "    count: three\n", `f.yaml:7: groups[0].count: expected a whole number, found "three"`},
		{"fraction", group + "    volumeSize: 40.5\n", `f.yaml:7: groups[0].volumeSize: expected a whole number, found "40.5"`},
		{"list for a value", group + "    instanceType: [a, b]\n", "f.yaml:7: groups[0].instanceType: given twice (first at line 6)"},
		{"mapping for a type", head + "groups:\n  - name: web\n    instanceType: {c5: large}\n", "f.yaml:6: groups[0].instanceType: expected an instance type or a list of them, found a mapping"},
		{"types of two architectures", head + "groups:\n  - name: web\n    instanceType: [c5.large, c6g.large]\n", "f.yaml:6: groups[0].instanceType: instance types of more than one architecture: c6g.large is arm64, the others x86_64 (the nodes of a group share one image)"},
		{"mix without spot", head + "groups:\n  - name: web\n    instanceType: c5.large\n    onDemandPercent: 50\n", "f.yaml:7: groups[0].onDemandPercent: applies to spot groups only (without spot, every node is on-demand)"},
		{"value for a list", group + "    subnetIds: subnet-0aaa1111\n", `f.yaml:7: groups[0].subnetIds: expected a list, found "subnet-0aaa1111"`},
		{"labels as flags write them", group + "    labels: role=web\n", `f.yaml:7: groups[0].labels: expected a mapping of label keys to values (role: web), found "role=web"`},
		{"tags as flags write them", group + "    tags: team=web\n", `f.yaml:7: groups[0].tags: expected a mapping of tag keys to values (team: payments), found "team=web"`},
		{"clusterctl tag", group + "    tags:\n      clusterctl:group: other\n", `f.yaml:7: groups[0].tags: invalid tag key "clusterctl:group": the prefix clusterctl: is reserved for the tags clusterctl sets`},
		{"core aws tag", head + "core:\n  tags:\n    aws:owner: me\n", `f.yaml:5: core.tags: invalid tag key "aws:owner": the prefix aws: is reserved for AWS`},
		{"groups not a list", head + "groups:\n  web: {}\n", "f.yaml:5: groups: expected a list, found a mapping"},
		{"group not a mapping", head + "groups:\n  - web\n", `f.yaml:5: groups[0]: expected a mapping of settings, found "web"`},
		// Rules of the spec, at the setting's line.
		{"missing type", head + "groups:\n  - name: web\n    count: 2\n", "f.yaml:5: groups[0].instanceType: missing"},
		{"bad type", group + "  - name: db\n    instanceType: huge\n", `f.yaml:8: groups[1].instanceType: invalid instance type "huge": expected family.size, e.g. r5.large`},
		{"count above max", group + "    count: 5\n    max: 3\n", "f.yaml:8: groups[0].max: invalid capacity: count 5 is above max 3"},
		{"secret source", head + "secrets:\n  - name: db\n    from: ssm:/a\n  - name: api\n    from: vault:/api\n", `f.yaml:8: secrets[1].from: invalid source "vault:/api": expected a Secrets Manager ARN (arn:aws:secretsmanager:...) or ssm:/path/name`},
		{"secret twice", head + "secrets:\n  - name: db\n    from: ssm:/a\n  - name: db\n    from: ssm:/b\n", `f.yaml:7: secrets[1].name: secret "db" given twice`},
		{"group twice", group + "  - name: web\n    instanceType: c5.large\n", `f.yaml:7: groups[1].name: group "web" given twice`},
		{"bad label", group + "    labels:\n      role: \"a b\"\n", `f.yaml:7: groups[0].labels: invalid label value "a b" for key "role": only letters, digits, '.', '_', '-' and '/' are allowed`},
		{"reserved group name", head + "groups:\n  - name: control\n    instanceType: c5.large\n", `f.yaml:5: groups[0].name: invalid group name "control": reserved for the core's managers`},
		{"core rule", head + "core:\n  sshCidr: 10.0.0.1/8\n", `f.yaml:5: core.sshCidr: invalid CIDR "10.0.0.1/8": host bits set, did you mean 10.0.0.0/8?`},
		// A network declared whole, checked as create-network checks its flags.
		{"network unknown", head + "network:\n  name: prod\n  nats: single\n", "f.yaml:6: network.nats: unknown setting; did you mean nat?"},
		{"network, nothing close", head + "network:\n  name: prod\n  vpc: x\n", "f.yaml:6: network.vpc: unknown setting (expected one of name, zones, cidr, nat, tags)"},
		{"network bad nat", head + "network:\n  name: prod\n  zones: 2\n  nat: double\n", `f.yaml:7: network.nat: invalid NAT mode "double": expected single, per-zone or none`},
		{"network zones", head + "network:\n  name: prod\n  zones: 4\n", "f.yaml:6: network.zones: 4 zones: a network has 1 to 3"},
		{"network zones not a number", head + "network:\n  name: prod\n  zones: two\n", `f.yaml:6: network.zones: expected a whole number, found "two"`},
		{"network cidr", head + "network:\n  name: prod\n  cidr: 10.0.0.0/8\n", `f.yaml:6: network.cidr: CIDR "10.0.0.0/8": a VPC's range is /16 to /24 here`},
		{"network without a name", head + "network:\n  nat: none\n", `f.yaml:4: network.name: invalid network name "": must start with a letter and contain only letters, digits and hyphens`},
		{"network as a name", head + "network: prod\n", `f.yaml:4: network: expected a mapping of settings, found "prod"`},
		{"network tag", head + "network:\n  name: prod\n  tags:\n    clusterctl:x: y\n", `f.yaml:6: network.tags: invalid tag key "clusterctl:x": the prefix clusterctl: is reserved for the tags clusterctl sets`},
		{"core in another network", head + "network:\n  name: prod\ncore:\n  network: other\n", `f.yaml:7: core.network: "other", but the file declares network "prod": the core joins the network the file declares (leave core.network out)`},
		{"rolling update rule", group + "    rollingUpdate:\n      maxBatch: 0\n", "f.yaml:8: groups[0].rollingUpdate.maxBatch: invalid rolling update batch size 0: at least 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read("f.yaml", []byte(tt.file))
			if err == nil {
				t.Fatal("accepted")
			}
			if err.Error() != tt.want {
				t.Errorf("error\n%s\nwant\n%s", err, tt.want)
			}
			var fe *Error
			if !errors.As(err, &fe) || errs.ExitCode(err) != errs.ExitUsage {
				t.Errorf("%T, exit code %d", err, errs.ExitCode(err))
			}
		})
	}
}

// What Marshal writes reads back as the same cluster, in either format,
// with the keys in the spec's order.
func TestMarshalRoundTrip(t *testing.T) {
	c, err := Read("prod.yaml", []byte(valid))
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"yaml", "json"} {
		b, err := Marshal(c, format)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Read("out."+format, b)
		if err != nil || !reflect.DeepEqual(back, c) {
			t.Errorf("%s: read back %+v, %v\n%s", format, back, err, b)
		}
		text := string(b)
		if i, j := strings.Index(text, "apiVersion"), strings.Index(text, "groups"); i < 0 || j < i {
			t.Errorf("%s: keys out of order:\n%s", format, text)
		}
	}
	b, _ := Marshal(c, "yaml")
	// The first line points editors at the schema, as the README's files do.
	if !strings.HasPrefix(string(b), SchemaComment+"\napiVersion: clusterctl/v1\nkind: Cluster\nname: prod\ncore:\n  instanceType: m5.large\n") {
		t.Errorf("yaml:\n%s", b)
	}
	if _, err := Marshal(c, "toml"); err == nil {
		t.Error("toml accepted")
	}
}

// The schema is generated from the spec: every setting, its description,
// the constants, and what is required.
func TestSchema(t *testing.T) {
	b, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Ref  string `json:"$ref"`
		Defs map[string]struct {
			Properties map[string]struct {
				Description string `json:"description"`
				Const       string `json:"const"`
			} `json:"properties"`
			Required             []string        `json:"required"`
			AdditionalProperties json.RawMessage `json:"additionalProperties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	root := s.Defs["Cluster"]
	if s.Ref != "#/$defs/Cluster" || root.Properties["apiVersion"].Const != spec.APIVersion || root.Properties["kind"].Const != spec.Kind {
		t.Errorf("root %+v", root)
	}
	if !reflect.DeepEqual(root.Required, []string{"apiVersion", "kind", "name"}) || !reflect.DeepEqual(s.Defs["Group"].Required, []string{"name", "instanceType"}) {
		t.Errorf("required: cluster %v, group %v", root.Required, s.Defs["Group"].Required)
	}
	for def, v := range map[string]any{"Core": spec.Core{}, "Group": spec.Group{}} {
		for _, f := range spec.Fields(v) {
			key := f.Path
			d := s.Defs[def]
			if i := strings.IndexByte(key, '.'); i >= 0 {
				d = s.Defs[map[string]string{"rollingUpdate": "RollingUpdate", "autoscale": "Autoscale"}[key[:i]]]
				key = key[i+1:]
			}
			if def == "Core" && key == "secrets" {
				// A file's secrets are its top-level list.
				if _, ok := d.Properties[key]; ok || root.Properties[key].Description == "" {
					t.Errorf("secrets: under core %v, at the top %+v", ok, root.Properties[key])
				}
				continue
			}
			if d.Properties[key].Description == "" {
				t.Errorf("%s.%s has no description in the schema", def, f.Path)
			}
			if string(d.AdditionalProperties) != "false" {
				t.Errorf("%s allows unknown keys", def)
			}
		}
	}
	if strings.Contains(s.Defs["Group"].Properties["labels"].Description, "repeatable") {
		t.Error("the labels' description speaks of flags")
	}
}

// The examples shipped with clusterctl read, and the schema beside them
// is the one clusterctl prints (after a change of the spec:
// go run ./cmd/clusterctl schema > examples/clusterctl.schema.json).
func TestExamples(t *testing.T) {
	paths, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Read(filepath.Base(p), b); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	want, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../examples/clusterctl.schema.json")
	if err != nil || string(got) != string(want) {
		t.Errorf("examples/clusterctl.schema.json is not what clusterctl schema prints (%v): go run ./cmd/clusterctl schema > examples/clusterctl.schema.json", err)
	}
}

// The core's secrets are the file's top-level secrets: list, written and
// read back there, never under core.
func TestSecretsAtTheTop(t *testing.T) {
	c := spec.New("prod")
	c.Core.Secrets = spec.Secrets{{Name: "db_password", From: "ssm:/prod/db"}}
	if err := c.Complete(); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"yaml", "json"} {
		b, err := Marshal(c, format)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		if format == "yaml" && !strings.Contains(text, "\nsecrets:\n  - name: db_password\n    from: ssm:/prod/db\n") || strings.Count(text, "secrets") != 1 {
			t.Errorf("%s:\n%s", format, text)
		}
		back, err := Read("out."+format, b)
		if err != nil || !reflect.DeepEqual(back.Core.Secrets, c.Core.Secrets) || back.Secrets != nil {
			t.Errorf("%s: read back %+v, %v", format, back, err)
		}
	}
}

const withNetwork = `apiVersion: clusterctl/v1
kind: Cluster
name: prod
network:
  name: prod-net
  zones: 2
  cidr: 10.20.0.0/16
  nat: per-zone
  tags:
    team: web
core:
  instanceType: t3.small
groups:
  - name: web
    instanceType: t3.small
`

// A file's network: is create-network's settings, defaulted as its flags
// are; the core joins it, and the file is written back with the network
// and without the core's reference to it.
func TestNetworkSection(t *testing.T) {
	c, err := Read("prod.yaml", []byte(withNetwork))
	if err != nil {
		t.Fatal(err)
	}
	want := spec.Network{Name: "prod-net", Zones: intp(2), Cidr: "10.20.0.0/16", Nat: "per-zone", Tags: spec.Tags{"team": "web"}}
	if c.Network == nil || !reflect.DeepEqual(*c.Network, want) || c.Core.Network != "prod-net" {
		t.Fatalf("network %+v, core's %q", c.Network, c.Core.Network)
	}
	short, err := Read("short.yaml", []byte("apiVersion: clusterctl/v1\nkind: Cluster\nname: prod\nnetwork:\n  name: net\n"))
	if err != nil || short.Network.ZoneCount() != spec.DefaultNetworkZones || short.Network.Cidr != spec.DefaultNetworkCidr || short.Network.Nat != "single" {
		t.Errorf("defaults: %+v, %v", short.Network, err)
	}
	for _, format := range []string{"yaml", "json"} {
		b, err := Marshal(c, format)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(string(b), "prod-net") != 1 {
			t.Errorf("%s: the network named other than once:\n%s", format, b)
		}
		back, err := Read("out."+format, b)
		if err != nil || !reflect.DeepEqual(back, c) {
			t.Errorf("%s: read back %+v, %v\n%s", format, back, err, b)
		}
	}
	b, _ := Marshal(c, "yaml")
	if !strings.Contains(string(b), "name: prod\nnetwork:\n  name: prod-net\n  zones: 2\n  cidr: 10.20.0.0/16\n  nat: per-zone\n  tags:\n    team: web\ncore:\n") {
		t.Errorf("yaml:\n%s", b)
	}
}
