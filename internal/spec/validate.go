package spec

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/names"
)

// Limits the rules below enforce.
const (
	// MaxStackName is CloudFormation's limit on stack names (the cluster's,
	// and <cluster>-<group>).
	MaxStackName = 128
	// MaxLabels keeps instances and Auto Scaling groups under EC2's 50
	// tags: besides one tag per label each carries Name, the 4 ownership
	// tags and the 3 other group stack tags CloudFormation propagates, and
	// an agent instance the 3 tags its node puts there (type, lifecycle,
	// zone), which leaves 39; 2 stay free for the operator's own stack tags.
	MaxLabels = 37
	// MaxLabelChars bounds a label's key and its value.
	MaxLabelChars = 63
	// MaxLabelsChars is CloudFormation's limit on a tag value, which the
	// clusterctl:labels stack tag (k=v,k=v) must fit.
	MaxLabelsChars = 256
	MinVolumeSize  = 8     // GiB, what Amazon Linux 2023 needs
	MaxVolumeSize  = 16384 // GiB, EBS gp3
	MaxKeyName     = 255   // EC2 key pair names
	// MaxInstanceTypes is what an Auto Scaling group's mixed instances
	// policy takes.
	MaxInstanceTypes = 40
)

var (
	nameRE    = regexp.MustCompile(`^[a-zA-Z][-a-zA-Z0-9]*$`)
	typeRE    = regexp.MustCompile(`^[a-z][a-z0-9-]*[0-9][a-z0-9-]*\.[a-z0-9]+$`)
	amiRE     = regexp.MustCompile(`^ami-([0-9a-f]{8}|[0-9a-f]{17})$`)
	ssmPathRE = regexp.MustCompile(`^/[a-zA-Z0-9_.\-/]+$`)
	subnetRE  = regexp.MustCompile(`^subnet-[0-9a-f]{8,17}$`)
	vpcRE     = regexp.MustCompile(`^vpc-[0-9a-f]{8,17}$`)
	// Labels end up in shell scripts on the nodes and in tags: letters,
	// digits and . _ - / only.
	labelRE = regexp.MustCompile(`^[a-zA-Z0-9._/-]+$`)
)

// FieldError is invalid input at one setting. Path is relative to what
// was checked ("count" for a group, "groups[1].count" for a cluster);
// Missing means a required setting is absent.
type FieldError struct {
	Path    string
	Missing bool
	Msg     string
}

func (e *FieldError) Error() string {
	if e.Missing {
		return e.Path + ": missing"
	}
	return e.Path + ": " + e.Msg
}

