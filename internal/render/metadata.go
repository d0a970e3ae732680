package render

import (
	"encoding/json"
	"fmt"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// A deployed stack must read back into the spec it was rendered from, so
// that an update can start from what is deployed and change only what it
// is told to. Parameters carry most settings; the rest is intent that no
// parameter can say — "the default image" rather than the AMI it resolves
// to, "the core's subnets" rather than their ids, a rolling-update setting
// left to its default — and is recorded in the template's metadata, under
// names.MetadataKey. (Stack tags cannot carry it: not every CloudFormation
// implementation updates them when a change set runs.)

// metadata is the template's Metadata.clusterctl.
type metadata struct {
	// Intent holds the settings no parameter carries (spec.Intent).
	Intent map[string]any `json:"intent"`
	// Logs is, in a group's template, where its node configuration sends
	// the containers' output (nil: nowhere, the engine keeps it).
	Logs *NodeLogs `json:"logs,omitempty"`
	// EngineVersion is, in a group's template, the Docker Engine version
	// its node configuration pins (the core's when it was rendered; ""
	// before the setting: the distribution's).
	EngineVersion string `json:"engineVersion,omitempty"`
}

// NodeLogs is where a group's nodes send their containers' output: the
// core's log group and log driver when the node configuration was
// rendered.
type NodeLogs struct {
	Group  string `json:"group"`
	Driver string `json:"driver"`
}

// String says it for a plan: "awslogs to /clusterctl/prod", or "(none)".
func (l *NodeLogs) String() string {
	if l == nil || l.Group == "" {
		return "(none)"
	}
	return l.Driver + " to " + l.Group
}

// ReadNodeLogs reads, from a deployed group's template, where its nodes
// send their containers' output (nil: nowhere, as before clusterctl had
// log groups).
func ReadNodeLogs(template []byte) *NodeLogs {
	var t struct {
		Metadata map[string]struct {
			Logs *NodeLogs `json:"logs"`
		}
	}
	if json.Unmarshal(template, &t) != nil {
		return nil
	}
	return t.Metadata[names.MetadataKey].Logs
}

// ReadEngineVersion reads, from a deployed group's template, the Docker
// Engine version its node configuration pins ("" when it pins none).
func ReadEngineVersion(template []byte) string {
	var t struct {
		Metadata map[string]struct {
			EngineVersion string `json:"engineVersion"`
		}
	}
	if json.Unmarshal(template, &t) != nil {
		return ""
	}
	return t.Metadata[names.MetadataKey].EngineVersion
}

func intentOf(v any) (metadata, error) {
	in, err := spec.Intent(v)
	if err != nil {
		return metadata{}, err
	}
	return metadata{Intent: in}, nil
}

// Deployed is what CloudFormation holds of a stack, from which its spec
// is read back.
type Deployed struct {
	Template   []byte
	Parameters map[string]string
	Tags       map[string]string
}

// ReadCore reads a deployed core stack back into its spec.
func ReadCore(d Deployed) (spec.Core, error) {
	var c spec.Core
	err := read(&c, d, func(json.RawMessage) error {
		// A core rendered before its intent was recorded: only the image
		// is intent, and an SSM path other than the type's default was given.
		c.ImageID = d.Parameters[names.ParamImageID]
		if p := d.Parameters[names.ParamImageParameter]; c.ImageID == "" && p != DefaultImageParameter(d.Parameters[names.ParamInstanceType]) {
			c.ImageID = p
		}
		return nil
	})
	if err != nil {
		return c, fmt.Errorf("reading the core's settings: %w", err)
	}
	return c, nil
}

// ReadGroup reads the deployed stack of group back into its spec.
func ReadGroup(group string, d Deployed) (spec.Group, error) {
	g := spec.Group{Name: group}
	if err := read(&g, d, func(raw json.RawMessage) error { return legacyGroupIntent(&g, raw, d) }); err != nil {
		return g, fmt.Errorf("reading the settings of group %s: %w", group, err)
	}
	return g, nil
}

// read fills v, a *spec.Core or *spec.Group: the intent recorded in the
// template's metadata (legacy reads what an earlier clusterctl recorded,
// nil when nothing), then the parameters, then the defaults.
func read(v interface{ Default() }, d Deployed, legacy func(raw json.RawMessage) error) error {
	raw, err := recorded(d.Template)
	if err != nil {
		return fmt.Errorf("template: %w", err)
	}
	if raw.Intent != nil {
		err = spec.SetIntent(v, raw.Intent)
	} else {
		err = legacy(raw.Legacy)
	}
	if err != nil {
		return err
	}
	if err := spec.SetParameters(v, declared(d)); err != nil {
		return err
	}
	v.Default()
	return nil
}

// declared returns the stack's parameters that its template declares: a
// parameter an update dropped (a group's spot mix, when spot is turned
// off) says nothing of the stack, though some implementations keep
// reporting it. A template that cannot be read keeps them all.
func declared(d Deployed) map[string]string {
	var t struct{ Parameters map[string]json.RawMessage }
	if err := json.Unmarshal(d.Template, &t); err != nil || t.Parameters == nil {
		return d.Parameters
	}
	out := map[string]string{}
	for k, v := range d.Parameters {
		if _, ok := t.Parameters[k]; ok {
			out[k] = v
		}
	}
	return out
}

// recordedMetadata is Metadata.clusterctl as read: the intent, or the
// whole object of a template rendered before the intent was recorded.
type recordedMetadata struct {
	Intent json.RawMessage
	Legacy json.RawMessage
}

func recorded(body []byte) (recordedMetadata, error) {
	var t struct{ Metadata map[string]json.RawMessage }
	if err := json.Unmarshal(body, &t); err != nil {
		return recordedMetadata{}, err
	}
	raw, ok := t.Metadata[names.MetadataKey]
	if !ok {
		return recordedMetadata{}, nil
	}
	var m struct {
		Intent json.RawMessage `json:"intent"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return recordedMetadata{}, fmt.Errorf("metadata %s: %w", names.MetadataKey, err)
	}
	if m.Intent != nil {
		return recordedMetadata{Intent: m.Intent}, nil
	}
	return recordedMetadata{Legacy: raw}, nil
}

// legacyGroupIntent reads the intent of a group rendered by an earlier
// clusterctl: labels, image and subnets as the stack tags spell them, and
// rolling-update settings where 0 meant the default; from the template's
// metadata, or from the stack tags when the template has none.
func legacyGroupIntent(g *spec.Group, raw json.RawMessage, d Deployed) error {
	var old struct {
		Labels, Image, Subnets string
		MaxBatch, MinInService int
	}
	if raw != nil {
		if err := json.Unmarshal(raw, &old); err != nil {
			return fmt.Errorf("reading group template metadata: %w", err)
		}
	} else {
		old.Labels, old.Image, old.Subnets = d.Tags[names.TagLabels], d.Tags[names.TagImage], d.Tags[names.TagSubnets]
	}
	if old.Labels != "" && old.Labels != names.NoLabels {
		l, err := spec.ParseLabels(old.Labels)
		if err != nil {
			return fmt.Errorf("reading the group's labels: %w", err)
		}
		g.Labels = l
	}
	if old.Image != names.ImageDefault {
		g.ImageID = old.Image
	}
	if old.Subnets == names.SubnetsOwn {
		g.SubnetIDs = spec.SplitList(d.Parameters[names.ParamSubnetIDs])
	}
	if old.MaxBatch > 0 {
		g.RollingUpdate.MaxBatch = &old.MaxBatch
	}
	if old.MinInService > 0 {
		g.RollingUpdate.MinInService = &old.MinInService
	}
	return nil
}
