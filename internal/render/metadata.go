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
	raw, err := recorded(d.Template)
	if err != nil {
		return c, fmt.Errorf("reading core template: %w", err)
	}
	if raw.Intent != nil {
		if err := spec.SetIntent(&c, raw.Intent); err != nil {
			return c, fmt.Errorf("reading core template: %w", err)
		}
	} else {
		// A core rendered before its intent was recorded: only the image
		// is intent, and an SSM path other than the type's default was given.
		image := d.Parameters[names.ParamImageID]
		if p := d.Parameters[names.ParamImageParameter]; image == "" && p != DefaultImageParameter(d.Parameters[names.ParamInstanceType]) {
			image = p
		}
		c.ImageID = image
	}
	if err := spec.SetParameters(&c, d.Parameters); err != nil {
		return c, fmt.Errorf("reading core parameters: %w", err)
	}
	c.Default()
	return c, nil
}

// ReadGroup reads the deployed stack of group back into its spec.
func ReadGroup(group string, d Deployed) (spec.Group, error) {
	g := spec.Group{Name: group}
	raw, err := recorded(d.Template)
	if err != nil {
		return g, fmt.Errorf("reading group template: %w", err)
	}
	if raw.Intent != nil {
		if err := spec.SetIntent(&g, raw.Intent); err != nil {
			return g, fmt.Errorf("reading group template: %w", err)
		}
	} else if err := legacyGroupIntent(&g, raw.Legacy, d); err != nil {
		return g, err
	}
	if err := spec.SetParameters(&g, d.Parameters); err != nil {
		return g, fmt.Errorf("reading group parameters: %w", err)
	}
	g.Default()
	return g, nil
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