// invalid returns a usage error (exit code 2) at path.
func invalid(path, format string, args ...any) error {
	return errs.AsUsage(&FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
}

func missing(path string) error {
	return errs.AsUsage(&FieldError{Path: path, Missing: true})
}

// within prefixes the path of a FieldError in err.
func within(prefix string, err error) error {
	var fe *FieldError
	if errors.As(err, &fe) {
		fe.Path = prefix + fe.Path
	}
	return err
}

// Complete applies the defaults, then validates the whole cluster.
func (c *Cluster) Complete() error {
	if len(c.Secrets) > 0 {
		if len(c.Core.Secrets) > 0 {
			return invalid("secrets", "given at the top and in core: give them once, at the top")
		}
		c.Core.Secrets, c.Secrets = c.Secrets, nil
	}
	c.Default()
	return c.Check()
}

// Check checks the whole cluster and returns the first problem.
func (c *Cluster) Check() error {
	if c.APIVersion != APIVersion {
		return invalid("apiVersion", "%q: want %s", c.APIVersion, APIVersion)
	}
	if c.Kind != Kind {
		return invalid("kind", "%q: want %s", c.Kind, Kind)
	}
	if err := CheckClusterName(c.Name); err != nil {
		return err
	}
	if c.Network != nil {
		if err := c.Network.Check(); err != nil {
			return within("network.", err)
		}
		if c.Core.Network != c.Network.Name {
			return invalid("core.network", "%q, but the file declares network %q: the core joins the network the file declares (leave core.network out)", c.Core.Network, c.Network.Name)
		}
	}
	if err := c.Core.Check(); err != nil {
		return within("core.", err)
	}
	seen := map[string]bool{}
	for i, g := range c.Groups {
		at := fmt.Sprintf("groups[%d].", i)
		if err := g.Check(c.Name); err != nil {
			return within(at, err)
		}
		if seen[g.Name] {
			return invalid(at+"name", "group %q given twice", g.Name)
		}
		seen[g.Name] = true
	}
	return nil
}

// CheckClusterName checks a cluster (= core stack) name; the error's
// path is "name".
func CheckClusterName(name string) error {
	if !nameRE.MatchString(name) {
		return invalid("name", "invalid cluster name %q: must start with a letter and contain only letters, digits and hyphens", name)
	}
	if len(name) > MaxStackName {
		return invalid("name", "invalid cluster name %q: %d characters, over the %d allowed", name, len(name), MaxStackName)
	}
	return nil
}

// CheckGroupName checks a group name in a cluster; the error's path is
// "name".
func CheckGroupName(cluster, group string) error {
	if !nameRE.MatchString(group) {
		return invalid("name", "invalid group name %q: must start with a letter and contain only letters, digits and hyphens", group)
	}
	if group == names.GroupControl {
		return invalid("name", "invalid group name %q: reserved for the core's managers", group)
	}
	if n := len(names.GroupStack(cluster, group)); n > MaxStackName {
		return invalid("name", "invalid group name %q: stack name %s would be %d characters, over the %d allowed", group, names.GroupStack(cluster, group), n, MaxStackName)
	}
	return nil
}

// Complete applies the core's defaults, then validates it.
func (c *Core) Complete() error {
	c.Default()
	return c.Check()
}

// Check checks the core's settings.
func (c Core) Check() error {
	return firstBroken(c.rules())
}

// CheckGiven checks the rules that involve only the settings at the
// given paths: what can be checked of update-core's flags before the
// deployed core is read.
func (c Core) CheckGiven(given []string) error {
	return firstGiven(c.rules(), given)
}

func (c Core) rules() []rule {
	return []rule{
		one("instanceType", checkInstanceType("instanceType", c.InstanceType)),
		one("imageId", checkImage("imageId", c.ImageID)),
		one("keyName", checkKeyName("keyName", c.KeyName)),
		one("sshCidr", checkSSHCIDR("sshCidr", c.SSHCIDR)),
		{[]string{"sshCidr", "allowSshFromAnywhere"}, checkSSHAnywhere("sshCidr", c.SSHCIDR, c.AllowSSHFromAnywhere)},
		one("vpcId", checkVpc("vpcId", c.VpcID)),
		one("subnetIds", checkSubnets("subnetIds", c.SubnetIDs)),
		one("network", checkNetworkRef("network", c.Network)),
		one("publicSubnetIds", checkSubnets("publicSubnetIds", c.PublicSubnetIDs)),
		one("volumeSize", checkVolume("volumeSize", c.Volume())),
		one("managers", checkManagers("managers", c.ManagerCount())),
		one("tags", checkTags("tags", c.Tags, 0)),
		one("logRetentionDays", checkLogRetention("logRetentionDays", c.LogRetention())),
		one("backupKeep", checkBackupKeep("backupKeep", c.Backups())),
		one("logKmsKey", checkKMSKey("logKmsKey", c.LogKMSKey)),
		one("logDriver", checkLogDriver("logDriver", c.Logging())),
		one("engineVersion", checkEngineVersion("engineVersion", c.Engine())),
		one("secrets", checkSecrets("secrets", c.Secrets)),
		one("alarms", checkAlarms("alarms", c.AlarmsSetting())),
		{[]string{"notify", "alarms"}, checkNotify("notify", c.Notify, c.AlarmsSetting())},
		one("operators", checkOperators("operators", c.Operators)),
	}
}

func checkAlarms(path, alarms string) error {
	if alarms != names.AlarmsOn && alarms != names.AlarmsOff {
		return invalid(path, "invalid alarms setting %q: expected %s or %s", alarms, names.AlarmsOn, names.AlarmsOff)
	}
	return nil
}

// What SNS subscribes by e-mail (a conservative shape: one @, a dotted
// domain, no spaces or quotes), and a standard or FIFO topic's ARN, whose
// name is bounded apart (maxTopicName): a counted repetition compiles to a
// state per count, which every start of clusterctl paid.
var (
	emailRE    = regexp.MustCompile(`^[A-Za-z0-9._%+'-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$`)
	snsTopicRE = regexp.MustCompile(`^arn:aws[a-z-]*:sns:[a-z]{2}(?:-[a-z]+)+-[0-9]+:[0-9]{12}:([A-Za-z0-9_-]+)(?:\.fifo)?$`)
)

// maxTopicName is the length of an SNS topic's name, without .fifo.
const maxTopicName = 256

// validTopicARN reports whether s is an SNS topic's ARN.
func validTopicARN(s string) bool {
	m := snsTopicRE.FindStringSubmatch(s)
	return m != nil && len(m[1]) <= maxTopicName
}

func checkNotify(path, notify, alarms string) error {
	switch {
	case notify == "":
		return nil
	case alarms == names.AlarmsOff:
		return invalid(path, "--notify %q with alarms off: no alarm would notify it", notify)
	case strings.HasPrefix(notify, "arn:"):
		if !validTopicARN(notify) {
			return invalid(path, "invalid SNS topic %q: expected arn:aws:sns:REGION:ACCOUNT:TOPIC", notify)
		}
	case len(notify) > 254 || !emailRE.MatchString(notify):
		return invalid(path, "invalid notification target %q: expected an e-mail address or an SNS topic ARN (arn:aws:sns:REGION:ACCOUNT:TOPIC)", notify)
	}
	return nil
}

func checkBackupKeep(path string, n int) error {
	if n < 1 || n > MaxBackupKeep {
		return invalid(path, "invalid number of backups to keep %d: 1 to %d", n, MaxBackupKeep)
	}
	return nil
}

// LogRetentions are the retention periods, in days, CloudWatch Logs
// accepts for a log group.
func LogRetentions() []int {
	return []int{1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653}
}

func checkLogRetention(path string, days int) error {
	if !slices.Contains(LogRetentions(), days) {
		return invalid(path, "invalid log retention %d days: CloudWatch Logs allows %s", days, strings.Trim(strings.Join(strings.Fields(fmt.Sprint(LogRetentions())), ", "), "[]"))
	}
	return nil
}

// A log group takes a KMS key by its ARN only (not an alias, not an id).
var kmsKeyRE = regexp.MustCompile(`^arn:aws[a-z-]*:kms:[a-z]{2}(-[a-z]+)+-[0-9]+:[0-9]{12}:key/[a-zA-Z0-9-]{1,128}$`)

func checkKMSKey(path, arn string) error {
	if arn != "" && !kmsKeyRE.MatchString(arn) {
		return invalid(path, "invalid KMS key %q: expected a key ARN, arn:aws:kms:REGION:ACCOUNT:key/ID (a log group takes no alias)", arn)
	}
	return nil
}

func checkLogDriver(path, driver string) error {
	if driver != names.LogDriverAWSLogs && driver != names.LogDriverNone {
		return invalid(path, "invalid log driver %q: expected %s or %s", driver, names.LogDriverAWSLogs, names.LogDriverNone)
	}
	return nil
}

// Complete applies the group's defaults, then validates it as a group of
// cluster.
func (g *Group) Complete(cluster string) error {
	g.Default()
	return g.Check(cluster)
}

// Check checks the group's settings as a group of cluster.
func (g Group) Check(cluster string) error {
	return firstBroken(g.rules(cluster))
}

// CheckGiven checks the rules that involve only the settings at the
// given paths: what can be checked of update-group's flags before the
// deployed group is read (the merged group is validated as a whole then).
func (g Group) CheckGiven(cluster string, given []string) error {
	return firstGiven(g.rules(cluster), given)
}

// rule is the outcome of one rule and the settings it involves.
type rule struct {
	paths []string
	err   error
}

// one is the outcome of a rule about one setting.
func one(path string, err error) rule { return rule{[]string{path}, err} }

func firstBroken(rules []rule) error {
	for _, r := range rules {
		if r.err != nil {
			return r.err
		}
	}
	return nil
}

// firstGiven is the first broken rule whose settings were all given.
func firstGiven(rules []rule, given []string) error {
	for _, r := range rules {
		if r.err != nil && !slices.ContainsFunc(r.paths, func(p string) bool { return !slices.Contains(given, p) }) {
			return r.err
		}
	}
	return nil
}

func (g Group) rules(cluster string) []rule {
	desired, min, max := g.Desired(), g.MinSize(), g.MaxSize()
	rules := []rule{
		one("name", CheckGroupName(cluster, g.Name)),
		one("instanceType", checkInstanceTypes("instanceType", g.InstanceType)),
		one("onDemandBase", when(g.OnDemandBaseCapacity() < 0, invalid("onDemandBase", "invalid on-demand base %d: negative", g.OnDemandBaseCapacity()))),
		one("onDemandPercent", when(g.OnDemandPercentage() < 0 || g.OnDemandPercentage() > 100, invalid("onDemandPercent", "invalid on-demand percentage %d: expected 0 to 100", g.OnDemandPercentage()))),
		one("spotAllocation", checkSpotAllocation("spotAllocation", g.SpotAllocation)),
		one("count", checkCapacity("count", desired)),
		one("min", checkCapacity("min", min)),
		one("max", checkCapacity("max", max)),
		// The order of the sizes, once each is known to be valid.
		{[]string{"count", "min"}, when(min >= 0 && min > desired, invalid("min", "invalid capacity: min %d is above count %d", min, desired))},
		{[]string{"count", "max"}, when(desired >= 0 && desired > max, invalid("max", "invalid capacity: count %d is above max %d", desired, max))},
		one("labels", checkLabels("labels", g.Labels)),
		one("imageId", checkImage("imageId", g.ImageID)),
		one("volumeSize", checkVolume("volumeSize", g.Volume())),
		one("subnetIds", checkSubnets("subnetIds", g.SubnetIDs)),
		one("sshCidr", checkSSHCIDR("sshCidr", g.SSHCIDR)),
		{[]string{"sshCidr", "allowSshFromAnywhere"}, checkSSHAnywhere("sshCidr", g.SSHCIDR, g.AllowSSHFromAnywhere)},
		one("keyName", checkKeyName("keyName", g.KeyName)),
		{[]string{"tags", "labels"}, checkTags("tags", g.Tags, len(g.Labels))},
	}
	rules = append(rules, g.lbRules()...)
	rules = append(rules, g.autoscaleRules()...)
	// Without spot every node is on-demand: a mix given anyway needs spot.
	if !g.Spot {
		for _, m := range []struct {
			path  string
			given bool
		}{
			{"onDemandBase", g.OnDemandBase != nil},
			{"onDemandPercent", g.OnDemandPercent != nil},
			{"spotAllocation", g.SpotAllocation != ""},
		} {
			if m.given {
				rules = append(rules, rule{[]string{m.path, "spot"}, invalid(m.path, "applies to spot groups only (without spot, every node is on-demand)")})
			}
		}
	}
	// What CloudFormation requires of an AutoScalingRollingUpdate: a batch
	// of at least one node, and fewer nodes kept in service than the
	// group's max size.
	if b := g.RollingUpdate.MaxBatch; b != nil && *b < 1 {
		rules = append(rules, one("rollingUpdate.maxBatch", invalid("rollingUpdate.maxBatch", "invalid rolling update batch size %d: at least 1", *b)))
	}
	if m := g.RollingUpdate.MinInService; m != nil {
		if *m < 0 {
			rules = append(rules, one("rollingUpdate.minInService", invalid("rollingUpdate.minInService", "invalid rolling update minimum in service %d: negative", *m)))
		} else if *m >= max {
			rules = append(rules, rule{[]string{"rollingUpdate.minInService", "max"}, invalid("rollingUpdate.minInService", "invalid rolling update minimum in service %d: must be below max %d", *m, max)})
		}
	}
	return rules
}

func when(broken bool, err error) error {
	if broken {
		return err
	}
	return nil
}

// MaxCapacity bounds a group's count, min and max. EC2 Auto Scaling
// takes them as 32-bit integers, and no account's instance quotas come
// near that; a swarm of more than a few thousand nodes is beyond what
// Docker Swarm is run at. A larger number is a slip, refused before AWS
// is asked.
const MaxCapacity = 10000

func checkCapacity(path string, n int) error {
	switch {
	case n < 0:
		return invalid(path, "invalid capacity: %s %d is negative", path, n)
	case n > MaxCapacity:
		return invalid(path, "invalid capacity: %s %d is above %d, the most nodes a group may have", path, n, MaxCapacity)
	}
	return nil
}

func checkInstanceType(path, t string) error {
	switch {
	case t == "":
		return missing(path)
	case !typeRE.MatchString(t):
		return invalid(path, "invalid instance type %q: expected family.size, e.g. r5.large", t)
	}
	return nil
}

// checkInstanceTypes checks a group's types: at least one, each valid,
// none twice, no more than a mixed instances policy takes, and all of one
// architecture as their families tell it (one image serves them all; when
// deploying, EC2 is asked too).
func checkInstanceTypes(path string, types InstanceTypes) error {
	if len(types) == 0 {
		return missing(path)
	}
	if len(types) > MaxInstanceTypes {
		return invalid(path, "invalid instance types: %d given, at most %d allowed", len(types), MaxInstanceTypes)
	}
	seen := map[string]bool{}
	for _, t := range types {
		if t == "" {
			return invalid(path, "invalid instance types %q: empty entry", types.String())
		}
		if err := checkInstanceType(path, t); err != nil {
			return err
		}
		if seen[t] {
			return invalid(path, "instance type %s given twice", t)
		}
		seen[t] = true
	}
	return MixedArchitectures(path, types, Architecture)
}

// MixedArchitectures refuses instance types that do not share one
// architecture, naming the odd ones out; arch says a type's architecture
// (the family's, offline; EC2's, when deploying).
func MixedArchitectures(path string, types []string, arch func(string) string) error {
	odd, common := OddArchitecture(types, arch)
	if len(odd) == 0 {
		return nil
	}
	var what []string
	for _, t := range odd {
		what = append(what, t+" is "+arch(t))
	}
	return invalid(path, "instance types of more than one architecture: %s, the others %s (the nodes of a group share one image)", strings.Join(what, ", "), common)
}

func checkSpotAllocation(path, s string) error {
	if s != "" && !slices.Contains(SpotAllocations(), s) {
		return invalid(path, "invalid spot allocation strategy %q: expected %s", s, strings.Join(SpotAllocations(), ", "))
	}
	return nil
}

// checkImage accepts "" (the default), an AMI id or an SSM parameter path.
// CheckImage checks an image setting given outside a spec (upgrade's
// --image-id): an AMI id or an SSM parameter path.
func CheckImage(path, id string) error { return checkImage(path, id) }

func checkImage(path, id string) error {
	if id == "" || amiRE.MatchString(id) || ssmPathRE.MatchString(id) {
		return nil
	}
	return invalid(path, "invalid image id %q: expected an AMI id (ami- and 8 or 17 hex digits) or an SSM parameter path (/...)", id)
}

func checkKeyName(path, name string) error {
	if name == "" {
		return nil
	}
	// Key pair names only reach a parameter, but quotes, backslashes, $
	// and backticks are refused anyway: no name needs them.
	printable := !strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r > 0x7e || strings.ContainsRune("\"'`$\\", r) })
	if len(name) > MaxKeyName || !printable {
		return invalid(path, "invalid key name %q: up to %d printable characters, no quotes, backslashes, $ or backticks", name, MaxKeyName)
	}
	return nil
}

// checkSSHCIDR accepts IPv4 CIDRs only: the templates open SSH with
// CidrIp (an IPv6 range needs CidrIpv6 and a dual-stack subnet, which
// clusterctl does not set up). The address must be the network's:
// 10.0.0.1/8 probably hides a typo.
func checkSSHCIDR(path, s string) error {
	if s == "" {
		return nil
	}
	p, err := netip.ParsePrefix(s)
	if err == nil && p.Bits() == 0 {
		return nil // anywhere, checked by checkSSHAnywhere (also ::/0)
	}
	if err != nil || !p.Addr().Is4() {
		return invalid(path, "invalid CIDR %q: expected an IPv4 address/prefix, e.g. 203.0.113.0/24", s)
	}
	if p.Masked() != p {
		return invalid(path, "invalid CIDR %q: host bits set, did you mean %s?", s, p.Masked())
	}
	return nil
}

// checkSSHAnywhere refuses SSH from anywhere (a /0, IPv4 or IPv6) unless
// it is allowed explicitly; an allowed ::/0 is still not IPv4.
func checkSSHAnywhere(path, s string, allowed bool) error {
	p, err := netip.ParsePrefix(s)
	switch {
	case err != nil || p.Bits() != 0:
		return nil
	case !allowed:
		return invalid(path, "SSH from anywhere (%s) is refused: give the addresses you connect from, or allow it explicitly with --allow-ssh-from-anywhere (allowSshFromAnywhere: true in a cluster file)", s)
	case !p.Addr().Is4():
		return invalid(path, "invalid CIDR %q: expected an IPv4 address/prefix, e.g. 203.0.113.0/24", s)
	case p.Masked() != p:
		return invalid(path, "invalid CIDR %q: host bits set, did you mean %s?", s, p.Masked())
	}
	return nil
}

func checkVpc(path, id string) error {
	if id != "" && !vpcRE.MatchString(id) {
		return invalid(path, "invalid VPC id %q: expected vpc-...", id)
	}
	return nil
}

func checkSubnets(path string, ids []string) error {
	seen := map[string]bool{}
	for _, id := range ids {
		if !subnetRE.MatchString(id) {
			return invalid(path, "invalid subnet id %q: expected subnet-...", id)
		}
		if seen[id] {
			return invalid(path, "subnet %s given twice", id)
		}
		seen[id] = true
	}
	return nil
}

func checkVolume(path string, gib int) error {
	if gib < MinVolumeSize || gib > MaxVolumeSize {
		return invalid(path, "invalid volume size %d: expected %d to %d GiB", gib, MinVolumeSize, MaxVolumeSize)
	}
	return nil
}

// MaxManagers bounds the managers: more only slow the swarm's consensus
// down (every change is written to a majority of them).
const MaxManagers = 5

// checkManagers accepts an odd number of managers, 1 to MaxManagers. A
// swarm keeps working while a majority of its managers is: an even number
// tolerates no more failures than the odd number below it and needs a
// larger majority.
func checkManagers(path string, n int) error {
	switch {
	case n < 1:
		return invalid(path, "invalid number of managers %d: at least 1", n)
	case n > MaxManagers:
		return invalid(path, "invalid number of managers %d: at most %d (every change waits for a majority of them: more slow the swarm down)", n, MaxManagers)
	case n%2 == 0:
		return invalid(path, "invalid number of managers %d: even, and %d managers tolerate no more failures than %d (a majority of %d is %d): use %d or %d", n, n, n-1, n, n/2+1, n-1, n+1)
	}
	return nil
}

func checkLabels(path string, l Labels) error {
	if len(l) > MaxLabels {
		return invalid(path, "invalid labels: %d given, at most %d allowed", len(l), MaxLabels)
	}
	for _, k := range l.Keys() {
		v := l[k]
		switch {
		case !labelRE.MatchString(k):
			return invalid(path, "invalid label key %q: only letters, digits, '.', '_', '-' and '/' are allowed", k)
		case !labelRE.MatchString(v):
			return invalid(path, "invalid label value %q for key %q: only letters, digits, '.', '_', '-' and '/' are allowed", v, k)
		case len(k) > MaxLabelChars || len(v) > MaxLabelChars:
			return invalid(path, "invalid label %s=%s: keys and values are limited to %d characters", k, v, MaxLabelChars)
		case strings.HasPrefix(k, names.EngineLabelReserved):
			return invalid(path, "invalid label key %q: the prefix %s is reserved for the labels clusterctl sets", k, names.EngineLabelReserved)
		}
	}
	if n := len(l.String()); n > MaxLabelsChars {
		return invalid(path, "invalid labels: %d characters in all (k=v,k=v), at most %d allowed", n, MaxLabelsChars)
	}
	return nil
}
